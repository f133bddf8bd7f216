// The simulated predictor's slot/queue model; see slot_scheduler.h. Called from one strand.
#include "tests/simulator/slot_scheduler.h"

#include <algorithm>
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
  return absl::OkStatus();
}

// Number of the last sampling boundary at or before t.
int64_t BoundaryAtOrBefore(absl::Duration t, absl::Duration interval) {
  absl::Duration remainder;  // this Abseil release writes it unconditionally: never nullptr
  return absl::IDivDuration(absl::Floor(t, interval), interval, &remainder);
}

}  // namespace

absl::StatusOr<SlotScheduler> SlotScheduler::Create(const Config& config) {
  if (absl::Status status = ValidateConfig(config); !status.ok()) return status;
  return SlotScheduler(config);
}

SlotScheduler::SlotScheduler(const Config& config) : config_(config) {
  if (absl::Status status = ValidateConfig(config); !status.ok()) {
    std::cerr << "SlotScheduler: " << status << "\n";
    std::abort();
  }
}

double SlotScheduler::TrueCapacityRps() const {
  return config_.slots / absl::ToDoubleSeconds(config_.service_time);
}

void SlotScheduler::AccountUntil(absl::Duration t) {
  if (t <= time_) return;
  const int64_t busy = stats_.in_service;
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
  if (t >= time_) return busy_integral_ + stats_.in_service * (t - time_);
  // Only called for sampling boundaries within the ring's reach.
  const int64_t k = BoundaryAtOrBefore(t, kSampleInterval);
  const Sample& sample = samples_[k % kSamples];
  return sample.index == k ? sample.busy_integral : absl::ZeroDuration();
}

void SlotScheduler::StartService(uint64_t request_id, absl::Duration arrival,
                                 absl::Duration start) {
  in_service_.push(InService{request_id, arrival, start, start + config_.service_time});
  ++stats_.in_service;
}

void SlotScheduler::AdvanceTo(absl::Duration now, std::vector<Completion>* completed) {
  if (!started_) {
    started_ = true;
    time_ = now;
    first_time_ = now;
  }
  now = std::max(now, time_);
  while (!in_service_.empty() && in_service_.top().finish <= now) {
    const InService done = in_service_.top();
    in_service_.pop();
    AccountUntil(done.finish);
    --stats_.in_service;
    ++stats_.completed;
    stats_.total_queue_time += done.start - done.arrival;
    stats_.total_service_time += done.finish - done.start;
    completed->push_back(Completion{done.request_id, done.arrival, done.start, done.finish});
    if (!waiting_.empty()) {
      const Waiting next = waiting_.front();
      waiting_.pop_front();
      --stats_.queued;
      StartService(next.request_id, next.arrival, done.finish);
    }
  }
  AccountUntil(now);
}

SlotScheduler::Admission SlotScheduler::Arrive(uint64_t request_id, absl::Duration now,
                                               std::vector<Completion>* completed) {
  AdvanceTo(now, completed);
  ++stats_.arrived;
  if (stats_.in_service < config_.slots) {
    StartService(request_id, time_, time_);
    return Admission::kStarted;
  }
  if (config_.max_queue > 0 && stats_.queued >= config_.max_queue) {
    ++stats_.rejected;
    return Admission::kRejected;
  }
  waiting_.push_back(Waiting{request_id, time_});
  ++stats_.queued;
  return Admission::kQueued;
}

std::optional<absl::Duration> SlotScheduler::NextCompletionTime() const {
  if (in_service_.empty()) return std::nullopt;
  return in_service_.top().finish;
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
    return static_cast<double>(stats_.in_service) / config_.slots;
  }
  const absl::Duration busy = BusyIntegralAt(now) - integral_from;
  return absl::FDivDuration(busy, window) / config_.slots;
}

}  // namespace vanguard::sim
