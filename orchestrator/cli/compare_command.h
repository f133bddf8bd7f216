// `vanguard compare A B` and `vanguard compare --model=M --versions=V1,V2`: fetches the two
// tests (for versions, the latest succeeded test of each), then prints both capacities with
// their confidence intervals, latency at the highest rate both measured, and the verdict of
// compare.h. Also the lookup of "the latest succeeded test of a model (version)" that the
// submit gates share.
//
// Called from main()'s thread only.
#ifndef VANGUARD_ORCHESTRATOR_CLI_COMPARE_COMMAND_H_
#define VANGUARD_ORCHESTRATOR_CLI_COMPARE_COMMAND_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "orchestrator/cli/command_table.h"
#include "orchestrator/cli/commands.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard::cli {

// How many of a model's newest succeeded tests the version lookups search (ListTests has no
// version filter and no paging; this is the orchestrator's largest page).
inline constexpr int kSucceededTestsSearched = 1000;

struct CompareOptions {
  std::vector<int64_t> ids;  // two test ids, or empty with model and versions
  std::string model;
  std::vector<std::string> versions;  // two
};

// The newest succeeded test of `model` whose resolved version is `version` ("": any version)
// and whose id is below `before_id` (0: any), as ListTests returns it (without steps);
// nullopt when none is among the model's kSucceededTestsSearched newest succeeded tests.
// Errors are the ListTests RPC's.
absl::StatusOr<std::optional<v1::Test>> LatestSucceededTest(const CommandRunner& runner,
                                                            const std::string& model,
                                                            const std::string& version,
                                                            int64_t before_id = 0);

// The table entry.
CommandSpec CompareCommand();

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_COMPARE_COMMAND_H_
