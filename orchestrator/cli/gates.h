// CI gates on a finished test, as k6 thresholds: `vanguard submit --wait --fail_below=QPS`
// and `--fail_if_regressed=5%`. Each gate judges the test and says why in one line; the tool
// exits with kExitGateFailed when any gate fails. A test that did not succeed fails every
// gate.
//
//   GateVerdict v = JudgeFailBelow(finished, 250);
//   // v.passed == false, v.line == "gate --fail_below=250: FAILED: max sustainable 200.0 qps
//   //                                is below 250.0 qps"
//
// Pure functions; any thread may call them.
#ifndef VANGUARD_ORCHESTRATOR_CLI_GATES_H_
#define VANGUARD_ORCHESTRATOR_CLI_GATES_H_

#include <optional>
#include <string>

#include "vanguard/v1/test.pb.h"

namespace vanguard::cli {

struct GateVerdict {
  bool passed = false;
  std::string line;  // "gate --fail_below=250: passed: ...", no newline
};

// Fails when the test did not succeed, has no result, or its max_sustainable_qps is below
// `min_qps` (an "at least" result below it fails too: only a lower bound is known).
GateVerdict JudgeFailBelow(const v1::Test& finished, double min_qps);

// Compares with `baseline` (the latest earlier succeeded test of the same model version, else
// of the same model; nullopt when there is none, which passes). Fails when the test did not
// succeed, or its capacity is lower than the baseline's by more than `max_drop_pct` percent
// AND beyond both tests' confidence intervals (compare.h).
GateVerdict JudgeRegression(const v1::Test& finished, const std::optional<v1::Test>& baseline,
                            double max_drop_pct);

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_GATES_H_
