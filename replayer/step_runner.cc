// StepRunner implementation; see step_runner.h. Run() is called on the caller's thread and
// starts one event-loop thread per step; the two meet only in WindowMailbox.
#include "replayer/step_runner.h"

#include <deque>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "replayer/http_load_loop.h"

namespace vanguard::replayer {
namespace {

constexpr absl::Duration kCancelPollInterval = absl::Milliseconds(20);

// Closed windows travel from the loop thread (Push) to the caller's thread (Wait).
class WindowMailbox {
 public:
  void Push(std::vector<WindowTally> windows) {
    absl::MutexLock lock(&mu_);
    for (WindowTally& window : windows) windows_.push_back(std::move(window));
  }
  void MarkDone() {
    absl::MutexLock lock(&mu_);
    done_ = true;
  }
  // Waits up to `timeout` for windows or the end; returns what arrived and whether the loop
  // is done (and everything it pushed has been returned).
  std::vector<WindowTally> Wait(absl::Duration timeout, bool* done) {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !windows_.empty() || done_; };
    mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
    std::vector<WindowTally> out;
    out.reserve(windows_.size());
    for (WindowTally& window : windows_) out.push_back(std::move(window));
    windows_.clear();
    *done = done_;
    return out;
  }

 private:
  absl::Mutex mu_;
  std::deque<WindowTally> windows_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

absl::StatusOr<v1::StepResult> StepRunner::Run(const v1::RunStepRequest& request,
                                               const WindowCallback& on_window,
                                               const CancelledCallback& is_cancelled) {
  absl::StatusOr<StepConfig> config = ParseStepConfig(request);
  if (!config.ok()) return config.status();
  return Run(*config, on_window, is_cancelled);
}

absl::StatusOr<v1::StepResult> StepRunner::Run(const StepConfig& config,
                                               const WindowCallback& on_window,
                                               const CancelledCallback& is_cancelled) {
  WindowMailbox mailbox;
  HttpLoadLoop loop(
      config, [&mailbox](std::vector<WindowTally> windows) { mailbox.Push(std::move(windows)); });
  absl::Status loop_status;
  std::thread loop_thread([&] {
    loop_status = loop.Run();
    mailbox.MarkDone();
  });

  bool stopping = false;
  bool done = false;
  while (!done) {
    std::vector<WindowTally> windows = mailbox.Wait(kCancelPollInterval, &done);
    if (!stopping) {
      for (const WindowTally& window : windows) {
        if (on_window && !on_window(ToWindowMetrics(window))) {
          stopping = true;
          break;
        }
      }
      if (!stopping && is_cancelled && is_cancelled()) stopping = true;
      if (stopping && !done) loop.Stop();
    }
  }
  loop_thread.join();

  if (stopping) return absl::CancelledError("step cancelled by the caller");
  if (!loop_status.ok()) return loop_status;
  return BuildStepResult(loop.accounting().measured(), config.rate_qps, config.duration);
}

}  // namespace vanguard::replayer
