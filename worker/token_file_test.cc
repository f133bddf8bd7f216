#include "worker/token_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace vanguard::worker {
namespace {

class TokenFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    dir_ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/token_file_testXXXXXX";
    ASSERT_NE(mkdtemp(dir_.data()), nullptr);
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::string Write(const std::string& name, const std::string& content) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }

  std::string dir_;
};

TEST_F(TokenFileTest, StripsTheTrailingNewline) {
  auto token = ReadTokenFile(Write("token", "s3cret-token\n"));
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "s3cret-token");
}

TEST_F(TokenFileTest, KeepsAFileWithoutNewlineAsIs) {
  auto token = ReadTokenFile(Write("token", "abc"));
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "abc");
}

TEST_F(TokenFileTest, StripsTrailingCarriageReturnAndSpaces) {
  auto token = ReadTokenFile(Write("token", "abc \r\n"));
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "abc");
}

TEST_F(TokenFileTest, MissingFileIsNotFoundNamingThePath) {
  std::string path = dir_ + "/absent";
  auto token = ReadTokenFile(path);
  EXPECT_EQ(token.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(token.status().message().find(path), std::string::npos) << token.status();
}

TEST_F(TokenFileTest, EmptyOrBlankFileIsRefused) {
  for (const char* content : {"", "\n", " \t\n"}) {
    std::string path = Write("token", content);
    auto token = ReadTokenFile(path);
    EXPECT_EQ(token.status().code(), absl::StatusCode::kFailedPrecondition) << content;
    EXPECT_NE(token.status().message().find(path), std::string::npos) << token.status();
  }
}

TEST_F(TokenFileTest, DirectoryIsRefused) {
  auto token = ReadTokenFile(dir_);
  EXPECT_EQ(token.status().code(), absl::StatusCode::kFailedPrecondition) << token.status();
}

TEST_F(TokenFileTest, OversizedFileIsRefused) {
  auto token = ReadTokenFile(Write("log", std::string(kMaxTokenFileBytes + 1, 'x')));
  EXPECT_EQ(token.status().code(), absl::StatusCode::kFailedPrecondition) << token.status();
}

TEST_F(TokenFileTest, UnreadableFileIsPermissionDenied) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads any file";
  std::string path = Write("token", "abc\n");
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  auto token = ReadTokenFile(path);
  EXPECT_EQ(token.status().code(), absl::StatusCode::kPermissionDenied) << token.status();
  EXPECT_NE(token.status().message().find(path), std::string::npos) << token.status();
}

}  // namespace
}  // namespace vanguard::worker
