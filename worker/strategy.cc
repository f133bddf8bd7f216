// CreateStrategy: maps a TestSpec's strategy oneof to its implementation. A new strategy
// adds its own file and one case here.
#include "worker/strategy.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "worker/sweep_strategy.h"

namespace vanguard::worker {

absl::StatusOr<std::unique_ptr<Strategy>> CreateStrategy(const vanguard::v1::TestSpec& spec) {
  switch (spec.strategy_case()) {
    case vanguard::v1::TestSpec::kSweep: {
      absl::StatusOr<std::unique_ptr<SweepStrategy>> sweep = SweepStrategy::Create(spec.sweep());
      if (!sweep.ok()) return sweep.status();
      return std::unique_ptr<Strategy>(std::move(*sweep));
    }
    case vanguard::v1::TestSpec::STRATEGY_NOT_SET:
      return absl::InvalidArgumentError("spec.strategy: no strategy set (e.g. spec.sweep)");
  }
  return absl::InvalidArgumentError(absl::StrCat("spec.strategy: strategy ",
                                                 static_cast<int>(spec.strategy_case()),
                                                 " is not known to this worker"));
}

}  // namespace vanguard::worker
