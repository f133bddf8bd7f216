// Step judging against the SLO. See step_judge.h.
#include "worker/step_judge.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"

namespace vanguard::worker {
namespace {

absl::Duration ToAbsl(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

bool CountsConsistent(const vanguard::v1::StepResult& r) {
  if (r.scheduled() <= 0) return false;
  if (r.sent() < 0 || r.completed() < 0 || r.errors() < 0 || r.timeouts() < 0 || r.dropped() < 0) {
    return false;
  }
  if (r.sent() > r.scheduled()) return false;
  // Every scheduled request ends at most once: completed, failed, timed out or dropped.
  return r.completed() + r.errors() + r.timeouts() + r.dropped() <= r.scheduled();
}

// A step whose only client-validity failure is late sends (StepResult.client_invalid_late_only)
// is judged when the lateness cannot have decided it: latency counts from intended send
// times, so lateness only ever adds to it and a step passing with it passed; and a step
// failing on its p99 also from actual send times, sent late only by the machine's timers
// or connection setup (not by a CPU too busy to read responses), failed on the server's
// own response times.
bool LatenessCannotChangeTheVerdict(const vanguard::v1::StepResult& result, bool passed,
                                    double p99_limit_ms) {
  if (!result.client_invalid_late_only()) return false;
  if (passed) return true;
  const vanguard::v1::ClientInvalidCause cause = result.client_invalid_cause();
  const bool sends_delayed_not_reads = cause == vanguard::v1::CLIENT_INVALID_CAUSE_TIMER_WAKEUP ||
                                       cause == vanguard::v1::CLIENT_INVALID_CAUSE_CONNECTION_CHURN;
  return sends_delayed_not_reads && result.service_latency().p99_ms() > p99_limit_ms;
}

double Milliseconds(const google::protobuf::Duration& d) {
  return absl::ToDoubleMilliseconds(ToAbsl(d));
}

// The SLO checks of one step as they are made: the health signals, the breached limits and
// the held ones, each a phrase of the verdict.
struct Checks {
  std::vector<HealthSignal> signals;
  std::vector<std::string> breaches;
  std::vector<std::string> held;

  // A latency percentile named `name` against its limit; returns whether it was breached.
  bool Limit(const char* name, double value_ms, double limit_ms) {
    signals.push_back({name, value_ms, limit_ms});
    if (value_ms > limit_ms) {
      breaches.push_back(absl::StrFormat("%s %.1f ms > %g ms", name, value_ms, limit_ms));
      return true;
    }
    held.push_back(absl::StrFormat("%s %.1f ms <= %g ms", name, value_ms, limit_ms));
    return false;
  }

  // The error rate against the SLO's maximum; returns whether it was breached.
  bool ErrorRate(double rate, double max_rate) {
    signals.push_back({"error_rate", rate, max_rate});
    const bool breached = rate > max_rate;
    (breached ? breaches : held)
        .push_back(absl::StrFormat("error rate %.2f%% %s %g%%", rate * 100,
                                   breached ? ">" : "<=", max_rate * 100));
    return breached;
  }

  // The achieved rate against min_ratio of what was offered. The health signal is the
  // shortfall relative to the allowed shortfall, so a step that achieves its full target
  // scores 0 and one exactly at min_ratio scores 1.0 (target/achieved against 1/ratio would
  // score a perfect step 0.99, i.e. CRITICAL).
  void Achieved(double achieved, double offered, double min_ratio) {
    const double shortfall = offered > 0 ? std::max(0.0, 1.0 - achieved / offered) : 0.0;
    const double allowed_shortfall = 1.0 - min_ratio;
    if (allowed_shortfall > 0) {
      signals.push_back({"achieved", shortfall, allowed_shortfall});
    } else {
      signals.push_back({"achieved", shortfall > 0 ? 1.0 + shortfall : 0.0, 1.0});
    }
    const bool breached = achieved < min_ratio * offered;
    (breached ? breaches : held)
        .push_back(absl::StrFormat("achieved %.1f %s %g%% of %g", achieved,
                                   breached ? "<" : ">=", min_ratio * 100, offered));
  }
};

// What the step offered: against what was actually scheduled, since a Poisson schedule's
// arrivals in a short step differ from the target by a few percent, which is not a shortfall
// of the predictor; the target when the result does not say.
double OfferedQps(const vanguard::v1::StepResult& result, double target_qps) {
  const double measured_s = absl::ToDoubleSeconds(ToAbsl(result.measured()));
  return measured_s > 0 && result.scheduled() > 0
             ? static_cast<double>(result.scheduled()) / measured_s
             : target_qps;
}

// The verdict of a step whose client was invalid: the replayer's reason with its cause.
void NotJudged(const vanguard::v1::StepResult& result, StepJudgement& j) {
  j.passed = false;
  j.client_invalid_cause = result.client_invalid_cause();
  j.client_disturbed_from_outside = result.client_invalid_outside();
  j.verdict = absl::StrCat(
      j.client_disturbed_from_outside
          ? "not judged: load generator disturbed from outside, pause and retry ("
          : "not judged: load generator invalid (",
      result.client_invalid_reason().empty() ? "no reason given" : result.client_invalid_reason(),
      ")");
}

// Says in the verdict that the client sent late and why the verdict stands anyway.
void AppendLateClient(const vanguard::v1::StepResult& result, bool passed, double p99_limit_ms,
                      std::string& verdict) {
  absl::StrAppend(
      &verdict,
      passed ? " (despite a late client: " : " (also without the client's lateness: service p99 ",
      passed ? result.client_invalid_reason()
             : absl::StrFormat("%.1f ms > %g ms; %s", result.service_latency().p99_ms(),
                               p99_limit_ms, result.client_invalid_reason()),
      ")");
}

// Streams: the time to the first token and between tokens score the step's health like any
// other SLO metric (a model whose binding limit is its TTFT is close to capacity however far
// its total latency sits below its own limit). Their breaches are judged with the step's
// other percentile limits by MeasuredStepRunner, not here.
void ScoreStreams(const vanguard::v1::StepResult& result, const vanguard::v1::Slo& slo,
                  Checks& checks) {
  const double ttft_limit_ms = Milliseconds(slo.ttft_p99());
  if (ttft_limit_ms > 0 && result.has_ttft()) {
    checks.signals.push_back({"ttft", result.ttft().p99_ms(), ttft_limit_ms});
  }
  const double inter_limit_ms = Milliseconds(slo.inter_token_p99());
  if (inter_limit_ms > 0 && result.has_inter_chunk()) {
    checks.signals.push_back({"inter_token", result.inter_chunk().p99_ms(), inter_limit_ms});
  }
}

}  // namespace

absl::StatusOr<StepJudge> StepJudge::Create(const vanguard::v1::Slo& slo,
                                            std::unique_ptr<HealthScorer> scorer) {
  if (ToAbsl(slo.p99_latency()) <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("model.slo.p99_latency must be > 0");
  }
  if (ToAbsl(slo.p50_latency()) < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("model.slo.p50_latency must be >= 0");
  }
  if (!std::isfinite(slo.max_error_rate()) || slo.max_error_rate() < 0 ||
      slo.max_error_rate() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.slo.max_error_rate must be in [0, 1], got ", slo.max_error_rate()));
  }
  if (!std::isfinite(slo.min_achieved_ratio()) || slo.min_achieved_ratio() < 0 ||
      slo.min_achieved_ratio() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.slo.min_achieved_ratio must be in [0, 1], got ", slo.min_achieved_ratio()));
  }
  const double ratio =
      slo.min_achieved_ratio() == 0 ? kDefaultMinAchievedRatio : slo.min_achieved_ratio();
  if (scorer == nullptr) scorer = std::make_unique<MaxRatioHealthScorer>();
  return StepJudge(slo, ratio, std::move(scorer));
}

StepJudgement StepJudge::Judge(const vanguard::v1::StepResult& result, double target_qps) {
  StepJudgement j;
  j.client_valid = result.client_valid();
  Checks checks;
  if (!CountsConsistent(result)) {
    checks.breaches.push_back(absl::StrFormat(
        "inconsistent counts: scheduled %d, sent %d, completed %d, errors %d, timeouts %d, "
        "dropped %d",
        result.scheduled(), result.sent(), result.completed(), result.errors(), result.timeouts(),
        result.dropped()));
  }
  // Clamped so inconsistent counts still give a fraction the orchestrator accepts.
  j.error_rate = result.scheduled() > 0
                     ? std::clamp(static_cast<double>(result.errors() + result.timeouts()) /
                                      static_cast<double>(result.scheduled()),
                                  0.0, 1.0)
                     : 0.0;
  // p99 from the intended send time: queueing delay counts.
  const double p99_limit_ms = Milliseconds(slo_.p99_latency());
  const bool p99_breached = checks.Limit("p99", result.latency().p99_ms(), p99_limit_ms);
  bool p50_breached = false;
  if (const double p50_limit_ms = Milliseconds(slo_.p50_latency()); p50_limit_ms > 0) {
    p50_breached = checks.Limit("p50", result.latency().p50_ms(), p50_limit_ms);
  }
  ScoreStreams(result, slo_, checks);
  const bool errors_breached =
      slo_.max_error_rate() > 0 && checks.ErrorRate(j.error_rate, slo_.max_error_rate());
  j.offered_qps = OfferedQps(result, target_qps);
  // Achieved counts completed requests only. With an error check, errors and timeouts are
  // judged there (pooled across steps like a latency tail, by the strategies), so the
  // throughput check asks only whether the rest kept up: counting them twice would fail a
  // second, unpooled check whenever the error share is over its limit by chance.
  const double judged_elsewhere = slo_.max_error_rate() > 0 ? j.error_rate : 0.0;
  checks.Achieved(result.achieved_qps(), j.offered_qps * (1 - judged_elsewhere),
                  min_achieved_ratio_);
  j.health = scorer_->Score(checks.signals);

  if (!j.client_valid &&
      LatenessCannotChangeTheVerdict(result, checks.breaches.empty(), p99_limit_ms)) {
    j.client_valid = true;
    j.client_late = true;
  }
  if (!j.client_valid) {
    NotJudged(result, j);
    return j;
  }
  j.passed = checks.breaches.empty();
  const size_t tail_breaches = (p99_breached ? 1u : 0u) + (p50_breached ? 1u : 0u);
  j.passed_apart_from_latency_tails = checks.breaches.size() == tail_breaches;
  j.passed_apart_from_tails = checks.breaches.size() == tail_breaches + (errors_breached ? 1u : 0u);
  j.verdict = j.passed ? absl::StrCat("pass: ", absl::StrJoin(checks.held, ", "))
                       : absl::StrJoin(checks.breaches, "; ");
  if (j.client_late) AppendLateClient(result, j.passed, p99_limit_ms, j.verdict);
  return j;
}

}  // namespace vanguard::worker
