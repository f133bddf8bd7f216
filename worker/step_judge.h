// Judges one step's result (from the replayer) against the model's SLO.
//
// A step passes when its client was valid, its counts are consistent, and
//   p99 latency (from intended send time) <= slo.p99_latency,
//   p50 latency <= slo.p50_latency                 (when set),
//   (errors + timeouts) / scheduled <= slo.max_error_rate  (when set),
//   achieved_qps >= min_achieved_ratio * offered    (ratio 0 means 0.99; offered is
//                                                   scheduled / measured when the result
//                                                   says, else the target).
// The verdict is one line naming every breached limit with its numbers, e.g.
//   "p99 182.3 ms > 100 ms; achieved 371.2 < 99% of 400"
// A step whose client only sent late is judged when the lateness cannot have decided it
// (see StepJudgement::client_late). Otherwise, for an invalid client, the verdict is the
// replayer's reason with its named cause, e.g.
//   "not judged: load generator disturbed from outside, pause and retry (send skew p99 ...;
//    cause: CPU contention from other processes: ...)"
// and the health score comes from a HealthScorer over the same metrics plus, for streams,
// the TTFT and inter-token p99 against slo.ttft_p99 / inter_token_p99 (scored here; their
// breaches are judged by MeasuredStepRunner with the step's other percentile limits).
//
//   ASSIGN_OR_RETURN(StepJudge judge, StepJudge::Create(test.model().slo()));
//   StepJudgement j = judge.Judge(step_result, /*target_qps=*/400);
//
// Called from the test runner's thread only.
#ifndef VANGUARD_WORKER_STEP_JUDGE_H_
#define VANGUARD_WORKER_STEP_JUDGE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "vanguard/v1/model.pb.h"
#include "vanguard/v1/replayer.pb.h"
#include "worker/health_scorer.h"

namespace vanguard::worker {

struct StepJudgement {
  bool passed = false;
  bool client_valid = true;
  // When !client_valid: the cause the replayer named, and whether it lies outside the
  // replayer (other processes held the CPUs, the hypervisor stole time). An outside cause
  // says nothing about the model or the client: whoever reruns the step should pause first
  // (let the contention pass) and not count the attempt against the rate. The verdict then
  // starts "not judged: load generator disturbed from outside".
  vanguard::v1::ClientInvalidCause client_invalid_cause =
      vanguard::v1::CLIENT_INVALID_CAUSE_UNSPECIFIED;
  bool client_disturbed_from_outside = false;
  // The replayer sent late (its send-skew gate alone fired) but the verdict could not
  // depend on it: the step passed with latency counted from intended send times (lateness
  // only adds to it), or it failed on its p99 also from actual send times while only timers
  // or connection setup delayed the sends. client_valid is then true and the verdict says so.
  bool client_late = false;
  // Every check but the latency percentiles (p99, and p50 when the SLO sets one) held (and
  // the client was valid): the step fails, if at all, on a share of its requests over a
  // latency limit (for a p50 limit, over half of them), which the strategies pool like a
  // p99 tail.
  bool passed_apart_from_latency_tails = false;
  // Every check but the latency percentiles and the error rate held: the step fails, if at
  // all, on a share of its requests (slow or failed) over what the SLO allows.
  bool passed_apart_from_tails = false;
  double error_rate = 0;  // (errors + timeouts) / scheduled
  // What the step offered: scheduled / measured seconds when the result says, else the
  // target.
  double offered_qps = 0;
  HealthScore health;
  std::string verdict;
};

class StepJudge {
 public:
  static constexpr double kDefaultMinAchievedRatio = 0.99;

  // INVALID_ARGUMENT naming the field when the SLO cannot be judged (p99_latency unset,
  // ratios outside [0, 1], negative durations). `scorer` defaults to MaxRatioHealthScorer.
  static absl::StatusOr<StepJudge> Create(const vanguard::v1::Slo& slo,
                                          std::unique_ptr<HealthScorer> scorer = nullptr);

  // `target_qps` is the rate the step was asked to offer.
  StepJudgement Judge(const vanguard::v1::StepResult& result, double target_qps);

  double min_achieved_ratio() const { return min_achieved_ratio_; }

 private:
  StepJudge(const vanguard::v1::Slo& slo, double min_achieved_ratio,
            std::unique_ptr<HealthScorer> scorer)
      : slo_(slo), min_achieved_ratio_(min_achieved_ratio), scorer_(std::move(scorer)) {}

  vanguard::v1::Slo slo_;
  double min_achieved_ratio_;
  std::unique_ptr<HealthScorer> scorer_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_STEP_JUDGE_H_
