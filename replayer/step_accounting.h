// Honest accounting for one step: which window every request belongs to, what happened to
// it, and what the step as a whole measured. Pure (no I/O, no clock): every method takes
// offsets from the step's start that the caller measured, so tests drive it directly.
//
// Rules (the numbers everything else rests on):
//  * A request belongs to the window of its *intended* send time, whenever it completes.
//  * The step is cut into windows of `window` length: first the warmup part, from 0 to
//    `warmup` (its last window truncated at `warmup`), then the measured part, from `warmup`
//    to `warmup + duration` (its last window truncated at the end). So every window that
//    starts before warmup ends is a warmup window, and the measured part is exactly
//    `duration` long. Warmup windows are streamed but excluded from the StepResult.
//  * Each scheduled request ends in exactly one of: dropped (refused by the in-flight cap,
//    never sent), completed (HTTP 2xx), error (class "http_<status>", "connect", "write",
//    "read"), timeout (still open `request_timeout` after its intended time, censored). So
//    scheduled == dropped + completed + errors + timeouts once a window is closed.
//  * `latency` is completion time - intended send time (what a user of the service waits,
//    including any time the request spent waiting for the client); `service_latency` is
//    completion time - actual send time (the coordinated-omission-prone number, kept only for
//    comparison); both only for completed (2xx) requests. Errors and timeouts are counted,
//    not timed: a fast 500 must not make latency look better.
//  * Send skew is dispatch time - intended send time: how late the pacing loop itself was.
//    Waiting for a free connection is not skew (it is the server being slow and shows up in
//    `latency`); skew measures only the client's own defect.
//  * achieved_qps = completed requests of the measured part / measured duration.
//
// A window is closed (final, emitted) once the schedule has passed its end and every request
// in it is resolved; windows close in index order.
//
//   StepAccounting accounting(WindowLayout(warmup, duration, window));
//   accounting.OnScheduled(intended);
//   accounting.OnDispatched(intended, now);  // or OnDropped(intended)
//   accounting.OnSent(intended, now);
//   accounting.OnSuccess(intended, sent, now);
//   for (WindowTally& w : accounting.TakeClosedWindows(schedule.Peek())) emit(w);
//   v1::StepResult result = BuildStepResult(accounting.measured(), rate, duration);
//
// Not thread-safe: one StepAccounting per event loop. WindowTally and StepTally merge
// exactly, so several loops can each keep one and the runner merges them by window index.
#ifndef VANGUARD_REPLAYER_STEP_ACCOUNTING_H_
#define VANGUARD_REPLAYER_STEP_ACCOUNTING_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "common/histogram.h"
#include "replayer/proc_sched.h"
#include "vanguard/v1/replayer.pb.h"

namespace vanguard::replayer {

// Client-validity gate (seed 003 section 2). A step is reported client_valid = false (and
// the worker must not judge it) when, over its measured part:
//  * the p99 of send skew (dispatch - intended) exceeds kMaxSendSkewP99, or its max exceeds
//    kMaxSendSkewMax: the pacing loop could not keep the schedule, so the offered load was
//    not the one asked for;
//  * any request was scheduled but never dispatched (the loop fell more than a request
//    timeout behind, or the step was stopped with requests still to send);
//  * any request was dropped because in-flight reached max_in_flight: the client refused
//    load it was asked to offer;
//  * any request waited for a free connection (all of the step's connections were busy):
//    the client queued load the model never saw; or
//  * one event loop used more than kMaxClientCpuShare of a core over some 5 s span: a
//    client that busy cannot be trusted to read responses promptly.
inline constexpr absl::Duration kMaxSendSkewP99 = absl::Milliseconds(5);
inline constexpr absl::Duration kMaxSendSkewMax = absl::Milliseconds(50);
inline constexpr double kMaxClientCpuShare = 0.70;
inline constexpr absl::Duration kCpuShareSpan = absl::Seconds(5);
// A send this late (dispatch - intended) is a "late send" in ClientConditions.
inline constexpr absl::Duration kLateSend = absl::Milliseconds(1);

// Error classes other than "http_<status>".
inline constexpr std::string_view kErrorConnect = "connect";
inline constexpr std::string_view kErrorWrite = "write";
inline constexpr std::string_view kErrorRead = "read";
inline constexpr std::string_view kErrorTimeout = "timeout";           // also counted in `timeouts`
inline constexpr std::string_view kErrorBadResponse = "bad_response";  // not valid HTTP/1.1
inline constexpr std::string_view kErrorMalformedStream = "malformed_stream";

// A per-request SLO for counting "good" requests (goodput). Zero durations are not checked.
struct RequestSlo {
  absl::Duration latency;  // completion - intended
  absl::Duration ttft;     // first content chunk - intended (streams)
};

struct WindowSpan {
  int index = 0;
  bool warmup = false;
  absl::Duration start;
  absl::Duration end;
};

// Where the windows of a step are. Cheap value type.
class WindowLayout {
 public:
  WindowLayout(absl::Duration warmup, absl::Duration duration, absl::Duration window);
  int count() const { return warmup_windows_ + measured_windows_; }
  // The window an intended offset falls in; offsets outside [0, warmup + duration) clamp.
  int IndexOf(absl::Duration intended) const;
  WindowSpan Span(int index) const;
  absl::Duration warmup() const { return warmup_; }
  absl::Duration duration() const { return duration_; }

 private:
  absl::Duration warmup_;
  absl::Duration duration_;
  absl::Duration window_;
  int warmup_windows_;
  int measured_windows_;
};

// What one window counted. Merge() is exact (for several event loops).
struct WindowTally {
  WindowSpan span;
  int64_t scheduled = 0;
  int64_t sent = 0;
  int64_t completed = 0;
  int64_t errors = 0;
  int64_t timeouts = 0;
  int64_t dropped = 0;
  int64_t never_dispatched = 0;
  int64_t good = 0;           // completed within the RequestSlo
  int64_t output_chunks = 0;  // streams
  double cpu_seconds = 0;     // the client's own CPU over the window's wall time
  std::map<std::string, int64_t> errors_by_class;  // includes "timeout"
  LatencyHistogram latency;      // from intended send time, completed requests only
  LatencyHistogram ttft;         // first content chunk - intended, us (streams)
  LatencyHistogram inter_chunk;  // gaps between content chunks, us (streams)
  LatencyHistogram send_skew;    // dispatch - intended, us

  // Censored = still open when the client gave up on it (its timeout): the timeouts.
  int64_t censored() const { return timeouts; }
  int64_t resolved() const { return dropped + completed + errors + timeouts + never_dispatched; }
  void Merge(const WindowTally& other);
};

// What the client saw of its own conditions over the measured part: the evidence
// client_diagnosis.h names a cause from. The loops fill the first part; the StepRunner, which
// sees the whole process and the machine, the second. Merge() sums the loops' parts.
struct ClientConditions {
  // Scheduler counters of the event-loop threads over their measured part, summed, and the
  // summed length of those parts. A loop that could not read /proc counts as unknown.
  int loops_measured = 0;
  int loops_unknown = 0;
  std::string unknown_reason;
  TaskSched loops;
  int64_t loop_span_ns = 0;
  // How late timed sleeps of the loops woke (after the time asked), us.
  LatencyHistogram wakeup_late;
  int64_t connections_opened = 0;
  // Sends later than kLateSend; those right after another late send of the same loop; and
  // the time the loop was behind schedule with them (the union of their [intended,
  // dispatched] spans: a stall that made ten sends late counts once), us.
  int64_t late_sends = 0;
  int64_t late_sends_in_bursts = 0;
  int64_t late_stall_us = 0;
  // Set by the StepRunner: the replayer's other threads (present from the start of the
  // measured part to the end of the step), and the machine over that span.
  TaskSched others;
  bool machine_known = false;
  MachineCpu machine;  // a difference of two readings
  double machine_seconds = 0;

  bool scheduler_known() const { return loops_measured > 0 && loops_unknown == 0; }
  void Merge(const ClientConditions& other);
};

// Totals over the measured part (warmup windows excluded). Merge() is exact.
struct StepTally {
  int64_t scheduled = 0;
  int64_t sent = 0;
  int64_t completed = 0;
  int64_t errors = 0;  // excludes timeouts
  int64_t timeouts = 0;
  int64_t dropped = 0;
  int64_t never_dispatched = 0;
  int64_t good = 0;
  int64_t output_chunks = 0;
  // Requests that waited for a free connection, and the connections the loops allowed
  // (their caps summed by Merge).
  int64_t connection_waits = 0;
  int64_t connection_cap = 0;
  // Requests sent again on a new connection: their reused one was closed by the server
  // before any byte of the response came back (an idle keep-alive timeout racing the send).
  int64_t stale_retries = 0;
  // Highest CPU share of one core any event loop used over a kCpuShareSpan of the measured
  // part. Merge takes the max (the gate is about the busiest loop).
  double max_cpu_share = 0;
  std::map<std::string, int64_t> errors_by_class;  // includes "timeout"
  LatencyHistogram latency;                        // completion - intended, us
  LatencyHistogram service_latency;                // completion - actual send, us
  LatencyHistogram send_skew;                      // dispatch - intended, us
  LatencyHistogram ttft;                           // streams, us
  LatencyHistogram inter_chunk;                    // streams, us
  ClientConditions conditions;

  int64_t censored() const { return timeouts; }
  void Merge(const StepTally& other);
};

class StepAccounting {
 public:
  explicit StepAccounting(const WindowLayout& layout, const RequestSlo& slo = {});

  // Once for every request the schedule issues, before any other call for it.
  void OnScheduled(absl::Duration intended);
  // Refused by the in-flight cap; never sent. Terminal.
  void OnDropped(absl::Duration intended);
  // Handed to the connection pool (sent now, or queued for a free connection).
  void OnDispatched(absl::Duration intended, absl::Duration dispatched);
  // After OnDispatched: every connection was busy, so it waits for one.
  void OnConnectionWait(absl::Duration intended);
  // The loop's connection cap, once (summed over loops in the result).
  void SetConnectionCap(int64_t cap) { measured_.connection_cap = cap; }
  // After OnSent: its reused connection was found closed by the server before any response
  // byte, and it is sent again on a new connection (its OnSent is not repeated).
  void OnStaleRetry(absl::Duration intended);
  // Its bytes started going on the wire.
  void OnSent(absl::Duration intended, absl::Duration sent);
  // Streams: the response's first content chunk arrived at `at`; later, `count` more chunks
  // arrived `gap` after the previous one (the engine passes a zero gap for chunks that came
  // in the same read).
  void OnFirstChunk(absl::Duration intended, absl::Duration at);
  void OnChunkGap(absl::Duration intended, absl::Duration gap, int64_t count = 1);
  // Terminal outcomes. `chunks` and `first_chunk` describe a stream (0 and
  // InfiniteDuration otherwise); they decide "good" against the SLO's TTFT limit.
  void OnSuccess(absl::Duration intended, absl::Duration sent, absl::Duration done,
                 int64_t chunks = 0, absl::Duration first_chunk = absl::InfiniteDuration());
  void OnError(absl::Duration intended, std::string_view error_class);
  void OnTimeout(absl::Duration intended);
  // Its intended time came but it was never handed to the connection pool (the loop was a
  // whole request timeout late). Terminal.
  void OnNeverDispatched(absl::Duration intended);

  // The client's own CPU: `cpu_seconds` spent during window `index` (before it is taken),
  // and the share of a core over one kCpuShareSpan of the measured part.
  void OnWindowCpu(int index, double cpu_seconds);
  void OnCpuShare(double share);

  // The client's conditions (ClientConditions), measured part only: a timed sleep that ended
  // at `at` woke `late` after the time it asked for; a connection was opened at `at`; the
  // loop's scheduler counters over its measured part of length `span` (or why they could not
  // be read).
  void OnWakeup(absl::Duration at, absl::Duration late);
  void OnConnectionOpened(absl::Duration at);
  void OnLoopSched(const TaskSched& during, absl::Duration span);
  void OnLoopSchedUnknown(std::string_view why);

  // Moves out, in index order, every not-yet-taken window that is closed: it ends at or
  // before `schedule_position` (the intended offset of the next request not yet issued;
  // absl::InfiniteDuration() once the schedule is exhausted) and all its requests are
  // resolved.
  std::vector<WindowTally> TakeClosedWindows(absl::Duration schedule_position);

  // True once every window has been taken.
  bool all_windows_taken() const { return next_to_take_ >= layout_.count(); }
  const StepTally& measured() const { return measured_; }
  const WindowLayout& layout() const { return layout_; }

 private:
  WindowTally& Window(absl::Duration intended) { return WindowAt(layout_.IndexOf(intended)); }
  WindowTally& WindowAt(int index);
  bool IsMeasured(absl::Duration intended) const { return intended >= layout_.warmup(); }

  WindowLayout layout_;
  RequestSlo slo_;
  // Created when first touched, released when taken: only open windows hold histograms.
  std::vector<std::unique_ptr<WindowTally>> windows_;
  int next_to_take_ = 0;
  StepTally measured_;
  bool previous_send_late_ = false;  // the last measured dispatch was a late send
  absl::Duration late_until_;        // end of the last late send's span
};

struct ClientValidity {
  bool valid = true;
  std::string reason;  // empty when valid
  // When !valid: the most likely cause, and whether it lies outside the replayer (pause and
  // retry); see client_diagnosis.h.
  v1::ClientInvalidCause cause = v1::CLIENT_INVALID_CAUSE_UNSPECIFIED;
  bool outside = false;
  // When !valid: the send-skew p99 is the only gate that fired (see
  // StepResult.client_invalid_late_only).
  bool late_only = false;
};
ClientValidity JudgeClientValidity(const StepTally& measured);

// Latency percentiles in ms from a microsecond histogram (common/step_figures.h).
v1::LatencySummary Summarize(const LatencyHistogram& histogram_us);
v1::WindowMetrics ToWindowMetrics(const WindowTally& window);
v1::StepResult BuildStepResult(const StepTally& measured, double target_qps,
                               absl::Duration measured_duration);

// The "http_<status>" error class, without allocating for common codes.
std::string_view HttpErrorClass(int status);

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_STEP_ACCOUNTING_H_
