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
  std::vector<HealthSignal> signals;
  std::vector<std::string> breaches;
  std::vector<std::string> held;

  const bool counts_ok = CountsConsistent(result);
  if (!counts_ok) {
    breaches.push_back(absl::StrFormat(
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
  const double p99_ms = result.latency().p99_ms();
  const double p99_limit_ms = absl::ToDoubleMilliseconds(ToAbsl(slo_.p99_latency()));
  signals.push_back({"p99", p99_ms, p99_limit_ms});
  const bool p99_breached = p99_ms > p99_limit_ms;
  if (p99_breached) {
    breaches.push_back(absl::StrFormat("p99 %.1f ms > %g ms", p99_ms, p99_limit_ms));
  } else {
    held.push_back(absl::StrFormat("p99 %.1f ms <= %g ms", p99_ms, p99_limit_ms));
  }

  const double p50_limit_ms = absl::ToDoubleMilliseconds(ToAbsl(slo_.p50_latency()));
  if (p50_limit_ms > 0) {
    const double p50_ms = result.latency().p50_ms();
    signals.push_back({"p50", p50_ms, p50_limit_ms});
    if (p50_ms > p50_limit_ms) {
      breaches.push_back(absl::StrFormat("p50 %.1f ms > %g ms", p50_ms, p50_limit_ms));
    } else {
      held.push_back(absl::StrFormat("p50 %.1f ms <= %g ms", p50_ms, p50_limit_ms));
    }
  }

  // Streams: the time to the first token and between tokens score the step's health like
  // any other SLO metric (a model whose binding limit is its TTFT is close to capacity
  // however far its total latency sits below its own limit). Their breaches are judged with
  // the step's other percentile limits by MeasuredStepRunner.
  const double ttft_limit_ms = absl::ToDoubleMilliseconds(ToAbsl(slo_.ttft_p99()));
  if (ttft_limit_ms > 0 && result.has_ttft()) {
    signals.push_back({"ttft", result.ttft().p99_ms(), ttft_limit_ms});
  }
  const double inter_limit_ms = absl::ToDoubleMilliseconds(ToAbsl(slo_.inter_token_p99()));
  if (inter_limit_ms > 0 && result.has_inter_chunk()) {
    signals.push_back({"inter_token", result.inter_chunk().p99_ms(), inter_limit_ms});
  }

  bool errors_breached = false;
  if (slo_.max_error_rate() > 0) {
    signals.push_back({"error_rate", j.error_rate, slo_.max_error_rate()});
    if (j.error_rate > slo_.max_error_rate()) {
      errors_breached = true;
      breaches.push_back(absl::StrFormat("error rate %.2f%% > %g%%", j.error_rate * 100,
                                         slo_.max_error_rate() * 100));
    } else {
      held.push_back(absl::StrFormat("error rate %.2f%% <= %g%%", j.error_rate * 100,
                                     slo_.max_error_rate() * 100));
    }
  }

  const double achieved = result.achieved_qps();
  // Against what was actually offered: a Poisson schedule's arrivals in a short step differ
  // from the target by a few percent, which is not a shortfall of the predictor.
  const double measured_s = absl::ToDoubleSeconds(ToAbsl(result.measured()));
  const double offered = measured_s > 0 && result.scheduled() > 0
                             ? static_cast<double>(result.scheduled()) / measured_s
                             : target_qps;
  j.offered_qps = offered;
  const double required = min_achieved_ratio_ * offered;
  // The health signal is the shortfall relative to the allowed shortfall, so a step that
  // achieves its full target scores 0 and one exactly at min_achieved_ratio scores 1.0.
  // (target/achieved against 1/ratio would score a perfect step 0.99, i.e. CRITICAL.)
  const double shortfall = offered > 0 ? std::max(0.0, 1.0 - achieved / offered) : 0.0;
  const double allowed_shortfall = 1.0 - min_achieved_ratio_;
  if (allowed_shortfall > 0) {
    signals.push_back({"achieved", shortfall, allowed_shortfall});
  } else {
    signals.push_back({"achieved", shortfall > 0 ? 1.0 + shortfall : 0.0, 1.0});
  }
  if (achieved < required) {
    breaches.push_back(absl::StrFormat("achieved %.1f < %g%% of %g", achieved,
                                       min_achieved_ratio_ * 100, offered));
  } else {
    held.push_back(absl::StrFormat("achieved %.1f >= %g%% of %g", achieved,
                                   min_achieved_ratio_ * 100, offered));
  }

  j.health = scorer_->Score(signals);

  if (!j.client_valid && LatenessCannotChangeTheVerdict(result, breaches.empty(), p99_limit_ms)) {
    j.client_valid = true;
    j.client_late = true;
  }
  if (!j.client_valid) {
    j.passed = false;
    j.client_invalid_cause = result.client_invalid_cause();
    j.client_disturbed_from_outside = result.client_invalid_outside();
    j.verdict = absl::StrCat(
        j.client_disturbed_from_outside
            ? "not judged: load generator disturbed from outside, pause and retry ("
            : "not judged: load generator invalid (",
        result.client_invalid_reason().empty() ? "no reason given" : result.client_invalid_reason(),
        ")");
    return j;
  }
  j.passed = breaches.empty();
  j.passed_apart_from_p99 = breaches.size() == (p99_breached ? 1u : 0u);
  j.passed_apart_from_tails =
      breaches.size() == (p99_breached ? 1u : 0u) + (errors_breached ? 1u : 0u);
  j.verdict =
      j.passed ? absl::StrCat("pass: ", absl::StrJoin(held, ", ")) : absl::StrJoin(breaches, "; ");
  if (j.client_late) {
    absl::StrAppend(&j.verdict,
                    j.passed ? " (despite a late client: "
                             : " (also without the client's lateness: service p99 ",
                    j.passed
                        ? result.client_invalid_reason()
                        : absl::StrFormat("%.1f ms > %g ms; %s", result.service_latency().p99_ms(),
                                          p99_limit_ms, result.client_invalid_reason()),
                    ")");
  }
  return j;
}

}  // namespace vanguard::worker
