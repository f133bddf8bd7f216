// Heartbeats for one leased test. See lease_keeper.h.
#include "worker/lease_keeper.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "worker/proto_time.h"

namespace vanguard::worker {

LeaseKeeper::LeaseKeeper(OrchestratorClient* orchestrator, Clock* clock, int64_t test_id,
                         int32_t attempt, LeaseKeeperOptions options,
                         CancellationToken* step_cancel)
    : orchestrator_(orchestrator),
      clock_(clock),
      test_id_(test_id),
      attempt_(attempt),
      options_(std::move(options)),
      interval_(options_.lease_duration / 3),
      step_cancel_(step_cancel) {
  absl::MutexLock lock(&mu_);
  // The lease was granted (or extended) just now.
  next_beat_ = clock_->Monotonic() + interval_;
}

LeaseKeeper::~LeaseKeeper() { StopBackgroundBeats(); }

void LeaseKeeper::MaybeBeat() {
  {
    absl::MutexLock lock(&mu_);
    if (beat_in_flight_ || lease_lost_ || clock_->Monotonic() < next_beat_) return;
    beat_in_flight_ = true;
  }
  Beat();
}

void LeaseKeeper::Beat() {
  vanguard::v1::HeartbeatRequest request;
  request.set_test_id(test_id_);
  request.set_attempt(attempt_);
  request.set_worker_id(options_.worker_id);
  *request.mutable_lease_duration() = ToProtoDuration(options_.lease_duration);
  absl::StatusOr<vanguard::v1::HeartbeatResponse> response = orchestrator_->Heartbeat(request);

  bool cancel_step = false;
  std::string message;
  {
    absl::MutexLock lock(&mu_);
    beat_in_flight_ = false;
    if (response.ok()) {
      next_beat_ = clock_->Monotonic() + interval_;
      if (response->cancel_requested() && !cancel_requested_) {
        cancel_requested_ = true;
        cancel_step = true;
        message = absl::StrCat("test ", test_id_, ": cancel requested");
      }
    } else if (absl::IsFailedPrecondition(response.status()) ||
               absl::IsNotFound(response.status())) {
      lease_lost_ = true;
      cancel_step = true;
      message = absl::StrCat("test ", test_id_, ": lease lost (", response.status().ToString(),
                             "); abandoning");
    } else {
      // Transient (orchestrator restarting...): try again sooner than a full interval.
      next_beat_ = clock_->Monotonic() + interval_ / 3;
      message = absl::StrCat("test ", test_id_,
                             ": heartbeat failed, will retry: ", response.status().ToString());
    }
  }
  if (cancel_step && step_cancel_ != nullptr) step_cancel_->Cancel();
  if (!message.empty() && options_.log) options_.log(message);
}

bool LeaseKeeper::cancel_requested() const {
  absl::MutexLock lock(&mu_);
  return cancel_requested_;
}

bool LeaseKeeper::lease_lost() const {
  absl::MutexLock lock(&mu_);
  return lease_lost_;
}

void LeaseKeeper::StartBackgroundBeats() {
  if (background_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    stop_background_ = false;
  }
  background_ = std::thread([this] { BackgroundLoop(); });
}

void LeaseKeeper::StopBackgroundBeats() {
  {
    absl::MutexLock lock(&mu_);
    stop_background_ = true;
  }
  if (background_.joinable()) background_.join();
}

void LeaseKeeper::BackgroundLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stop_background_), options_.background_tick);
      if (stop_background_) return;
    }
    MaybeBeat();
  }
}

}  // namespace vanguard::worker
