// A gtest fixture for commands in their own files (compare, report): runs one command, parsed
// from its words and flags as RunCli would, against a MockOrchestratorStub on a FakeClock, and
// keeps what it printed.
//
//   class CompareCommandTest : public CommandTest {};
//   TEST_F(CompareCommandTest, ...) {
//     EXPECT_CALL(stub_, GetTest(_, _, _))...;
//     EXPECT_EQ(RunCommand({"compare", "12", "15"}, {{"output", "json"}}), kExitOk);
//   }
#ifndef VANGUARD_ORCHESTRATOR_CLI_TESTING_COMMAND_TEST_H_
#define VANGUARD_ORCHESTRATOR_CLI_TESTING_COMMAND_TEST_H_

#include <sstream>
#include <string>
#include <vector>

#include "common/clock.h"
#include "gtest/gtest.h"
#include "orchestrator/cli/command_line.h"
#include "orchestrator/cli/command_table.h"
#include "orchestrator/cli/commands.h"
#include "proto/testing/orchestrator_stub_mock.h"

namespace vanguard::cli {

class CommandTest : public ::testing::Test {
 protected:
  // The command's exit code; a usage error (exit 2) leaves its message in usage_error_.
  int RunCommand(const std::vector<std::string>& words, const GivenFlags& flags = {}) {
    absl::StatusOr<CommandWords> command = IdentifyCommand(words);
    EXPECT_TRUE(command.ok()) << command.status();
    if (!command.ok()) return kExitUsage;
    absl::StatusOr<ParsedCommand> parsed = ParseCommand(*command, flags, Environment{});
    if (!parsed.ok()) {
      usage_error_ = std::string(parsed.status().message());
      return kExitUsage;
    }
    CommandRunner runner(stub_, parsed->global, out_, err_, clock_);
    return parsed->spec->run(runner, parsed->options);
  }

  v1::OrchestratorStubMock stub_;
  std::ostringstream out_;
  std::ostringstream err_;
  FakeClock clock_;
  std::string usage_error_;
};

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_TESTING_COMMAND_TEST_H_
