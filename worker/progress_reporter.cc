// Live progress of the step in flight; see progress_reporter.h. The test runner's thread.
#include "worker/progress_reporter.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "worker/proto_time.h"

namespace vanguard::worker {
ProgressReporter::ProgressReporter(Sender send, Clock* clock, int64_t test_id, int32_t attempt,
                                   absl::Duration test_started, ProgressReporterOptions options)
    : send_(std::move(send)),
      clock_(clock),
      test_id_(test_id),
      attempt_(attempt),
      test_started_(test_started),
      options_(std::move(options)) {}

void ProgressReporter::StartStep(int step_index, double offered_qps, absl::Duration planned,
                                 std::optional<int> steps_left, int steps_done) {
  in_step_ = true;
  step_index_ = step_index;
  offered_qps_ = offered_qps;
  planned_ = planned;
  steps_left_ = steps_left;
  steps_done_ = steps_done;
  step_started_ = clock_->Monotonic();
  next_window_index_ = 0;
  step_scheduled_ = 0;
  step_errors_ = 0;
  health_ = vanguard::v1::HEALTH_STATE_UNSPECIFIED;
  batch_.clear();
  dirty_ = true;
  MaybeSend();
}

void ProgressReporter::OnWindow(const vanguard::v1::StepWindow& window) {
  if (!in_step_ || stopped_) return;
  vanguard::v1::StepWindow& w = batch_.emplace_back(window);
  w.set_index(next_window_index_++);
  step_scheduled_ += window.scheduled();
  step_errors_ += window.errors() + window.timeouts();
  health_ = window.warmup() ? vanguard::v1::HEALTH_STATE_UNSPECIFIED : window.health_state();
  if (static_cast<int>(batch_.size()) > options_.max_batch_windows) {
    batch_.erase(batch_.begin(),
                 batch_.begin() + (static_cast<int>(batch_.size()) - options_.max_batch_windows));
  }
  dirty_ = true;
  MaybeSend();
}

void ProgressReporter::EndStep() {
  in_step_ = false;
  batch_.clear();
  dirty_ = false;
}

vanguard::v1::ReportProgressRequest ProgressReporter::BuildRequest(absl::Duration now) const {
  vanguard::v1::ReportProgressRequest request;
  request.set_test_id(test_id_);
  request.set_attempt(attempt_);
  request.set_worker_id(options_.worker_id);
  vanguard::v1::TestProgress* p = request.mutable_progress();
  p->set_step_index(step_index_);
  p->set_offered_qps(offered_qps_);
  p->set_health_state(health_);
  const absl::Duration step_elapsed = std::max(now - step_started_, absl::ZeroDuration());
  const absl::Duration step_remaining = std::max(planned_ - step_elapsed, absl::ZeroDuration());
  *p->mutable_elapsed() = ToProtoDuration(std::max(now - test_started_, absl::ZeroDuration()));
  *p->mutable_step_elapsed() = ToProtoDuration(step_elapsed);
  *p->mutable_step_remaining() = ToProtoDuration(step_remaining);
  if (steps_left_.has_value()) {
    // The steps to come take what the finished ones took on average (settling included),
    // or the planned time when none has finished yet.
    const absl::Duration mean_step =
        steps_done_ > 0
            ? std::max(step_started_ - test_started_, absl::ZeroDuration()) / steps_done_
            : planned_;
    *p->mutable_test_remaining() = ToProtoDuration(step_remaining + *steps_left_ * mean_step);
  }
  p->set_step_scheduled(step_scheduled_);
  p->set_step_errors(step_errors_);
  for (const vanguard::v1::StepWindow& w : batch_) *p->add_windows() = w;
  return request;
}

void ProgressReporter::MaybeSend() {
  if (!in_step_ || stopped_ || !dirty_) return;
  const absl::Duration now = clock_->Monotonic();
  if (now < next_send_) return;
  ++calls_;
  const absl::Status status = send_(BuildRequest(now), options_.rpc_timeout);
  if (status.ok()) {
    if (failing_) Log(absl::StrCat("test ", test_id_, ": progress reports go through again"));
    failing_ = false;
    batch_.clear();
    dirty_ = false;
    next_send_ = now + options_.min_interval;
    return;
  }
  switch (status.code()) {
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnimplemented:
      stopped_ = true;
      batch_.clear();
      Log(absl::StrCat("test ", test_id_, ": progress reports stopped: ", status.ToString()));
      return;
    case absl::StatusCode::kInvalidArgument:
      // The orchestrator refuses these windows; the next ones may do.
      batch_.clear();
      dirty_ = false;
      next_send_ = now + options_.min_interval;
      Log(absl::StrCat("test ", test_id_, ": progress report refused: ", status.ToString()));
      return;
    default:
      if (!failing_) {
        Log(absl::StrCat("test ", test_id_, ": progress report failed, will retry in ",
                         absl::FormatDuration(options_.retry_after_failure), ": ",
                         status.ToString()));
      }
      failing_ = true;
      next_send_ = now + options_.retry_after_failure;
      return;
  }
}

void ProgressReporter::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

}  // namespace vanguard::worker
