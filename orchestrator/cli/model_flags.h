// `vanguard models register`: its flags (and the --from_file they override) turned into the
// v1::Model to register, validated the way the orchestrator will (endpoint schemes, SLO
// bounds, a JSON request template for JSON protocols).
//
//   ASSIGN_OR_RETURN(v1::Model model, ParseModelFlags(flags));
//
// Reads the --from_file file; otherwise pure. Called from main()'s thread only.
#ifndef VANGUARD_ORCHESTRATOR_CLI_MODEL_FLAGS_H_
#define VANGUARD_ORCHESTRATOR_CLI_MODEL_FLAGS_H_

#include "absl/status/statusor.h"
#include "orchestrator/cli/command_line.h"
#include "vanguard/v1/model.pb.h"

namespace vanguard::cli {

// INVALID_ARGUMENT naming the flag for a bad value or a missing required field (--name,
// --version, --endpoint, --p99_ms unless --from_file carries them).
absl::StatusOr<v1::Model> ParseModelFlags(const FlagSet& flags);

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_MODEL_FLAGS_H_
