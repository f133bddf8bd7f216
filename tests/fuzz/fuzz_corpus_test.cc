// Runs every checked-in fuzz input (tests/fuzz/corpus/<harness>/: handwritten seeds and the
// reproducers of crashes the fuzzers found) through its harness, in every build, so a fixed
// crash stays fixed without clang or libFuzzer. A harness aborts on a broken contract, which
// fails this test with the harness's message; the file being fed is printed before it runs.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/fuzz/fuzz_harnesses.h"

namespace vanguard::fuzz {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpusRoot = VANGUARD_FUZZ_CORPUS_DIR;

std::vector<fs::path> FilesIn(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename().string()[0] != '.') files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<uint8_t> Bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

class FuzzCorpusTest : public ::testing::TestWithParam<FuzzHarness> {};

TEST_P(FuzzCorpusTest, EveryCheckedInInputRunsClean) {
  const fs::path dir = kCorpusRoot / std::string(GetParam().name);
  ASSERT_TRUE(fs::is_directory(dir)) << dir << ": each harness needs seeds";
  const std::vector<fs::path> files = FilesIn(dir);
  EXPECT_FALSE(files.empty()) << dir;
  for (const fs::path& file : files) {
    std::fprintf(stderr, "%s <- %s\n", std::string(GetParam().name).c_str(), file.c_str());
    const std::vector<uint8_t> bytes = Bytes(file);
    // An exact-size copy, as libFuzzer passes it (a sanitizer build sees any over-read).
    std::vector<uint8_t> exact(bytes.begin(), bytes.end());
    EXPECT_EQ(GetParam().run(exact.data(), exact.size()), 0) << file;
  }
}

INSTANTIATE_TEST_SUITE_P(Harnesses, FuzzCorpusTest, ::testing::ValuesIn(kFuzzHarnesses),
                         [](const ::testing::TestParamInfo<FuzzHarness>& info) {
                           return std::string(info.param.name);
                         });

TEST(FuzzCorpusLayoutTest, EveryCorpusFolderBelongsToAHarness) {
  for (const fs::directory_entry& e : fs::directory_iterator(kCorpusRoot)) {
    if (!e.is_directory()) continue;
    EXPECT_NE(FindFuzzHarness(e.path().filename().string()), nullptr)
        << e.path() << " has no harness in kFuzzHarnesses";
  }
}

}  // namespace
}  // namespace vanguard::fuzz
