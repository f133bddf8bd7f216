// Lease, run, repeat. See lease_loop.h.
#include "worker/lease_loop.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "worker/proto_time.h"

namespace vanguard::worker {
namespace {
constexpr absl::Duration kWaitSlice = absl::Milliseconds(100);
}  // namespace

LeaseLoop::LeaseLoop(OrchestratorClient* orchestrator, TestRunner* runner, Clock* clock,
                     LeaseLoopOptions options)
    : orchestrator_(orchestrator), runner_(runner), clock_(clock), options_(std::move(options)) {}

void LeaseLoop::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_requested_ = true;
  }
  lease_cancel_.Cancel();
  runner_->Stop();
}

bool LeaseLoop::stopped() const {
  absl::MutexLock lock(&mu_);
  return stop_requested_;
}

int LeaseLoop::tests_run() const {
  absl::MutexLock lock(&mu_);
  return tests_run_;
}

void LeaseLoop::Wait(absl::Duration d) {
  SleepUnless(clock_, d, kWaitSlice, [this] { return stopped(); });
}

TestRunOutcome LeaseLoop::RunLeased(const vanguard::v1::LeaseTestResponse& lease) {
  if (options_.metrics != nullptr) {
    options_.metrics->RecordLeaseTaken();
    options_.metrics->RecordTestStarted(lease.test().id());
  }
  const TestRunOutcome outcome = runner_->Run(lease);
  if (options_.metrics != nullptr) options_.metrics->RecordTestFinished(outcome);
  return outcome;
}

void LeaseLoop::Run() {
  vanguard::v1::LeaseTestRequest request;
  request.set_worker_id(options_.worker_id);
  *request.mutable_lease_duration() = ToProtoDuration(options_.lease_duration);
  *request.mutable_wait() = ToProtoDuration(options_.lease_wait);

  absl::Duration backoff = options_.initial_backoff;
  bool reported_unreachable = false;
  while (!stopped()) {
    absl::StatusOr<vanguard::v1::LeaseTestResponse> lease =
        orchestrator_->LeaseTest(request, &lease_cancel_);
    if (stopped()) {
      // A test leased just as Stop() came: the stopped runner gives it straight back.
      if (lease.ok() && lease->has_test()) {
        const TestRunOutcome outcome = RunLeased(*lease);
        if (options_.log) {
          options_.log(
              absl::StrCat("test ", lease->test().id(), ": ", TestRunOutcomeName(outcome)));
        }
      }
      return;
    }
    if (!lease.ok()) {
      // Log the first failure and then only when the backoff grows, not every retry.
      if (!reported_unreachable || backoff < options_.max_backoff) {
        if (options_.log) {
          options_.log(absl::StrCat("lease failed (", lease.status().ToString(), "); retrying in ",
                                    absl::FormatDuration(backoff)));
        }
        reported_unreachable = true;
      }
      Wait(backoff);
      backoff = std::min(backoff * 2, options_.max_backoff);
      continue;
    }
    backoff = options_.initial_backoff;
    if (reported_unreachable && options_.log) options_.log("orchestrator reachable again");
    reported_unreachable = false;
    if (!lease->has_test()) {
      Wait(options_.poll_interval);
      continue;
    }

    const TestRunOutcome outcome = RunLeased(*lease);
    int tests_run;
    {
      absl::MutexLock lock(&mu_);
      tests_run = ++tests_run_;
    }
    if (options_.log) {
      options_.log(absl::StrCat("test ", lease->test().id(), ": ", TestRunOutcomeName(outcome)));
    }
    if (options_.max_tests > 0 && tests_run >= options_.max_tests) return;
  }
}

}  // namespace vanguard::worker
