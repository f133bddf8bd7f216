// Tests of completion.h: the generated bash script is loaded into a real bash, which is asked
// to complete command lines the way readline would (COMP_LINE/COMP_POINT); the zsh script is
// checked by zsh's parser and its shared helpers are called from a real zsh.
#include "orchestrator/cli/completion.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace vanguard::cli {
namespace {

using ::testing::HasSubstr;
using ::vanguard::testing::RunBinary;
using ::vanguard::testing::RunResult;

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/", getpid(), "_", name);
  std::ofstream(path) << text;
  return path;
}

// What bash completes for `line` (the cursor at its end), sorted and space-separated.
class BashCompletionTest : public ::testing::Test {
 protected:
  void SetUp() override { script_ = WriteTemp("vanguard.bash", BashCompletion(Commands())); }
  void TearDown() override { std::remove(script_.c_str()); }

  std::string Complete(const std::string& line) {
    const std::string program = absl::StrCat(
        "source \"$0\"\n"
        "COMP_LINE=\"$1\"; COMP_POINT=${#COMP_LINE}\n"
        "COMP_WORDBREAKS=$' \\t\\n\"\\'><=;|&(:'\n"
        "_vanguard\n"
        "printf '%s\\n' \"${COMPREPLY[@]}\" | LC_ALL=C sort | paste -sd ' '\n");
    absl::StatusOr<RunResult> run = RunBinary("/bin/bash", {"-c", program, script_, line});
    EXPECT_TRUE(run.ok()) << run.status();
    if (!run.ok()) return "";
    EXPECT_EQ(run->exit_code, 0) << run->err;
    EXPECT_EQ(run->err, "");
    std::string out = run->out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  std::string script_;
};

TEST_F(BashCompletionTest, CompletesCommandWords) {
  EXPECT_EQ(Complete("vanguard sub"), "submit");
  EXPECT_EQ(Complete("vanguard models "), "deprecate get list register");
  EXPECT_EQ(Complete("vanguard tokens c"), "create");
  EXPECT_EQ(Complete("vanguard --output json mod"), "models");  // flags before the command
  EXPECT_EQ(Complete("vanguard help mod"), "models");
  EXPECT_EQ(Complete("vanguard completion "), "bash zsh");
}

TEST_F(BashCompletionTest, CompletesTheCommandsFlagsAndTheGlobalOnes) {
  EXPECT_EQ(Complete("vanguard submit --strat"), "--strategy=");
  EXPECT_EQ(Complete("vanguard submit --wa"), "--wait --watch");
  EXPECT_EQ(Complete("vanguard models get bert --ver"), "--version=");
  EXPECT_EQ(Complete("vanguard get 7 --o"), "--orchestrator= --output=");
  EXPECT_EQ(Complete("vanguard get 7 --w"), "");  // get has no --wait
}

TEST_F(BashCompletionTest, CompletesFlagValues) {
  EXPECT_EQ(Complete("vanguard submit --strategy=a"), "adaptive");
  EXPECT_EQ(Complete("vanguard submit --model m --strategy "),
            "adaptive binary ladder replica_loss sweep version_transition");
  EXPECT_EQ(Complete("vanguard list --output="), "csv json table yaml");
  EXPECT_EQ(Complete("vanguard tokens create --role=w"), "worker");
  // A valued flag's separate value is not taken for a command word.
  EXPECT_EQ(Complete("vanguard --orchestrator host:1 sub"), "submit");
}

TEST_F(BashCompletionTest, CompletesFileNamesForFileFlags) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/completion_", getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/spec.json") << "{}";
  EXPECT_EQ(Complete(absl::StrCat("vanguard submit --spec_file=", dir, "/sp")),
            absl::StrCat(dir, "/spec.json"));
  EXPECT_EQ(Complete(absl::StrCat("vanguard report 12 -o ", dir, "/sp")),
            absl::StrCat(dir, "/spec.json"));
  EXPECT_EQ(Complete("vanguard report 12 -"),
            "--help --orchestrator= --output= --timeout= "
            "--tls_ca= --tls_client_cert= --tls_client_key= --window_step= -o");
  std::filesystem::remove_all(dir);
}

TEST(ZshCompletionTest, ParsesAndItsHelpersAnswerFromTheTable) {
  if (!std::filesystem::exists("/usr/bin/zsh") && !std::filesystem::exists("/bin/zsh")) {
    GTEST_SKIP() << "zsh is not installed";
  }
  const std::string script = WriteTemp("_vanguard", ZshCompletion(Commands()));
  absl::StatusOr<RunResult> syntax = RunBinary("/usr/bin/zsh", {"-n", script});
  ASSERT_TRUE(syntax.ok()) << syntax.status();
  EXPECT_EQ(syntax->exit_code, 0) << syntax->err;

  const std::string program =
      "autoload -U compinit && compinit -u -D\n"
      "source \"$1\"\n"
      "_vanguard_command models register --x\n"
      "_vanguard_words models\n"
      "_vanguard_values submit strategy\n"
      "_vanguard_valued version && echo valued\n"
      "_vanguard_valued wait || echo bool\n"
      "print -r -- ${_comps[vanguard]}\n";
  absl::StatusOr<RunResult> run = RunBinary("/usr/bin/zsh", {"-f", "-c", program, "zsh", script});
  std::remove(script.c_str());
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 0) << run->err;
  EXPECT_EQ(run->out,
            "models register\nregister get list deprecate\nsweep binary adaptive ladder "
            "replica_loss version_transition\n"
            "valued\nbool\n_vanguard\n");
}

TEST(ZshCompletionTest, DescribesCommandsAndSpecifiesEveryFlag) {
  const std::string script = ZshCompletion(Commands());
  EXPECT_THAT(script, HasSubstr("'submit:Queue a capacity test of a model version.'"));
  EXPECT_THAT(script, HasSubstr("'models:register, get, list, deprecate'"));
  EXPECT_THAT(script, HasSubstr("'--strategy=[sweep (the default"));
  EXPECT_THAT(script, HasSubstr("\\:PORT"));  // colons in messages are escaped
  EXPECT_THAT(script, HasSubstr("(table json"));
  for (const CommandSpec& spec : Commands()) {
    for (const FlagSpec& flag : spec.flags) {
      EXPECT_THAT(script, HasSubstr(absl::StrCat("'", FlagDisplayName(flag.name)))) << spec.Name();
    }
  }
}

}  // namespace
}  // namespace vanguard::cli
