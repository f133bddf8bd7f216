// The client-validity gate's causes; see client_diagnosis.h.
#include "replayer/client_diagnosis.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/time_util.h"

namespace vanguard::replayer {
namespace {

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// Cores the replayer itself used over the machine reading's span; 0 when unknown.
double ReplayerCores(const ClientConditions& c) {
  if (c.machine_seconds <= 0) return 0;
  return static_cast<double>(c.loops.cpu_ns + c.others.cpu_ns) / 1e9 / c.machine_seconds;
}

}  // namespace

void NameClientCause(const StepTally& measured, bool skew_gate_fired, ClientValidity* validity) {
  const ClientConditions& c = measured.conditions;
  std::string cause;
  validity->outside = false;
  if (measured.connection_waits > 0) {
    validity->cause = v1::CLIENT_INVALID_CAUSE_CONNECTION_CAP;
    cause = absl::StrCat(
        "the client's connection cap (", measured.connection_cap,
        "): HTTP/1.1 needs a connection per request in flight, about rate x latency; raise "
        "max_connections or the replayer's open-file limit");
  } else if (!skew_gate_fired || measured.max_cpu_share > kMaxClientCpuShare) {
    validity->cause = v1::CLIENT_INVALID_CAUSE_CLIENT_OVERLOADED;
    cause = "the replayer's own load (more event-loop threads or replayers would carry it)";
  } else if (c.scheduler_known() && c.late_stall_us > 0 &&
             static_cast<double>(c.loops.run_queue_wait_ns) / 1000.0 >=
                 kRunQueueExplainsShare * static_cast<double>(c.late_stall_us)) {
    const double ours = ReplayerCores(c);
    if (!c.machine_known || c.machine.busy_cores() - ours >= ours) {
      validity->cause = v1::CLIENT_INVALID_CAUSE_CPU_CONTENTION;
      validity->outside = true;
      cause =
          "CPU contention from other processes (the event loops waited on the run queue while "
          "others held the CPUs), outside the replayer: pause and retry";
    } else {
      validity->cause = v1::CLIENT_INVALID_CAUSE_CLIENT_OVERLOADED;
      cause = "CPU contention among the replayer's own threads";
    }
  } else if (c.machine_known && c.machine.steal_cores() >= kStealWorthNaming) {
    validity->cause = v1::CLIENT_INVALID_CAUSE_CPU_STEAL;
    validity->outside = true;
    cause = "CPU time stolen by the hypervisor, outside the replayer: pause and retry";
  } else if (c.wakeup_late.count() > 0 &&
             c.wakeup_late.Percentile(99.0) >= absl::ToDoubleMicroseconds(kLateWakeupP99)) {
    validity->cause = v1::CLIENT_INVALID_CAUSE_TIMER_WAKEUP;
    cause =
        "timed wake-ups came late while the run queue did not explain it (the machine's timer "
        "or idle-exit latency)";
  } else if (c.connections_opened > 0 && c.connections_opened * 4 >= c.late_sends) {
    validity->cause = v1::CLIENT_INVALID_CAUSE_CONNECTION_CHURN;
    cause = absl::StrFormat(
        "%d new connections during the step (the server closes them, or answers too slowly "
        "for the pool)",
        c.connections_opened);
  } else {
    validity->cause = v1::CLIENT_INVALID_CAUSE_UNKNOWN;
    cause = "unknown (no run-queue wait, steal, timer lateness or connection churn stood out)";
  }
  absl::StrAppend(&validity->reason, "; cause: ", cause,
                  "; evidence: ", DescribeClientConditions(c));
}

std::string DescribeClientConditions(const ClientConditions& c) {
  std::vector<std::string> parts;
  const std::string late =
      absl::StrFormat("%.1f ms behind schedule in %d sends > %s late (%d in bursts)",
                      static_cast<double>(c.late_stall_us) / 1000.0, c.late_sends,
                      absl::FormatDuration(kLateSend), c.late_sends_in_bursts);
  if (c.scheduler_known()) {
    parts.push_back(absl::StrFormat(
        "loops waited %.1f ms on the run queue (%.1f%% of their time, %d involuntary switches) "
        "against %s",
        Ms(c.loops.run_queue_wait_ns),
        c.loop_span_ns > 0 ? 100.0 * static_cast<double>(c.loops.run_queue_wait_ns) /
                                 static_cast<double>(c.loop_span_ns)
                           : 0.0,
        c.loops.nonvoluntary_switches, late));
  } else {
    parts.push_back(absl::StrCat("scheduler counters unknown (", c.unknown_reason, "); ", late));
  }
  if (c.machine_known) {
    parts.push_back(absl::StrFormat("machine %.2f of %d CPUs busy, replayer %.2f, steal %.2f",
                                    c.machine.busy_cores(), c.machine.cpus, ReplayerCores(c),
                                    c.machine.steal_cores()));
  }
  if (c.wakeup_late.count() > 0) {
    parts.push_back(absl::StrFormat("timed wake-ups late p50 %.2f ms, p99 %.2f ms",
                                    c.wakeup_late.Percentile(50.0) / 1000.0,
                                    c.wakeup_late.Percentile(99.0) / 1000.0));
  }
  parts.push_back(absl::StrCat(c.connections_opened, " connections opened"));
  return absl::StrJoin(parts, "; ");
}

void FillClientConditions(const ClientConditions& c, v1::ClientConditions* out) {
  using google::protobuf::util::TimeUtil;
  out->set_scheduler_known(c.scheduler_known());
  if (!c.scheduler_known()) out->set_unknown_reason(c.unknown_reason);
  *out->mutable_loop_run_queue_wait() = TimeUtil::NanosecondsToDuration(c.loops.run_queue_wait_ns);
  out->set_loop_nonvoluntary_switches(c.loops.nonvoluntary_switches);
  out->set_loop_timeslices(c.loops.timeslices);
  *out->mutable_other_run_queue_wait() =
      TimeUtil::NanosecondsToDuration(c.others.run_queue_wait_ns);
  out->set_other_nonvoluntary_switches(c.others.nonvoluntary_switches);
  if (c.machine_known) {
    out->set_machine_cpus(c.machine.cpus);
    out->set_machine_busy_cores(c.machine.busy_cores());
    out->set_machine_steal_cores(c.machine.steal_cores());
    out->set_replayer_cpu_cores(ReplayerCores(c));
  }
  if (c.wakeup_late.count() > 0) {
    out->set_wakeup_late_p50_us(c.wakeup_late.Percentile(50.0));
    out->set_wakeup_late_p99_us(c.wakeup_late.Percentile(99.0));
    out->set_wakeup_late_max_us(static_cast<double>(c.wakeup_late.max()));
  }
  out->set_wakeups(c.wakeup_late.count());
  out->set_connections_opened(c.connections_opened);
  out->set_late_sends(c.late_sends);
  out->set_late_sends_in_bursts(c.late_sends_in_bursts);
  *out->mutable_behind_schedule() = TimeUtil::MicrosecondsToDuration(c.late_stall_us);
}

}  // namespace vanguard::replayer
