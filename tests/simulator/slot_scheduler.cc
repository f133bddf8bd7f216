// The simulated predictor's batch-serving model; see slot_scheduler.h. Called from one strand.
#include "tests/simulator/slot_scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace vanguard::sim {
namespace {

absl::Status ValidateConfig(const SlotScheduler::Config& config) {
  if (config.slots < 1) {
    return absl::InvalidArgumentError(absl::StrCat("slots must be >= 1, got ", config.slots));
  }
  if (config.service_time <= absl::ZeroDuration() ||
      config.service_time == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("service_time must be positive and finite, got ",
                                                   absl::FormatDuration(config.service_time)));
  }
  if (config.max_queue < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_queue must be >= 0 (0 = unlimited), got ", config.max_queue));
  }
  if (config.per_item_time < absl::ZeroDuration() || config.per_item_time > absl::Hours(1)) {
    return absl::InvalidArgumentError(absl::StrCat("per_item_time must be in [0, 1h], got ",
                                                   absl::FormatDuration(config.per_item_time)));
  }
  if (config.max_batch < 1 || config.max_batch > 65536) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch must be in [1, 65536], got ", config.max_batch));
  }
  if (config.max_queue_delay < absl::ZeroDuration() || config.max_queue_delay > absl::Hours(1)) {
    return absl::InvalidArgumentError(absl::StrCat("max_queue_delay must be in [0, 1h], got ",
                                                   absl::FormatDuration(config.max_queue_delay)));
  }
  return ValidatePerturbations(config.perturbations);
}

// Number of the last sampling boundary at or before t.
int64_t BoundaryAtOrBefore(absl::Duration t, absl::Duration interval) {
  absl::Duration remainder;  // this Abseil release writes it unconditionally: never nullptr
  return absl::IDivDuration(absl::Floor(t, interval), interval, &remainder);
}

const SlotScheduler::Config& ValidateOrDie(const SlotScheduler::Config& config) {
  if (absl::Status status = ValidateConfig(config); !status.ok()) {
    std::cerr << "SlotScheduler: " << status << "\n";
    std::abort();
  }
  return config;
}

}  // namespace

absl::Status SlotScheduler::Validate(const Config& config) { return ValidateConfig(config); }

absl::StatusOr<SlotScheduler> SlotScheduler::Create(const Config& config) {
  if (absl::Status status = ValidateConfig(config); !status.ok()) return status;
  return SlotScheduler(config);
}

SlotScheduler::SlotScheduler(const Config& config)
    : config_(config), service_model_((ValidateOrDie(config), config.perturbations)) {}

double SlotScheduler::SaturationRps() const {
  const double batch = config_.max_batch;
  const double batch_seconds =
      absl::ToDoubleSeconds(config_.service_time + config_.per_item_time * batch);
  return config_.slots * batch / batch_seconds * (1.0 - service_model_.perturbations().colocation) *
         service_model_.StallFreeFraction();
}

void SlotScheduler::AccountUntil(absl::Duration t) {
  if (t <= time_) return;
  const int64_t busy = stats_.busy_slots;
  int64_t first = BoundaryAtOrBefore(time_, kSampleInterval) + 1;
  const int64_t last = BoundaryAtOrBefore(t, kSampleInterval);
  first = std::max(first, last - kSamples + 1);
  for (int64_t k = first; k <= last; ++k) {
    Sample& sample = samples_[k % kSamples];
    sample.index = k;
    sample.busy_integral = busy_integral_ + busy * (k * kSampleInterval - time_);
  }
  busy_integral_ += busy * (t - time_);
  time_ = t;
}

absl::Duration SlotScheduler::BusyIntegralAt(absl::Duration t) const {
  if (t >= time_) return busy_integral_ + stats_.busy_slots * (t - time_);
  // Only called for sampling boundaries within the ring's reach.
  const int64_t k = BoundaryAtOrBefore(t, kSampleInterval);
  const Sample& sample = samples_[k % kSamples];
  return sample.index == k ? sample.busy_integral : absl::ZeroDuration();
}

absl::Duration SlotScheduler::BatchDeadline() const {
  if (stats_.busy_slots >= config_.slots || waiting_.empty()) return absl::InfiniteDuration();
  if (static_cast<int64_t>(waiting_.size()) >= config_.max_batch) return time_;
  return waiting_.front().arrival + config_.max_queue_delay;
}

void SlotScheduler::StartDueBatches(absl::Duration t) {
  while (stats_.busy_slots < config_.slots && !waiting_.empty() &&
         (static_cast<int64_t>(waiting_.size()) >= config_.max_batch ||
          waiting_.front().arrival + config_.max_queue_delay <= t)) {
    const int batch = static_cast<int>(
        std::min<int64_t>(config_.max_batch, static_cast<int64_t>(waiting_.size())));
    double cost = 0;
    for (int i = 0; i < batch; ++i) cost = std::max(cost, waiting_[i].cost);
    const absl::Duration work =
        service_model_.Work((config_.service_time + config_.per_item_time * batch) * cost, t);
    const absl::Duration finish = service_model_.FinishAfter(t, work);
    for (int i = 0; i < batch; ++i) {
      const Waiting next = waiting_.front();
      waiting_.pop_front();
      in_service_.push_back(InService{finish, next.request_id, next.arrival, t, batch,
                                      /*ends_batch=*/i == batch - 1, service_model_.NextFails()});
      std::push_heap(in_service_.begin(), in_service_.end(), LaterFinish());
    }
    stats_.queued -= batch;
    stats_.in_service += batch;
    ++stats_.busy_slots;
    ++stats_.batches;
  }
}

void SlotScheduler::AdvanceTo(absl::Duration now, std::vector<Completion>* completed) {
  if (!started_) {
    started_ = true;
    time_ = now;
    first_time_ = now;
  }
  now = std::max(now, time_);
  while (true) {
    const absl::Duration next_finish =
        in_service_.empty() ? absl::InfiniteDuration() : in_service_.front().finish;
    absl::Duration t = std::min(next_finish, BatchDeadline());
    if (t > now) break;
    t = std::max(t, time_);
    AccountUntil(t);
    while (!in_service_.empty() && in_service_.front().finish <= t) {
      std::pop_heap(in_service_.begin(), in_service_.end(), LaterFinish());
      const InService done = in_service_.back();
      in_service_.pop_back();
      --stats_.in_service;
      if (done.ends_batch) --stats_.busy_slots;
      ++stats_.completed;
      if (done.failed) ++stats_.failed;
      stats_.total_queue_time += done.start - done.arrival;
      stats_.total_service_time += done.finish - done.start;
      completed->push_back(Completion{done.request_id, done.arrival, done.start, done.finish,
                                      done.batch_size, done.failed});
    }
    StartDueBatches(t);
  }
  AccountUntil(now);
}

SlotScheduler::Admission SlotScheduler::Arrive(uint64_t request_id, absl::Duration now,
                                               std::vector<Completion>* completed, double cost) {
  AdvanceTo(now, completed);
  ++stats_.arrived;
  waiting_.push_back(Waiting{request_id, time_, cost > 0 && std::isfinite(cost) ? cost : 1.0});
  ++stats_.queued;
  StartDueBatches(time_);
  if (waiting_.empty() || waiting_.back().request_id != request_id) return Admission::kStarted;
  if (config_.max_queue > 0 && stats_.queued > config_.max_queue) {
    waiting_.pop_back();
    --stats_.queued;
    ++stats_.rejected;
    return Admission::kRejected;
  }
  return Admission::kQueued;
}

void SlotScheduler::InjectStall(absl::Duration now, absl::Duration length,
                                std::vector<Completion>* completed) {
  AdvanceTo(now, completed);
  if (length <= absl::ZeroDuration()) return;
  service_model_.InjectStall(time_, length);
  // Shifting every finish by the same amount keeps the heap ordered.
  for (InService& request : in_service_) request.finish += length;
}

void SlotScheduler::SetSlots(int slots, absl::Duration now, std::vector<Completion>* completed) {
  AdvanceTo(now, completed);
  config_.slots = std::max(1, slots);
  StartDueBatches(time_);
}

std::optional<absl::Duration> SlotScheduler::NextEventTime() const {
  const absl::Duration next_finish =
      in_service_.empty() ? absl::InfiniteDuration() : in_service_.front().finish;
  const absl::Duration next = std::min(next_finish, BatchDeadline());
  if (next == absl::InfiniteDuration()) return std::nullopt;
  return next;
}
double SlotScheduler::Utilization(absl::Duration now) const {
  if (!started_) return 0.0;
  now = std::max(now, time_);
  // Window start: the first sampling boundary at or after now - 1 s, but not before the
  // first event (the scheduler knows nothing earlier; it was idle).
  const absl::Duration wanted = now - absl::Seconds(1);
  int64_t k = BoundaryAtOrBefore(wanted, kSampleInterval);
  if (k * kSampleInterval < wanted) ++k;
  absl::Duration from = k * kSampleInterval;
  absl::Duration integral_from;
  if (from <= first_time_) {
    from = first_time_;
    integral_from = absl::ZeroDuration();
  } else {
    integral_from = BusyIntegralAt(from);
  }
  const absl::Duration window = now - from;
  if (window <= absl::ZeroDuration()) {
    return static_cast<double>(stats_.busy_slots) / config_.slots;
  }
  const absl::Duration busy = BusyIntegralAt(now) - integral_from;
  return absl::FDivDuration(busy, window) / config_.slots;
}

}  // namespace vanguard::sim
