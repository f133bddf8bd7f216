// Merging the shards of one step; see shard_merge.h.
#include "worker/shard_merge.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/histogram.h"
#include "common/step_figures.h"
#include "worker/proto_time.h"

namespace vanguard::worker {
namespace {

// Merges serialized histograms exactly; the first that cannot be read makes status() an error
// naming whose it was.
class HistogramSum {
 public:
  void Add(const std::string& serialized, const std::string& whose) {
    if (serialized.empty()) return;
    absl::StatusOr<LatencyHistogram> h = LatencyHistogram::Deserialize(serialized);
    if (!h.ok()) {
      if (status_.ok()) {
        status_ = absl::DataLossError(
            absl::StrCat(whose, ": unreadable histogram: ", h.status().message()));
      }
      return;
    }
    sum_.Merge(*h);
  }
  const LatencyHistogram& sum() const { return sum_; }
  const absl::Status& status() const { return status_; }
  // The summary and the serialization, only when something was recorded.
  template <typename Setter>
  void Fill(vanguard::v1::LatencySummary* summary, Setter set_serialized) const {
    if (sum_.count() == 0) return;
    *summary = SummarizeLatency(sum_);
    set_serialized(sum_.Serialize());
  }

 private:
  LatencyHistogram sum_;
  absl::Status status_;
};

void AddCounts(const google::protobuf::Map<std::string, int64_t>& from,
               google::protobuf::Map<std::string, int64_t>* to) {
  for (const auto& [error_class, count] : from) (*to)[error_class] += count;
}

std::string ShardName(const ShardResult& shard, size_t i, size_t k) {
  return absl::StrCat("replayer ", shard.replayer, " (shard ", i + 1, " of ", k, ")");
}

void AddDuration(const google::protobuf::Duration& from, google::protobuf::Duration* to) {
  *to = ToProtoDuration(FromProtoDuration(*to) + FromProtoDuration(from));
}

// Sums what adds up over replayers; the figures read without a histogram (wake-up lateness,
// the machine's) are the worst shard's.
void MergeConditions(const vanguard::v1::ClientConditions& c, const std::string& whose,
                     vanguard::v1::ClientConditions* out) {
  out->set_scheduler_known(out->scheduler_known() && c.scheduler_known());
  if (!c.scheduler_known() && out->unknown_reason().empty()) {
    out->set_unknown_reason(absl::StrCat(whose, ": ", c.unknown_reason()));
  }
  AddDuration(c.loop_run_queue_wait(), out->mutable_loop_run_queue_wait());
  AddDuration(c.other_run_queue_wait(), out->mutable_other_run_queue_wait());
  AddDuration(c.behind_schedule(), out->mutable_behind_schedule());
  out->set_loop_nonvoluntary_switches(out->loop_nonvoluntary_switches() +
                                      c.loop_nonvoluntary_switches());
  out->set_loop_timeslices(out->loop_timeslices() + c.loop_timeslices());
  out->set_other_nonvoluntary_switches(out->other_nonvoluntary_switches() +
                                       c.other_nonvoluntary_switches());
  out->set_wakeups(out->wakeups() + c.wakeups());
  out->set_connections_opened(out->connections_opened() + c.connections_opened());
  out->set_late_sends(out->late_sends() + c.late_sends());
  out->set_late_sends_in_bursts(out->late_sends_in_bursts() + c.late_sends_in_bursts());
  out->set_replayer_cpu_cores(out->replayer_cpu_cores() + c.replayer_cpu_cores());
  out->set_machine_cpus(std::max(out->machine_cpus(), c.machine_cpus()));
  out->set_machine_busy_cores(std::max(out->machine_busy_cores(), c.machine_busy_cores()));
  out->set_machine_steal_cores(std::max(out->machine_steal_cores(), c.machine_steal_cores()));
  out->set_wakeup_late_p50_us(std::max(out->wakeup_late_p50_us(), c.wakeup_late_p50_us()));
  out->set_wakeup_late_p99_us(std::max(out->wakeup_late_p99_us(), c.wakeup_late_p99_us()));
  out->set_wakeup_late_max_us(std::max(out->wakeup_late_max_us(), c.wakeup_late_max_us()));
}

// The gate counts per shard: one invalid shard makes the step invalid, named in the reason.
void MergeValidity(const std::vector<ShardResult>& shards, vanguard::v1::StepResult* out) {
  bool valid = true, outside = true, late_only = true;
  std::string reason;
  vanguard::v1::ClientInvalidCause cause = vanguard::v1::CLIENT_INVALID_CAUSE_UNSPECIFIED;
  for (size_t i = 0; i < shards.size(); ++i) {
    const vanguard::v1::StepResult& r = shards[i].result;
    if (r.client_valid()) continue;
    if (valid) cause = r.client_invalid_cause();
    valid = false;
    outside = outside && r.client_invalid_outside();
    late_only = late_only && r.client_invalid_late_only();
    absl::StrAppend(&reason, reason.empty() ? "" : "; ", ShardName(shards[i], i, shards.size()),
                    ": ", r.client_invalid_reason());
  }
  out->set_client_valid(valid);
  out->set_client_invalid_reason(reason);
  out->set_client_invalid_cause(cause);
  out->set_client_invalid_outside(!valid && outside);
  out->set_client_invalid_late_only(!valid && late_only);
}

// Endpoints by target, in the order they first appear.
absl::Status MergeEndpoints(const std::vector<ShardResult>& shards, double seconds,
                            vanguard::v1::StepResult* out) {
  std::map<std::string, int> index;
  std::vector<HistogramSum> latency;
  for (size_t i = 0; i < shards.size(); ++i) {
    for (const vanguard::v1::EndpointTelemetry& e : shards[i].result.endpoints()) {
      auto [it, added] = index.emplace(e.target(), out->endpoints_size());
      if (added) {
        out->add_endpoints()->set_target(e.target());
        latency.emplace_back();
      }
      vanguard::v1::EndpointTelemetry* m = out->mutable_endpoints(it->second);
      m->set_dispatched(m->dispatched() + e.dispatched());
      m->set_sent(m->sent() + e.sent());
      m->set_completed(m->completed() + e.completed());
      m->set_errors(m->errors() + e.errors());
      m->set_timeouts(m->timeouts() + e.timeouts());
      m->set_peak_in_flight(m->peak_in_flight() + e.peak_in_flight());
      latency[it->second].Add(e.latency_histogram(), ShardName(shards[i], i, shards.size()));
    }
  }
  std::vector<int64_t> dispatched;
  int64_t total = 0;
  for (const vanguard::v1::EndpointTelemetry& e : out->endpoints()) total += e.dispatched();
  for (int i = 0; i < out->endpoints_size(); ++i) {
    if (!latency[i].status().ok()) return latency[i].status();
    vanguard::v1::EndpointTelemetry* e = out->mutable_endpoints(i);
    dispatched.push_back(e->dispatched());
    e->set_achieved_qps(seconds > 0 ? static_cast<double>(e->completed()) / seconds : 0);
    e->set_share(total > 0 ? static_cast<double>(e->dispatched()) / static_cast<double>(total) : 0);
    latency[i].Fill(e->mutable_latency(), [e](std::string s) { e->set_latency_histogram(s); });
  }
  out->set_endpoint_imbalance(LoadImbalance(dispatched));
  return absl::OkStatus();
}

vanguard::v1::ShardTelemetry TelemetryOf(const ShardResult& shard, int index) {
  const vanguard::v1::StepResult& r = shard.result;
  vanguard::v1::ShardTelemetry t;
  t.set_replayer(shard.replayer);
  t.set_shard(index);
  t.set_scheduled(r.scheduled());
  t.set_sent(r.sent());
  t.set_completed(r.completed());
  t.set_errors(r.errors());
  t.set_timeouts(r.timeouts());
  t.set_dropped(r.dropped());
  t.set_achieved_qps(r.achieved_qps());
  *t.mutable_latency() = r.latency();
  t.set_send_skew_p99_us(r.send_skew_p99_us());
  t.set_client_valid(r.client_valid());
  t.set_client_invalid_reason(r.client_invalid_reason());
  return t;
}

// The request counts a window and a step share (the same field names in both messages).
template <typename Counts>
void SumCounts(const Counts& from, Counts* out) {
  out->set_scheduled(out->scheduled() + from.scheduled());
  out->set_sent(out->sent() + from.sent());
  out->set_completed(out->completed() + from.completed());
  out->set_errors(out->errors() + from.errors());
  out->set_timeouts(out->timeouts() + from.timeouts());
  out->set_dropped(out->dropped() + from.dropped());
  out->set_censored(out->censored() + from.censored());
  out->set_never_dispatched(out->never_dispatched() + from.never_dispatched());
  out->set_good(out->good() + from.good());
  out->set_output_chunks(out->output_chunks() + from.output_chunks());
  AddCounts(from.errors_by_class(), out->mutable_errors_by_class());
}

void SumStepCounts(const vanguard::v1::StepResult& r, vanguard::v1::StepResult* out) {
  SumCounts(r, out);
  out->set_threads(out->threads() + r.threads());
  out->set_connection_waits(out->connection_waits() + r.connection_waits());
  out->set_stale_connection_retries(out->stale_connection_retries() + r.stale_connection_retries());
  out->set_connection_cap(out->connection_cap() + r.connection_cap());
  out->set_max_client_cpu_share(std::max(out->max_client_cpu_share(), r.max_client_cpu_share()));
}

}  // namespace

absl::StatusOr<vanguard::v1::StepResult> MergeShardResults(const std::vector<ShardResult>& shards) {
  if (shards.empty()) return absl::InvalidArgumentError("no shard results to merge");
  const vanguard::v1::StepResult& first = shards.front().result;
  vanguard::v1::StepResult out;
  out.set_target_qps(first.target_qps());
  *out.mutable_measured() = first.measured();
  out.set_closed_loop(first.closed_loop());
  out.set_endpoint_policy(first.endpoint_policy());
  out.mutable_client_conditions()->set_scheduler_known(true);
  HistogramSum latency, service, skew, ttft, inter_chunk;
  bool every_service = true;  // older replayers send no service-latency histogram
  for (size_t i = 0; i < shards.size(); ++i) {
    const vanguard::v1::StepResult& r = shards[i].result;
    const std::string whose = ShardName(shards[i], i, shards.size());
    SumStepCounts(r, &out);
    *out.add_shards() = TelemetryOf(shards[i], static_cast<int>(i));
    latency.Add(r.latency_histogram(), whose);
    service.Add(r.service_latency_histogram(), whose);
    every_service = every_service && (r.completed() == 0 || !r.service_latency_histogram().empty());
    skew.Add(r.send_skew_histogram(), whose);
    ttft.Add(r.ttft_histogram(), whose);
    inter_chunk.Add(r.inter_chunk_histogram(), whose);
    MergeConditions(r.client_conditions(), whose, out.mutable_client_conditions());
  }
  for (const HistogramSum* h : {&latency, &service, &skew, &ttft, &inter_chunk}) {
    if (!h->status().ok()) return h->status();
  }
  const double seconds = absl::ToDoubleSeconds(FromProtoDuration(out.measured()));
  out.set_achieved_qps(seconds > 0 ? static_cast<double>(out.completed()) / seconds : 0);
  out.set_goodput(out.scheduled() > 0
                      ? static_cast<double>(out.good()) / static_cast<double>(out.scheduled())
                      : 0);
  *out.mutable_latency() = SummarizeLatency(latency.sum());
  out.set_latency_histogram(latency.sum().Serialize());
  if (every_service) {
    service.Fill(out.mutable_service_latency(),
                 [&out](std::string s) { out.set_service_latency_histogram(s); });
  }
  ttft.Fill(out.mutable_ttft(), [&out](std::string s) { out.set_ttft_histogram(s); });
  inter_chunk.Fill(out.mutable_inter_chunk(),
                   [&out](std::string s) { out.set_inter_chunk_histogram(s); });
  if (skew.sum().count() > 0) {
    out.set_send_skew_histogram(skew.sum().Serialize());
    out.set_send_skew_p50_us(skew.sum().Percentile(50.0));
    out.set_send_skew_p99_us(skew.sum().Percentile(99.0));
    out.set_send_skew_max_us(static_cast<double>(skew.sum().max()));
  }
  MergeValidity(shards, &out);
  if (absl::Status s = MergeEndpoints(shards, seconds, &out); !s.ok()) return s;
  return out;
}

absl::StatusOr<vanguard::v1::WindowMetrics> MergeShardWindows(
    const std::vector<vanguard::v1::WindowMetrics>& windows) {
  if (windows.empty()) return absl::InvalidArgumentError("no shard windows to merge");
  vanguard::v1::WindowMetrics out;
  out.set_index(windows.front().index());
  out.set_warmup(windows.front().warmup());
  HistogramSum latency, skew, ttft, inter_chunk;
  for (size_t i = 0; i < windows.size(); ++i) {
    const vanguard::v1::WindowMetrics& w = windows[i];
    if (w.index() != out.index()) {
      return absl::InvalidArgumentError(
          absl::StrCat("shard windows of different indices: ", out.index(), " and ", w.index()));
    }
    const std::string whose = absl::StrCat("window ", w.index(), " of shard ", i + 1);
    SumCounts(w, &out);
    // Rates over the same span add up, as the counts behind them do.
    out.set_offered_qps(out.offered_qps() + w.offered_qps());
    out.set_achieved_qps(out.achieved_qps() + w.achieved_qps());
    out.set_client_cpu_cores(out.client_cpu_cores() + w.client_cpu_cores());
    latency.Add(w.latency_histogram(), whose);
    skew.Add(w.send_skew_histogram(), whose);
    ttft.Add(w.ttft_histogram(), whose);
    inter_chunk.Add(w.inter_chunk_histogram(), whose);
  }
  for (const HistogramSum* h : {&latency, &skew, &ttft, &inter_chunk}) {
    if (!h->status().ok()) return h->status();
  }
  latency.Fill(out.mutable_latency(), [&out](std::string s) { out.set_latency_histogram(s); });
  ttft.Fill(out.mutable_ttft(), [&out](std::string s) { out.set_ttft_histogram(s); });
  inter_chunk.Fill(out.mutable_inter_chunk(),
                   [&out](std::string s) { out.set_inter_chunk_histogram(s); });
  if (skew.sum().count() > 0) {
    out.set_send_skew_histogram(skew.sum().Serialize());
    out.set_send_skew_p99_us(skew.sum().Percentile(99.0));
  }
  return out;
}

}  // namespace vanguard::worker
