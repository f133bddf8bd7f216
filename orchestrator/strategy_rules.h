// What the orchestrator knows of each test strategy, in one table (kRules in
// strategy_rules.cc): what it checks in a spec using the strategy at submission, which URLs
// the worker will request for it (checked against the target policy), and how much load and
// time it may ask for (the team quotas, tenancy.h).
//
//   const StrategyRules* rules = StrategyRulesFor(spec.strategy_case());
//   if (rules == nullptr) return ...;  // no strategy set
//   RETURN_IF_ERROR(rules->check(spec));
//
// Adding a strategy adds one entry there, beside its worker entry (worker/strategy.cc
// CreateStrategy) and its CLI entry (orchestrator/cli/submit_flags.cc SubmitStrategies).
// Pure; any thread may call.
#ifndef VANGUARD_ORCHESTRATOR_STRATEGY_RULES_H_
#define VANGUARD_ORCHESTRATOR_STRATEGY_RULES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard {

// A URL the worker will request for a test, and the spec field that names it.
struct StrategyTarget {
  std::string url;
  std::string field;
};

struct StrategyRules {
  v1::TestSpec::StrategyCase strategy;
  // Its own consistency rules the orchestrator can check without the model (the worker checks
  // the rest), before the spec's common fields: INVALID_ARGUMENT naming the field. Null: none.
  absl::Status (*check)(const v1::TestSpec& spec);
  // Its rates, step counts and parameters within the global bounds (validation.h), after the
  // spec's common fields: INVALID_ARGUMENT naming the field.
  absl::Status (*bounds)(const v1::TestSpec& spec);
  // The URLs (non-empty ones) the worker will fetch or POST to for it. Null: none.
  std::vector<StrategyTarget> (*targets)(const v1::TestSpec& spec);
  // The highest rate it may offer, in requests/s.
  double (*highest_rate_qps)(const v1::TestSpec& spec);
  // The most steps it may run (the worker's defaults where the spec leaves a count unset).
  int64_t (*most_steps)(const v1::TestSpec& spec);
  // How long it may run at most when that is not most_steps steps of step_warmup +
  // step_duration (its phases have lengths of their own). Null: that product.
  absl::Duration (*longest_duration)(const v1::TestSpec& spec);
  // Whether it holds its estimate for the sustained horizon after its steps.
  bool holds_estimate;
};

// The rules of `strategy`; nullptr for STRATEGY_NOT_SET (or a case this build does not know).
const StrategyRules* StrategyRulesFor(v1::TestSpec::StrategyCase strategy);

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_STRATEGY_RULES_H_
