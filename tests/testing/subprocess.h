// Starting our own binaries from tests: servers that print "LISTENING host:port" once they
// accept connections, and one-shot commands whose output and exit code a test inspects.
//
//   ASSIGN_OR_RETURN(auto sim, Subprocess::StartServer("vanguard-sim-predictor",
//                                                      {"--listen=127.0.0.1:0"}));
//   std::string url = "http://" + sim->address();
//   auto out = RunBinary("vanguard", {"get", "1", "--output=json"});
//
// Binaries are looked up in $VANGUARD_BIN_DIR unless the name is a path. A Subprocess is
// terminated (SIGTERM, then SIGKILL after a grace period) when it is destroyed, so a failing
// test never leaves a process behind. Called from the test's thread only.
#ifndef VANGUARD_TESTS_TESTING_SUBPROCESS_H_
#define VANGUARD_TESTS_TESTING_SUBPROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace vanguard::testing {

// Full path of one of our binaries: $VANGUARD_BIN_DIR/name (or name itself if it has a '/').
std::string BinPath(const std::string& name);

class Subprocess {
 public:
  // Starts binary with args and extra environment entries ("K=V"); returns once the
  // process printed "LISTENING host:port" on stdout. Fails if it exits or times out first.
  static absl::StatusOr<std::unique_ptr<Subprocess>> StartServer(
      const std::string& binary, const std::vector<std::string>& args,
      const std::vector<std::string>& env = {}, absl::Duration timeout = absl::Seconds(30));

  // Starts a process without waiting for anything.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(
      const std::string& binary, const std::vector<std::string>& args,
      const std::vector<std::string>& env = {});

  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  const std::string& address() const { return address_; }  // "127.0.0.1:PORT"
  int port() const { return port_; }
  pid_t pid() const { return pid_; }

  // SIGTERM, wait up to grace, then SIGKILL. Returns the exit status (as from waitpid) or -1.
  int Terminate(absl::Duration grace = absl::Seconds(5));
  // Waits up to timeout for the process to exit on its own; the exit code, or an error.
  absl::StatusOr<int> Wait(absl::Duration timeout);
  bool Running();

  // What the process wrote to stdout and stderr so far (both go to files under $TMPDIR).
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  Subprocess() = default;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string address_;
  int port_ = 0;
  std::string stdout_path_;
  std::string stderr_path_;
};

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs binary to completion (killed after timeout) and captures its output.
absl::StatusOr<RunResult> RunBinary(const std::string& binary, const std::vector<std::string>& args,
                                    const std::vector<std::string>& env = {},
                                    absl::Duration timeout = absl::Seconds(60));

}  // namespace vanguard::testing

#endif  // VANGUARD_TESTS_TESTING_SUBPROCESS_H_
