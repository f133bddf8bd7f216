// `vanguard submit`: its flags (and the --spec_file they override) turned into the TestSpec to
// queue, how to follow the test, and the CI gates to judge it by once it ends.
//
//   ASSIGN_OR_RETURN(SubmitOptions options, ParseSubmitFlags(flags));
//   // options.spec.sweep().rates_qps() == {100, 200}, options.follow == FollowMode::kPoll
//
// Reads the --spec_file file; otherwise pure. Called from main()'s thread only.
#ifndef VANGUARD_ORCHESTRATOR_CLI_SUBMIT_FLAGS_H_
#define VANGUARD_ORCHESTRATOR_CLI_SUBMIT_FLAGS_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "orchestrator/cli/command_line.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard::cli {

// How `submit` follows the test after queueing it.
enum class FollowMode {
  kNone,    // print the queued test and return
  kPoll,    // --wait: poll GetTest, progress lines on stderr, final test on stdout
  kStream,  // --watch: stream WatchTest updates to stdout
};

// CI gates judged once a followed test ends (gates.h).
struct GateOptions {
  std::optional<double> fail_below_qps;         // --fail_below=QPS
  std::optional<double> fail_if_regressed_pct;  // --fail_if_regressed=5%

  bool Any() const { return fail_below_qps.has_value() || fail_if_regressed_pct.has_value(); }
};

struct SubmitOptions {
  v1::TestSpec spec;
  std::string request_id;
  FollowMode follow = FollowMode::kNone;
  GateOptions gates;
};

// One value of `vanguard submit --strategy=NAME`: the one table the --strategy help, its
// completion choices and the parsing read. `parse` turns the strategy's flags into the spec's
// strategy; INVALID_ARGUMENT naming the flag.
struct SubmitStrategy {
  std::string name;
  std::string help;  // one line: what it finds and which flags it needs
  std::function<absl::Status(const FlagSet& flags, v1::TestSpec* spec)> parse;
  // The flags of this strategy that the others refuse (a flag two strategies list is refused
  // by the rest).
  std::vector<std::string> own_flags = {};
};
const std::vector<SubmitStrategy>& SubmitStrategies();

// INVALID_ARGUMENT naming the flag for a bad value, a missing model or sweep, flags of a
// strategy other than the one chosen, or a gate without --wait or --watch.
absl::StatusOr<SubmitOptions> ParseSubmitFlags(const FlagSet& flags);

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_SUBMIT_FLAGS_H_
