// Tests of formats.h: CSV quoting and numbers, and the YAML emitter's quoting and layout. The
// emitted text is also read back by Python's csv module and by PyYAML (a YAML 1.1 reader,
// the stricter of the two for plain scalars) and compared with what was written.
#include "orchestrator/cli/formats.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace vanguard::cli {
namespace {

using ::vanguard::testing::RunBinary;
using ::vanguard::testing::RunResult;

// Strings no YAML reader may see plain: bools and nulls of YAML 1.1 and 1.2, numbers, dates,
// indicators, comments, quotes, escapes, edges, non-ASCII.
const std::vector<std::string>& QuotedStrings() {
  // clang-format off
  static const auto* const kQuoted = new std::vector<std::string>{
      "", "true", "False", "yes", "NO", "on", "Off", "y", "N", "null", "~",
      "7", "-5", "+1", "1e3", ".5", ".inf", "0x1F", "1_000", "12:30",
      "2024-05-01", "2024-05-01T12:00:00Z",
      "a: b", "a #b", "#x", "- item", "? q", "[x]", "{x}", "&anchor", "*alias", "!tag", "|",
      ">", "%YAML", "@x", "`x", "'x'", "\"x\"", " lead", "trail ", "<<", "a:b", "caf\xC3\xA9",
      "say \"hi\"\\", "two\nlines", "tab\there", "ls\xE2\x80\xA8ps"};
  // clang-format on
  return *kQuoted;
}

TEST(CsvTest, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(CsvField("plain text"), "plain text");
  EXPECT_EQ(CsvField(""), "");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField("cr\rhere"), "\"cr\rhere\"");
  EXPECT_EQ(CsvField(" padded"), "\" padded\"");
  EXPECT_EQ(CsvField("padded "), "\"padded \"");
  EXPECT_EQ(CsvLine({"7", "p99 over SLO, 2 windows", ""}), "7,\"p99 over SLO, 2 windows\",\n");
}

TEST(CsvTest, NumbersAreShortestRoundTrip) {
  EXPECT_EQ(CsvNumber(0.1), "0.1");
  EXPECT_EQ(CsvNumber(250), "250");
  EXPECT_EQ(CsvNumber(99.5), "99.5");
  EXPECT_EQ(CsvNumber(-3.25), "-3.25");
  EXPECT_EQ(CsvNumber(1e20), "1e+20");
  EXPECT_EQ(CsvNumber(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(CsvNumber(-std::numeric_limits<double>::infinity()), "-Infinity");
}

TEST(YamlStringTest, PlainOnlyWhenNothingElseCanReadIt) {
  for (const char* plain : {"resnet50", "TEST_STATE_SUCCEEDED", "within SLO (p99 12ms)",
                            "http/foo-bar.baz", "_x", "/traces/a.vtrace", "NaN", "a, b + c"}) {
    EXPECT_EQ(YamlString(plain), plain);
  }
  for (const std::string& text : QuotedStrings()) {
    EXPECT_EQ(YamlString(text).front(), '"') << text;
  }
}

TEST(YamlStringTest, EscapesWhatADoubleQuotedScalarCannotHold) {
  EXPECT_EQ(YamlString("say \"hi\"\\"), "\"say \\\"hi\\\"\\\\\"");
  EXPECT_EQ(YamlString("two\nlines\r\ttab"), "\"two\\nlines\\r\\ttab\"");
  EXPECT_EQ(YamlString(std::string("nul\0bel\x07"
                                   "del\x7f",
                                   12)),
            "\"nul\\x00bel\\x07del\\x7F\"");
  EXPECT_EQ(YamlString("nel\xC2\x85"
                       "c1\xC2\x9B"),
            "\"nel\\x85c1\\x9B\"");
  EXPECT_EQ(YamlString("ls\xE2\x80\xA8ps\xE2\x80\xA9"), "\"ls\\Lps\\P\"");
  EXPECT_EQ(YamlString("\xEF\xBB\xBF"
                       "bom"),
            "\"\\uFEFFbom\"");
  EXPECT_EQ(YamlString("caf\xC3\xA9"), "\"caf\xC3\xA9\"");  // other UTF-8 as is, quoted
}

TEST(JsonToYamlTest, BlockLayoutInTheObjectsOrder) {
  const nlohmann::ordered_json json = nlohmann::ordered_json::parse(R"({
    "id": "7", "state": "TEST_STATE_SUCCEEDED", "ok": true, "none": null, "qps": 99.5,
    "steps": [{"index": 0, "latency": {"p99_ms": 12.5}}, {"index": 1, "labels": {}}],
    "rates": [100, 200], "nested": [[1, 2], []], "empty": [], "obj": {}})");
  EXPECT_EQ(JsonToYaml(json),
            "id: \"7\"\n"
            "state: TEST_STATE_SUCCEEDED\n"
            "ok: true\n"
            "none: null\n"
            "qps: 99.5\n"
            "steps:\n"
            "  - index: 0\n"
            "    latency:\n"
            "      p99_ms: 12.5\n"
            "  - index: 1\n"
            "    labels: {}\n"
            "rates:\n"
            "  - 100\n"
            "  - 200\n"
            "nested:\n"
            "  - - 1\n"
            "    - 2\n"
            "  - []\n"
            "empty: []\n"
            "obj: {}\n");
  EXPECT_EQ(JsonToYaml(nlohmann::ordered_json::parse("\"yes\"")), "\"yes\"\n");
  EXPECT_EQ(JsonToYaml(nlohmann::ordered_json::parse("[]")), "[]\n");
}

TEST(JsonToYamlTest, KeysAreQuotedLikeValues) {
  const nlohmann::ordered_json json =
      nlohmann::ordered_json::parse(R"({"team": "a", "on": 1, "a: b": 2, "": 3})");
  EXPECT_EQ(JsonToYaml(json), "team: a\n\"on\": 1\n\"a: b\": 2\n\"\": 3\n");
}

// Text in a file for a Python reader; removed by the caller.
std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/", getpid(), "_", name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

bool HavePython(const std::string& module) {
  if (!std::filesystem::exists("/usr/bin/python3")) return false;
  absl::StatusOr<RunResult> run =
      RunBinary("/usr/bin/python3", {"-c", absl::StrCat("import ", module)});
  return run.ok() && run->exit_code == 0;
}

// Strings that exercise every quoting rule, as a JSON object of name -> string plus nesting.
// Strings that exercise every quoting rule, as values and as keys, plus nesting.
nlohmann::ordered_json TrickyObject() {
  nlohmann::ordered_json json;
  int n = 0;
  for (const std::string& text : QuotedStrings()) json[absl::StrCat("k", n++)] = text;
  for (const std::string& text : QuotedStrings()) json[text] = n++;
  json["plain"] = "plain words (ok), a-b";
  json["list"] = {"yes", {{"on", "off"}}, nlohmann::ordered_json::array({"1", 2.5})};
  return json;
}

TEST(JsonToYamlTest, PyYamlReadsBackTheSameObject) {
  if (!HavePython("yaml")) GTEST_SKIP() << "python3 with PyYAML is not installed";
  const nlohmann::ordered_json json = TrickyObject();
  const std::string yaml_path = WriteTemp("tricky.yaml", JsonToYaml(json));
  const std::string json_path = WriteTemp("tricky.json", json.dump());
  absl::StatusOr<RunResult> run =
      RunBinary("/usr/bin/python3", {"-c",
                                     "import json, sys, yaml\n"
                                     "a = yaml.safe_load(open(sys.argv[1], encoding='utf-8'))\n"
                                     "b = json.load(open(sys.argv[2], encoding='utf-8'))\n"
                                     "print('same' if a == b else repr(a) + ' != ' + repr(b))\n",
                                     yaml_path, json_path});
  std::remove(yaml_path.c_str());
  std::remove(json_path.c_str());
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->out, "same\n") << run->err;
}

TEST(CsvTest, PythonsCsvReaderReadsBackTheFields) {
  if (!HavePython("csv")) GTEST_SKIP() << "python3 is not installed";
  const std::vector<std::string> fields = {"a,b", "say \"hi\"", "two\nlines", " lead", "", "x"};
  const std::string path = WriteTemp("fields.csv", CsvLine(fields) + CsvLine({"1", "2"}));
  absl::StatusOr<RunResult> run = RunBinary(
      "/usr/bin/python3", {"-c",
                           "import csv, json, sys\n"
                           "print(json.dumps(list(csv.reader(open(sys.argv[1], newline='')))))\n",
                           path});
  std::remove(path.c_str());
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(nlohmann::json::parse(run->out),
            nlohmann::json::parse(
                R"([["a,b", "say \"hi\"", "two\nlines", " lead", "", "x"], ["1", "2"]])"))
      << run->err;
}

}  // namespace
}  // namespace vanguard::cli
