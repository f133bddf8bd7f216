// Tests of command_table.h: the invariants every entry must keep (so that identification,
// flag splitting, help and completion, all derived from the table, stay unambiguous), and
// that the help texts show every command and flag the table holds.
#include "orchestrator/cli/command_table.h"

#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/cli/usage.h"

namespace vanguard::cli {
namespace {

using ::testing::HasSubstr;

bool IsPrefix(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

TEST(CommandTableTest, EveryEntryIsComplete) {
  for (const CommandSpec& spec : Commands()) {
    SCOPED_TRACE(spec.Name());
    EXPECT_FALSE(spec.words.empty());
    EXPECT_FALSE(spec.summary.empty());
    EXPECT_TRUE(spec.parse != nullptr);
    EXPECT_NE(spec.run != nullptr, spec.run_offline != nullptr) << "exactly one runner";
    EXPECT_TRUE(spec.Prints(OutputFormat::kTable));
  }
}

TEST(CommandTableTest, NoCommandsWordsArePrefixOfAnothers) {
  const std::vector<CommandSpec>& commands = Commands();
  for (size_t i = 0; i < commands.size(); ++i) {
    for (size_t j = 0; j < commands.size(); ++j) {
      if (i == j) continue;
      EXPECT_FALSE(IsPrefix(commands[i].words, commands[j].words))
          << commands[i].Name() << " shadows " << commands[j].Name();
    }
  }
}

TEST(CommandTableTest, FlagsHaveHelpAndOneKindAcrossCommands) {
  std::map<std::string, bool> is_bool;
  std::set<std::string> global;
  for (const FlagSpec& flag : GlobalFlags()) {
    global.insert(flag.name);
    is_bool[flag.name] = flag.is_bool();
  }
  for (const CommandSpec& spec : Commands()) {
    std::set<std::string> seen;
    for (const FlagSpec& flag : spec.flags) {
      SCOPED_TRACE(absl::StrCat(spec.Name(), " ", flag.name));
      EXPECT_FALSE(flag.help.empty());
      EXPECT_TRUE(seen.insert(flag.name).second) << "listed twice";
      EXPECT_FALSE(global.contains(flag.name)) << "shadows a global flag";
      EXPECT_NE(flag.name, "help");
      EXPECT_NE(flag.name, "h");
      auto [it, inserted] = is_bool.emplace(flag.name, flag.is_bool());
      EXPECT_EQ(it->second, flag.is_bool()) << "bool in one command, valued in another";
      EXPECT_TRUE(flag.choices.empty() || !flag.is_bool());
    }
  }
  EXPECT_EQ(FlagKindOf("wait"), FlagKind::kBool);
  EXPECT_EQ(FlagKindOf("model_version"), FlagKind::kValued);
  EXPECT_EQ(FlagKindOf("output"), FlagKind::kValued);
  EXPECT_EQ(FlagKindOf("modle"), FlagKind::kUnknown);
}

TEST(CommandTableTest, UsageShowsEveryCommandAndEveryFlag) {
  const std::string usage = UsageText();
  for (const CommandSpec& spec : Commands()) {
    EXPECT_THAT(usage, HasSubstr(absl::StrCat("  ", spec.Name())));
    for (const FlagSpec& flag : spec.flags) {
      EXPECT_THAT(usage, HasSubstr(FlagDisplayName(flag.name))) << spec.Name();
    }
  }
  for (const FlagSpec& flag : GlobalFlags()) {
    EXPECT_THAT(usage, HasSubstr(FlagDisplayName(flag.name)));
  }
  EXPECT_THAT(usage, HasSubstr("Exit codes: 0 ok"));
}

TEST(CommandTableTest, CommandHelpShowsEachFlagWithItsHelp) {
  for (const CommandSpec& spec : Commands()) {
    const std::string help = CommandHelp(spec);
    EXPECT_THAT(help, HasSubstr(absl::StrCat("Usage: vanguard ", spec.Name())));
    for (const FlagSpec& flag : spec.flags) {
      // The first words of the help text, which the wrapping never splits from each other
      // unless they are long.
      EXPECT_THAT(help, HasSubstr(flag.help.substr(0, 12))) << spec.Name() << " " << flag.name;
    }
  }
}

TEST(CommandTableTest, UsageLinesFitTheWidth) {
  for (const std::string& text : {UsageText(), CommandHelp(Commands().front())}) {
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      EXPECT_LE(end - start, 100u) << text.substr(start, end - start);
      start = end + 1;
    }
  }
}

}  // namespace
}  // namespace vanguard::cli
