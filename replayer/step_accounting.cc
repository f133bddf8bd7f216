// Window and step accounting; see step_accounting.h. Called by one event-loop thread
// (StepAccounting) or by whoever merges and reports (the free functions).
#include "replayer/step_accounting.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/time_util.h"

namespace vanguard::replayer {
namespace {

int64_t ToMicros(absl::Duration d) { return std::max<int64_t>(0, absl::ToInt64Microseconds(d)); }

int WindowsIn(absl::Duration length, absl::Duration window) {
  if (length <= absl::ZeroDuration()) return 0;
  return static_cast<int>(absl::Ceil(length, window) / window);
}

}  // namespace

WindowLayout::WindowLayout(absl::Duration warmup, absl::Duration duration, absl::Duration window)
    : warmup_(warmup),
      duration_(duration),
      window_(window),
      warmup_windows_(WindowsIn(warmup, window)),
      measured_windows_(WindowsIn(duration, window)) {}

int WindowLayout::IndexOf(absl::Duration intended) const {
  if (count() == 0) return 0;
  if (intended < warmup_) {
    if (intended < absl::ZeroDuration()) return 0;
    return std::min<int>(static_cast<int>(intended / window_), warmup_windows_ - 1);
  }
  int64_t k = (intended - warmup_) / window_;
  return warmup_windows_ + static_cast<int>(std::min<int64_t>(k, measured_windows_ - 1));
}

WindowSpan WindowLayout::Span(int index) const {
  WindowSpan span;
  span.index = index;
  if (index < warmup_windows_) {
    span.warmup = true;
    span.start = window_ * index;
    span.end = std::min(span.start + window_, warmup_);
  } else {
    span.warmup = false;
    span.start = warmup_ + window_ * (index - warmup_windows_);
    span.end = std::min(span.start + window_, warmup_ + duration_);
  }
  return span;
}

void WindowTally::Merge(const WindowTally& other) {
  scheduled += other.scheduled;
  sent += other.sent;
  completed += other.completed;
  errors += other.errors;
  timeouts += other.timeouts;
  dropped += other.dropped;
  latency.Merge(other.latency);
}

void StepTally::Merge(const StepTally& other) {
  scheduled += other.scheduled;
  sent += other.sent;
  completed += other.completed;
  errors += other.errors;
  timeouts += other.timeouts;
  dropped += other.dropped;
  for (const auto& [error_class, count] : other.errors_by_class) {
    errors_by_class[error_class] += count;
  }
  latency.Merge(other.latency);
  service_latency.Merge(other.service_latency);
  send_skew.Merge(other.send_skew);
}

StepAccounting::StepAccounting(const WindowLayout& layout)
    : layout_(layout), windows_(layout.count()) {}

WindowTally& StepAccounting::Window(absl::Duration intended) {
  int index = layout_.IndexOf(intended);
  std::unique_ptr<WindowTally>& window = windows_[index];
  if (window == nullptr) {
    // A request for an already-taken window would be an accounting bug in the caller
    // (windows close only when all their requests are resolved); recreate rather than crash,
    // and the duplicate index shows in the stream.
    window = std::make_unique<WindowTally>();
    window->span = layout_.Span(index);
  }
  return *window;
}

void StepAccounting::OnScheduled(absl::Duration intended) {
  ++Window(intended).scheduled;
  if (IsMeasured(intended)) ++measured_.scheduled;
}

void StepAccounting::OnDropped(absl::Duration intended) {
  ++Window(intended).dropped;
  if (IsMeasured(intended)) ++measured_.dropped;
}

void StepAccounting::OnDispatched(absl::Duration intended, absl::Duration dispatched) {
  if (IsMeasured(intended)) measured_.send_skew.Record(ToMicros(dispatched - intended));
}

void StepAccounting::OnSent(absl::Duration intended, absl::Duration sent) {
  ++Window(intended).sent;
  if (IsMeasured(intended)) ++measured_.sent;
}

void StepAccounting::OnSuccess(absl::Duration intended, absl::Duration sent, absl::Duration done) {
  WindowTally& window = Window(intended);
  ++window.completed;
  window.latency.Record(ToMicros(done - intended));
  if (IsMeasured(intended)) {
    ++measured_.completed;
    measured_.latency.Record(ToMicros(done - intended));
    measured_.service_latency.Record(ToMicros(done - sent));
  }
}

void StepAccounting::OnError(absl::Duration intended, std::string_view error_class) {
  ++Window(intended).errors;
  if (IsMeasured(intended)) {
    ++measured_.errors;
    ++measured_.errors_by_class[std::string(error_class)];
  }
}

void StepAccounting::OnTimeout(absl::Duration intended) {
  ++Window(intended).timeouts;
  if (IsMeasured(intended)) {
    ++measured_.timeouts;
    ++measured_.errors_by_class[std::string(kErrorTimeout)];
  }
}

std::vector<WindowTally> StepAccounting::TakeClosedWindows(absl::Duration schedule_position) {
  std::vector<WindowTally> closed;
  while (next_to_take_ < layout_.count()) {
    WindowSpan span = layout_.Span(next_to_take_);
    if (span.end > schedule_position) break;
    std::unique_ptr<WindowTally>& window = windows_[next_to_take_];
    if (window != nullptr && window->resolved() < window->scheduled) break;
    if (window == nullptr) {
      closed.emplace_back().span = span;  // nothing was scheduled in it
    } else {
      closed.push_back(std::move(*window));
      window.reset();
    }
    ++next_to_take_;
  }
  return closed;
}

ClientValidity JudgeClientValidity(const StepTally& measured) {
  ClientValidity validity;
  std::vector<std::string> reasons;
  double skew_p99_us = measured.send_skew.Percentile(99.0);
  if (skew_p99_us > absl::ToDoubleMicroseconds(kMaxSendSkewP99)) {
    reasons.push_back(absl::StrFormat(
        "send skew p99 %.3f ms exceeds %.3f ms: the client could not keep the schedule",
        skew_p99_us / 1000.0, absl::ToDoubleMilliseconds(kMaxSendSkewP99)));
  }
  if (measured.dropped > 0) {
    reasons.push_back(absl::StrCat(measured.dropped,
                                   " requests dropped by the client's in-flight cap (never sent)"));
  }
  validity.valid = reasons.empty();
  for (const std::string& reason : reasons) {
    if (!validity.reason.empty()) validity.reason += "; ";
    validity.reason += reason;
  }
  return validity;
}

v1::LatencySummary Summarize(const LatencyHistogram& h) {
  v1::LatencySummary summary;
  if (h.count() == 0) return summary;
  summary.set_p50_ms(h.Percentile(50.0) / 1000.0);
  summary.set_p90_ms(h.Percentile(90.0) / 1000.0);
  summary.set_p99_ms(h.Percentile(99.0) / 1000.0);
  summary.set_p999_ms(h.Percentile(99.9) / 1000.0);
  summary.set_max_ms(static_cast<double>(h.max()) / 1000.0);
  summary.set_mean_ms(h.mean() / 1000.0);
  return summary;
}

v1::WindowMetrics ToWindowMetrics(const WindowTally& window) {
  v1::WindowMetrics metrics;
  metrics.set_index(window.span.index);
  metrics.set_warmup(window.span.warmup);
  metrics.set_scheduled(window.scheduled);
  metrics.set_sent(window.sent);
  metrics.set_completed(window.completed);
  metrics.set_errors(window.errors);
  metrics.set_timeouts(window.timeouts);
  metrics.set_dropped(window.dropped);
  double seconds = absl::ToDoubleSeconds(window.span.end - window.span.start);
  if (seconds > 0) {
    metrics.set_offered_qps(static_cast<double>(window.scheduled) / seconds);
    metrics.set_achieved_qps(static_cast<double>(window.completed) / seconds);
  }
  *metrics.mutable_latency() = Summarize(window.latency);
  return metrics;
}

v1::StepResult BuildStepResult(const StepTally& measured, double target_qps,
                               absl::Duration measured_duration) {
  v1::StepResult result;
  result.set_target_qps(target_qps);
  double seconds = absl::ToDoubleSeconds(measured_duration);
  result.set_achieved_qps(seconds > 0 ? static_cast<double>(measured.completed) / seconds : 0.0);
  *result.mutable_latency() = Summarize(measured.latency);
  *result.mutable_service_latency() = Summarize(measured.service_latency);
  result.set_scheduled(measured.scheduled);
  result.set_sent(measured.sent);
  result.set_completed(measured.completed);
  result.set_errors(measured.errors);
  result.set_timeouts(measured.timeouts);
  result.set_dropped(measured.dropped);
  for (const auto& [error_class, count] : measured.errors_by_class) {
    (*result.mutable_errors_by_class())[error_class] = count;
  }
  result.set_latency_histogram(measured.latency.Serialize());
  if (measured.send_skew.count() > 0) {
    result.set_send_skew_p50_us(measured.send_skew.Percentile(50.0));
    result.set_send_skew_p99_us(measured.send_skew.Percentile(99.0));
    result.set_send_skew_max_us(static_cast<double>(measured.send_skew.max()));
  }
  ClientValidity validity = JudgeClientValidity(measured);
  result.set_client_valid(validity.valid);
  result.set_client_invalid_reason(validity.reason);
  *result.mutable_measured() = google::protobuf::util::TimeUtil::NanosecondsToDuration(
      absl::ToInt64Nanoseconds(measured_duration));
  return result;
}

}  // namespace vanguard::replayer
