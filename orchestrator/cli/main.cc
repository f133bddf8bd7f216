// `vanguard`: the submit tool, a gRPC client of vanguard.v1.Orchestrator. This file only
// reads the environment, knows how to open a channel, and hands argv to RunCli (commands.h).
//
// Flags are not ABSL_FLAGs here, unlike our other binaries: every flag belongs to a command
// of the command table (command_table.h), which also writes --help and the completion
// scripts, so the table is where a flag is declared, once.
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/grpc_tls.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "orchestrator/cli/command_line.h"
#include "orchestrator/cli/commands.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace {

std::unique_ptr<vanguard::v1::Orchestrator::StubInterface> MakeStub(
    const vanguard::cli::GlobalOptions& global) {
  return vanguard::v1::Orchestrator::NewStub(
      grpc::CreateChannel(global.orchestrator, vanguard::ChannelCredentials(global.tls)));
}

}  // namespace

int main(int argc, char** argv) {
  vanguard::cli::Environment env;
  if (const char* address = std::getenv("VANGUARD_ORCHESTRATOR")) env.orchestrator = address;
  if (const char* token = std::getenv("VANGUARD_TOKEN")) env.token = token;
  env.stdout_is_terminal = isatty(STDOUT_FILENO) == 1;
  env.stderr_is_terminal = isatty(STDERR_FILENO) == 1;
  struct winsize size = {};
  if (ioctl(env.stdout_is_terminal ? STDOUT_FILENO : STDERR_FILENO, TIOCGWINSZ, &size) == 0) {
    env.terminal_columns = size.ws_col;
  }
  return vanguard::cli::RunCli(std::vector<std::string>(argv, argv + argc), env, MakeStub,
                               std::cout, std::cerr, *vanguard::Clock::Real());
}
