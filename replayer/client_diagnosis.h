// Names why the client-validity gate fired, from what the replayer measured of its own
// conditions during the step (ClientConditions: the event loops' run-queue wait and
// involuntary switches, the machine's busy and stolen CPU, timer wake-up lateness, new
// connections, late sends in bursts), and says whether the cause lies outside the replayer
// (pause and run the step again) or is its own (retrying as is will not help).
//
// The rule for the send-skew gate: a late send is a wake-up that came late. If the loops'
// run-queue wait covers at least half of the time they spent behind schedule (late_stall),
// the run queue explains it: CPU contention — from other processes (outside) when they, not the
// replayer, kept the CPUs busy, else the replayer's own threads (overloaded). Otherwise, in order:
// time stolen by the hypervisor (outside), timer wake-ups late from idle, new connections,
// unknown. The drop, never-dispatched and CPU-share gates are the replayer's own load;
// requests that waited for a free connection are its connection cap (named first).
//
//   ClientValidity validity = JudgeClientValidity(measured);  // calls NameClientCause
//   FillClientConditions(measured.conditions, result.mutable_client_conditions());
//
// Pure functions; any thread.
#ifndef VANGUARD_REPLAYER_CLIENT_DIAGNOSIS_H_
#define VANGUARD_REPLAYER_CLIENT_DIAGNOSIS_H_

#include "absl/time/time.h"
#include "replayer/step_accounting.h"
#include "vanguard/v1/replayer.pb.h"

namespace vanguard::replayer {

// Share of the time spent behind schedule the loops' run-queue wait must cover to blame the
// run queue.
inline constexpr double kRunQueueExplainsShare = 0.5;
// Hypervisor steal (cores, averaged over the step) worth naming.
inline constexpr double kStealWorthNaming = 0.05;
// Timed wake-ups this late at p99 are the timer's (or idle exit's) fault when the run queue
// does not explain the skew.
inline constexpr absl::Duration kLateWakeupP99 = absl::Milliseconds(1);

// Sets validity->cause and ->outside, and appends "; cause: <cause and its handling>;
// evidence: <DescribeClientConditions>" to validity->reason. Call only when
// !validity->valid; `skew_gate_fired` says whether a send-skew limit was among the reasons.
void NameClientCause(const StepTally& measured, bool skew_gate_fired, ClientValidity* validity);

// The conditions as one line, e.g. "loops waited 511.4 ms on the run queue (8.6% of their
// time, 77 involuntary switches) against 120.4 ms behind schedule in 37 sends > 1ms late (4
// in bursts); machine 2.00 of 2 CPUs busy, replayer 0.03, steal 0.00; timed wake-ups late
// p50 0.06 ms, p99 4.43 ms; 1 connections opened".
std::string DescribeClientConditions(const ClientConditions& c);

void FillClientConditions(const ClientConditions& c, v1::ClientConditions* out);

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_CLIENT_DIAGNOSIS_H_
