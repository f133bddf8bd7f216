// Ladder calibration. See ladder_strategy.h.
#include "worker/ladder_strategy.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace vanguard::worker {
namespace {

absl::Status CheckFraction(double v, const char* field, bool allow_one) {
  if (!std::isfinite(v) || v < 0 || v > 1 || (!allow_one && v == 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ladder.", field, " must be in [0, 1", allow_one ? "]" : ")", ", got ", v));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<LadderStrategy>> LadderStrategy::Create(
    const vanguard::v1::LadderStrategy& config) {
  vanguard::v1::LadderStrategy c = config;
  if (!std::isfinite(c.start_qps()) || c.start_qps() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ladder.start_qps must be > 0, got ", c.start_qps()));
  }
  if (!std::isfinite(c.max_queue_mean()) || c.max_queue_mean() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ladder.max_queue_mean must be >= 0, got ", c.max_queue_mean()));
  }
  if (!std::isfinite(c.max_qps()) || c.max_qps() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ladder.max_qps must be >= 0, got ", c.max_qps()));
  }
  if (absl::Status s = CheckFraction(c.fine_step_fraction(), "fine_step_fraction", true); !s.ok())
    return s;
  if (absl::Status s = CheckFraction(c.min_goodput(), "min_goodput", true); !s.ok()) return s;
  if (absl::Status s =
          CheckFraction(c.min_queue_sample_fraction(), "min_queue_sample_fraction", true);
      !s.ok())
    return s;
  if (absl::Status s = CheckFraction(c.ramp_disagreement(), "ramp_disagreement", false); !s.ok())
    return s;
  if (absl::Status s = CheckFraction(c.reserve_fraction(), "reserve_fraction", true); !s.ok())
    return s;
  if (c.start_qps() == 0) c.set_start_qps(2);
  if (c.fine_step_fraction() == 0) c.set_fine_step_fraction(0.1);
  if (c.min_goodput() == 0) c.set_min_goodput(0.99);
  if (c.max_queue_mean() == 0) c.set_max_queue_mean(1.0);
  if (c.min_queue_sample_fraction() == 0) c.set_min_queue_sample_fraction(0.9);
  if (c.max_qps() == 0) c.set_max_qps(1'000'000);
  if (c.ramp_disagreement() == 0) c.set_ramp_disagreement(0.1);
  if (c.reserve_fraction() == 0) c.set_reserve_fraction(0.65);
  if (c.max_qps() < c.start_qps()) {
    return absl::InvalidArgumentError(absl::StrCat("ladder.max_qps must be >= start_qps (",
                                                   c.start_qps(), "), got ", c.max_qps()));
  }
  return std::unique_ptr<LadderStrategy>(new LadderStrategy(c));
}

std::optional<bool> LadderStrategy::StepPasses(const StepOutcome& o, std::string* why) const {
  std::vector<std::string> failed;
  if (o.queue_samples_fraction < config_.min_queue_sample_fraction()) {
    *why =
        absl::StrFormat("not judged: %.0f%% of the queue-gauge samples landed (< %.0f%%)",
                        o.queue_samples_fraction * 100, config_.min_queue_sample_fraction() * 100);
    return std::nullopt;
  }
  if (!o.client_valid) failed.push_back("client gate not clean");
  if (o.goodput >= 0) {
    if (o.goodput < config_.min_goodput()) {
      failed.push_back(absl::StrFormat("goodput %.4f < %g", o.goodput, config_.min_goodput()));
    }
  } else if (!o.passed) {
    failed.push_back("SLO not met (no goodput figure)");
  }
  if (o.queue_mean > config_.max_queue_mean()) {
    failed.push_back(
        absl::StrFormat("queue mean %.3f > %g", o.queue_mean, config_.max_queue_mean()));
  }
  *why = failed.empty() ? "pass" : absl::StrJoin(failed, "; ");
  return failed.empty();
}

int LadderStrategy::RampSteps(double lambda) const {
  const double start = config_.start_qps();
  const int doublings =
      lambda > start ? static_cast<int>(std::floor(std::log2(lambda / start))) : 0;
  const double coarse_pass = start * std::exp2(doublings);
  const double increment = config_.fine_step_fraction() * coarse_pass;
  const int fine = static_cast<int>(std::floor((lambda - coarse_pass) / increment)) + 1;
  return doublings + 2 + fine;  // the passes, the coarse failure, the fine steps
}

std::optional<int> LadderStrategy::StepsLeft() const {
  if (done_) return 0;
  if (ramps_.empty()) return std::nullopt;
  const Ramp& ramp = ramps_.back();
  // lambda_max as far as known: a finished ramp's, else this one's first failure.
  std::optional<double> lambda;
  if (ramps_.size() > 1) lambda = ramps_.front().last_pass;
  if (!lambda && ramp.first_failure) lambda = ramp.first_failure;
  if (!lambda) return std::nullopt;
  int left = 0;
  if (ramp.fine && ramp.first_failure) {
    left = static_cast<int>(std::ceil((*ramp.first_failure - current_) / ramp.increment));
  } else {
    left = std::max(0, RampSteps(*lambda) - 1 -
                           static_cast<int>(std::floor(std::log2(current_ / config_.start_qps()))));
  }
  // Two ramps unless they disagree (then a third decides).
  const int ramps_after = std::max(0, 2 - static_cast<int>(ramps_.size()));
  return std::max(0, left) + ramps_after * RampSteps(*lambda);
}

Decision LadderStrategy::StartRamp() {
  ramps_.push_back(Ramp{});
  current_ = config_.start_qps();
  return RunStep{current_};
}

Decision LadderStrategy::Stop(const std::string& why) {
  Done done;
  done.converged = false;
  for (const Ramp& r : ramps_) done.ramp_max_qps.push_back(r.last_pass.value_or(0));
  done.max_sustainable_qps = ramps_.empty() ? 0 : ramps_.back().last_pass.value_or(0);
  done.confidence_low_qps = done.max_sustainable_qps;
  done.confidence_high_qps = current_;
  done.summary = absl::StrFormat("ladder: stopped after %d steps in ramp %d at %g qps: %s", steps_,
                                 static_cast<int>(ramps_.size()), current_, why);
  done_ = done;
  return done;
}

Decision LadderStrategy::Conclude() {
  std::vector<double> maxima;
  for (const Ramp& r : ramps_) maxima.push_back(r.last_pass.value_or(0));
  Done done;
  done.ramp_max_qps = maxima;
  double lambda;
  size_t deciding;
  if (maxima.size() == 3) {
    std::vector<size_t> order = {0, 1, 2};
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return maxima[a] < maxima[b]; });
    deciding = order[1];
  } else {
    deciding = maxima[0] <= maxima[1] ? 0 : 1;
  }
  lambda = maxima[deciding];
  const Ramp& d = ramps_[deciding];
  done.max_sustainable_qps = lambda;
  done.reserve_qps = config_.reserve_fraction() * lambda;
  done.survivor_qps = 2 * done.reserve_qps;
  done.confidence_low_qps = lambda;
  done.confidence_high_qps = d.first_failure.value_or(lambda);
  done.converged = true;
  for (const Ramp& r : ramps_) done.converged = done.converged && r.last_pass && r.first_failure;
  done.summary = absl::StrFormat(
      "ladder: lambda_max %g qps (ramps %s%s), lambda_r %g qps, survivor %g qps, %d steps", lambda,
      absl::StrJoin(maxima, ", "),
      maxima.size() == 3 ? "; third ramp decided by median" : "; the lower of two",
      done.reserve_qps, done.survivor_qps, steps_);
  done_ = done;
  return done;
}

Decision LadderStrategy::Next(const std::optional<StepOutcome>& last) {
  if (done_) return *done_;
  if (ramps_.empty() || !last) {
    if (ramps_.empty()) return StartRamp();
    return RunStep{current_};
  }
  ++steps_;
  std::string why;
  const std::optional<bool> passed = StepPasses(*last, &why);
  if (!passed) return Stop(why);
  Ramp& ramp = ramps_.back();
  bool ramp_done = false;
  if (*passed) {
    ramp.last_pass = current_;
    if (!ramp.fine) {
      if (current_ >= config_.max_qps()) {
        ramp.exhausted = true;
        ramp_done = true;
      } else {
        current_ = std::min(current_ * 2, config_.max_qps());
      }
    } else {
      current_ = current_ + ramp.increment;
    }
  } else {
    ramp.first_failure = current_;
    if (!ramp.fine && ramp.last_pass) {
      ramp.fine = true;
      ramp.increment = config_.fine_step_fraction() * *ramp.last_pass;
      current_ = *ramp.last_pass + ramp.increment;
      if (current_ >= *ramp.first_failure) ramp_done = true;  // nothing between the two
    } else {
      ramp_done = true;
    }
  }
  if (!ramp_done) return RunStep{current_};

  if (ramps_.size() == 1) return StartRamp();
  if (ramps_.size() == 2) {
    const double a = ramps_[0].last_pass.value_or(0), b = ramps_[1].last_pass.value_or(0);
    if (std::abs(a - b) > config_.ramp_disagreement() * std::max(a, b)) return StartRamp();
  }
  return Conclude();
}

}  // namespace vanguard::worker
