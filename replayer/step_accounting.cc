// Window and step accounting; see step_accounting.h. Called by one event-loop thread
// (StepAccounting) or by whoever merges and reports (the free functions).
#include "replayer/step_accounting.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/step_figures.h"
#include "google/protobuf/util/time_util.h"
#include "replayer/client_diagnosis.h"

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
  never_dispatched += other.never_dispatched;
  good += other.good;
  output_chunks += other.output_chunks;
  cpu_seconds += other.cpu_seconds;
  for (const auto& [error_class, count] : other.errors_by_class) {
    errors_by_class[error_class] += count;
  }
  latency.Merge(other.latency);
  ttft.Merge(other.ttft);
  inter_chunk.Merge(other.inter_chunk);
  send_skew.Merge(other.send_skew);
}

void ClientConditions::Merge(const ClientConditions& other) {
  loops_measured += other.loops_measured;
  loops_unknown += other.loops_unknown;
  if (unknown_reason.empty()) unknown_reason = other.unknown_reason;
  loops += other.loops;
  loop_span_ns += other.loop_span_ns;
  wakeup_late.Merge(other.wakeup_late);
  connections_opened += other.connections_opened;
  late_sends += other.late_sends;
  late_sends_in_bursts += other.late_sends_in_bursts;
  late_stall_us += other.late_stall_us;
  others += other.others;
  if (!machine_known && other.machine_known) {
    machine_known = true;
    machine = other.machine;
    machine_seconds = other.machine_seconds;
  }
}

void StepTally::Merge(const StepTally& other) {
  scheduled += other.scheduled;
  sent += other.sent;
  completed += other.completed;
  errors += other.errors;
  timeouts += other.timeouts;
  dropped += other.dropped;
  never_dispatched += other.never_dispatched;
  good += other.good;
  output_chunks += other.output_chunks;
  connection_waits += other.connection_waits;
  connection_cap += other.connection_cap;
  stale_retries += other.stale_retries;
  max_cpu_share = std::max(max_cpu_share, other.max_cpu_share);
  for (const auto& [error_class, count] : other.errors_by_class) {
    errors_by_class[error_class] += count;
  }
  latency.Merge(other.latency);
  service_latency.Merge(other.service_latency);
  send_skew.Merge(other.send_skew);
  ttft.Merge(other.ttft);
  inter_chunk.Merge(other.inter_chunk);
  conditions.Merge(other.conditions);
}

StepAccounting::StepAccounting(const WindowLayout& layout, const RequestSlo& slo)
    : layout_(layout), slo_(slo), windows_(layout.count()) {}

WindowTally& StepAccounting::WindowAt(int index) {
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
  int64_t skew_us = ToMicros(dispatched - intended);
  Window(intended).send_skew.Record(skew_us);
  if (!IsMeasured(intended)) return;
  measured_.send_skew.Record(skew_us);
  const bool late = dispatched - intended > kLateSend;
  if (late) {
    ClientConditions& c = measured_.conditions;
    ++c.late_sends;
    if (previous_send_late_) ++c.late_sends_in_bursts;
    // One stall makes every send due during it late: count its time once.
    const absl::Duration from = std::max(intended, late_until_);
    if (dispatched > from) c.late_stall_us += ToMicros(dispatched - from);
    late_until_ = std::max(late_until_, dispatched);
  }
  previous_send_late_ = late;
}

void StepAccounting::OnConnectionWait(absl::Duration intended) {
  if (IsMeasured(intended)) ++measured_.connection_waits;
}

void StepAccounting::OnStaleRetry(absl::Duration intended) {
  if (IsMeasured(intended)) ++measured_.stale_retries;
}

void StepAccounting::OnSent(absl::Duration intended, absl::Duration sent) {
  ++Window(intended).sent;
  if (IsMeasured(intended)) ++measured_.sent;
}

void StepAccounting::OnFirstChunk(absl::Duration intended, absl::Duration at) {
  int64_t ttft_us = ToMicros(at - intended);
  Window(intended).ttft.Record(ttft_us);
  if (IsMeasured(intended)) measured_.ttft.Record(ttft_us);
}

void StepAccounting::OnChunkGap(absl::Duration intended, absl::Duration gap, int64_t count) {
  if (count <= 0) return;
  int64_t gap_us = ToMicros(gap);
  Window(intended).inter_chunk.RecordN(gap_us, count);
  if (IsMeasured(intended)) measured_.inter_chunk.RecordN(gap_us, count);
}

void StepAccounting::OnSuccess(absl::Duration intended, absl::Duration sent, absl::Duration done,
                               int64_t chunks, absl::Duration first_chunk) {
  WindowTally& window = Window(intended);
  int64_t latency_us = ToMicros(done - intended);
  bool good = (slo_.latency == absl::ZeroDuration() || done - intended <= slo_.latency) &&
              (slo_.ttft == absl::ZeroDuration() ||
               (first_chunk != absl::InfiniteDuration() && first_chunk - intended <= slo_.ttft));
  ++window.completed;
  window.latency.Record(latency_us);
  window.output_chunks += chunks;
  if (good) ++window.good;
  if (IsMeasured(intended)) {
    ++measured_.completed;
    measured_.latency.Record(latency_us);
    measured_.service_latency.Record(ToMicros(done - sent));
    measured_.output_chunks += chunks;
    if (good) ++measured_.good;
  }
}

void StepAccounting::OnError(absl::Duration intended, std::string_view error_class) {
  WindowTally& window = Window(intended);
  ++window.errors;
  // Find before inserting: a std::string key is built only for the first of a class.
  auto it = window.errors_by_class.find(std::string(error_class));
  if (it == window.errors_by_class.end()) {
    window.errors_by_class.emplace(std::string(error_class), 1);
  } else {
    ++it->second;
  }
  if (IsMeasured(intended)) {
    ++measured_.errors;
    ++measured_.errors_by_class[std::string(error_class)];
  }
}

void StepAccounting::OnTimeout(absl::Duration intended) {
  WindowTally& window = Window(intended);
  ++window.timeouts;
  ++window.errors_by_class[std::string(kErrorTimeout)];
  if (IsMeasured(intended)) {
    ++measured_.timeouts;
    ++measured_.errors_by_class[std::string(kErrorTimeout)];
  }
}

void StepAccounting::OnNeverDispatched(absl::Duration intended) {
  ++Window(intended).never_dispatched;
  if (IsMeasured(intended)) ++measured_.never_dispatched;
}

void StepAccounting::OnWindowCpu(int index, double cpu_seconds) {
  if (index < next_to_take_ || index >= layout_.count()) return;
  WindowAt(index).cpu_seconds += cpu_seconds;
}

void StepAccounting::OnCpuShare(double share) {
  measured_.max_cpu_share = std::max(measured_.max_cpu_share, share);
}

void StepAccounting::OnWakeup(absl::Duration at, absl::Duration late) {
  if (!IsMeasured(at)) return;
  measured_.conditions.wakeup_late.Record(std::max<int64_t>(0, ToMicros(late)));
}

void StepAccounting::OnConnectionOpened(absl::Duration at) {
  if (IsMeasured(at)) ++measured_.conditions.connections_opened;
}

void StepAccounting::OnLoopSched(const TaskSched& during, absl::Duration span) {
  ClientConditions& c = measured_.conditions;
  ++c.loops_measured;
  c.loops += during;
  c.loop_span_ns += absl::ToInt64Nanoseconds(span);
}

void StepAccounting::OnLoopSchedUnknown(std::string_view why) {
  ClientConditions& c = measured_.conditions;
  ++c.loops_unknown;
  if (c.unknown_reason.empty()) c.unknown_reason = std::string(why);
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
  double skew_max_us = static_cast<double>(measured.send_skew.max());
  const bool skew_gate_fired = skew_p99_us > absl::ToDoubleMicroseconds(kMaxSendSkewP99) ||
                               skew_max_us > absl::ToDoubleMicroseconds(kMaxSendSkewMax);
  if (skew_p99_us > absl::ToDoubleMicroseconds(kMaxSendSkewP99)) {
    reasons.push_back(absl::StrFormat(
        "send skew p99 %.3f ms exceeds %.3f ms: the client could not keep the schedule",
        skew_p99_us / 1000.0, absl::ToDoubleMilliseconds(kMaxSendSkewP99)));
  }
  if (skew_max_us > absl::ToDoubleMicroseconds(kMaxSendSkewMax)) {
    reasons.push_back(absl::StrFormat("send skew max %.3f ms exceeds %.3f ms", skew_max_us / 1000.0,
                                      absl::ToDoubleMilliseconds(kMaxSendSkewMax)));
  }
  if (measured.never_dispatched > 0) {
    reasons.push_back(
        absl::StrCat(measured.never_dispatched, " requests scheduled but never dispatched"));
  }
  if (measured.dropped > 0) {
    reasons.push_back(absl::StrCat(measured.dropped,
                                   " requests dropped by the client's in-flight cap (never sent)"));
  }
  if (measured.connection_waits > 0) {
    reasons.push_back(
        absl::StrCat(measured.connection_waits, " requests waited for a free connection (all ",
                     measured.connection_cap, " of the step's connections were busy)"));
  }
  if (measured.max_cpu_share > kMaxClientCpuShare) {
    reasons.push_back(absl::StrFormat(
        "client CPU %.0f%% of a core over a %s span exceeds %.0f%%", measured.max_cpu_share * 100,
        absl::FormatDuration(kCpuShareSpan), kMaxClientCpuShare * 100));
  }
  validity.valid = reasons.empty();
  validity.late_only = reasons.size() == 1 &&
                       skew_p99_us > absl::ToDoubleMicroseconds(kMaxSendSkewP99) &&
                       skew_max_us <= absl::ToDoubleMicroseconds(kMaxSendSkewMax);
  for (const std::string& reason : reasons) {
    if (!validity.reason.empty()) validity.reason += "; ";
    validity.reason += reason;
  }
  if (!validity.valid) NameClientCause(measured, skew_gate_fired, &validity);
  return validity;
}

std::string_view HttpErrorClass(int status) {
  static const std::vector<std::string>* const kNames = [] {
    auto* names = new std::vector<std::string>();
    for (int code = 0; code < 1000; ++code) names->push_back(absl::StrCat("http_", code));
    return names;
  }();
  if (status < 0 || status >= 1000) return "http_invalid";
  return (*kNames)[status];
}

v1::LatencySummary Summarize(const LatencyHistogram& h) { return SummarizeLatency(h); }

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
  metrics.set_censored(window.censored());
  metrics.set_never_dispatched(window.never_dispatched);
  metrics.set_good(window.good);
  for (const auto& [error_class, count] : window.errors_by_class) {
    (*metrics.mutable_errors_by_class())[error_class] = count;
  }
  if (window.ttft.count() > 0) {
    *metrics.mutable_ttft() = Summarize(window.ttft);
    metrics.set_ttft_histogram(window.ttft.Serialize());
  }
  if (window.inter_chunk.count() > 0) {
    *metrics.mutable_inter_chunk() = Summarize(window.inter_chunk);
    metrics.set_inter_chunk_histogram(window.inter_chunk.Serialize());
  }
  metrics.set_output_chunks(window.output_chunks);
  if (window.send_skew.count() > 0) {
    metrics.set_send_skew_p99_us(window.send_skew.Percentile(99.0));
    metrics.set_send_skew_histogram(window.send_skew.Serialize());
  }
  if (window.latency.count() > 0) metrics.set_latency_histogram(window.latency.Serialize());
  double seconds = absl::ToDoubleSeconds(window.span.end - window.span.start);
  if (seconds > 0) {
    metrics.set_offered_qps(static_cast<double>(window.scheduled) / seconds);
    metrics.set_achieved_qps(static_cast<double>(window.completed) / seconds);
    metrics.set_client_cpu_cores(window.cpu_seconds / seconds);
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
  result.set_censored(measured.censored());
  result.set_never_dispatched(measured.never_dispatched);
  result.set_good(measured.good);
  result.set_goodput(measured.scheduled > 0 ? static_cast<double>(measured.good) /
                                                  static_cast<double>(measured.scheduled)
                                            : 0.0);
  if (measured.ttft.count() > 0) {
    *result.mutable_ttft() = Summarize(measured.ttft);
    result.set_ttft_histogram(measured.ttft.Serialize());
  }
  if (measured.inter_chunk.count() > 0) {
    *result.mutable_inter_chunk() = Summarize(measured.inter_chunk);
    result.set_inter_chunk_histogram(measured.inter_chunk.Serialize());
  }
  if (measured.send_skew.count() > 0) {
    result.set_send_skew_histogram(measured.send_skew.Serialize());
  }
  result.set_output_chunks(measured.output_chunks);
  result.set_connection_waits(measured.connection_waits);
  result.set_connection_cap(measured.connection_cap);
  result.set_stale_connection_retries(measured.stale_retries);
  result.set_max_client_cpu_share(measured.max_cpu_share);
  for (const auto& [error_class, count] : measured.errors_by_class) {
    (*result.mutable_errors_by_class())[error_class] = count;
  }
  result.set_latency_histogram(measured.latency.Serialize());
  result.set_service_latency_histogram(measured.service_latency.Serialize());
  if (measured.send_skew.count() > 0) {
    result.set_send_skew_p50_us(measured.send_skew.Percentile(50.0));
    result.set_send_skew_p99_us(measured.send_skew.Percentile(99.0));
    result.set_send_skew_max_us(static_cast<double>(measured.send_skew.max()));
  }
  ClientValidity validity = JudgeClientValidity(measured);
  result.set_client_valid(validity.valid);
  result.set_client_invalid_reason(validity.reason);
  result.set_client_invalid_cause(validity.cause);
  result.set_client_invalid_outside(validity.outside);
  result.set_client_invalid_late_only(validity.late_only);
  FillClientConditions(measured.conditions, result.mutable_client_conditions());
  *result.mutable_measured() = google::protobuf::util::TimeUtil::NanosecondsToDuration(
      absl::ToInt64Nanoseconds(measured_duration));
  return result;
}

}  // namespace vanguard::replayer
