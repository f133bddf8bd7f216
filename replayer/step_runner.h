// StepRunner: runs one replayer step end to end — validates the request, resolves its
// endpoints, runs one LoadLoop per configured thread (each its own shard of the schedule,
// spread over the endpoints by the step's endpoint policy), merges their windows exactly
// (histograms merged, never averaged) and hands each merged window to the caller as soon as
// every loop has closed it, and returns the merged StepResult with per-endpoint telemetry
// (StepResult.endpoints, endpoint_imbalance). It is the whole replayer minus
// transport: the gRPC service and the `vanguard-replayer run` command are thin adapters over it.
//
//   StepRunner runner;
//   absl::StatusOr<v1::StepResult> result = runner.Run(
//       request,
//       [&](const v1::WindowMetrics& w) { return writer->Write(...); },  // false: stop
//       [&] { return context->IsCancelled(); });
//
// It also reads, for the client-validity gate's cause (client_diagnosis.h), the replayer's
// other threads' scheduler counters and the machine's CPU (/proc/self/task, /proc/stat) from
// the start of the measured part to the end of the step; the loops read their own.
//
// Run() blocks the calling thread for the step (warmup + duration, plus up to
// request_timeout for the last responses); callbacks run on that same calling thread, never
// on the event loop, so a slow consumer cannot disturb pacing. A StepRunner may run one step
// at a time; use one per concurrent caller.
#ifndef VANGUARD_REPLAYER_STEP_RUNNER_H_
#define VANGUARD_REPLAYER_STEP_RUNNER_H_

#include <functional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/target_policy.h"
#include "replayer/load_loop.h"
#include "replayer/proc_sched.h"
#include "replayer/protocol_binding.h"
#include "replayer/step_accounting.h"
#include "replayer/step_config.h"
#include "vanguard/v1/replayer.pb.h"

namespace vanguard::replayer {

class StepRunner {
 public:
  // `proc`: where the step's process-wide and machine-wide scheduler readings come from
  // (proc_sched.h), also handed to every loop; null: the real /proc. Must outlive the runner.
  // `policy`: where load may go (common/target_policy.h), checked on the address the
  // target resolves to before any connection; the default admits loopback only.
  explicit StepRunner(const ProcReader* proc = nullptr,
                      TargetPolicy policy = TargetPolicy::Default())
      : proc_(proc != nullptr ? proc : &DefaultProcReader()), policy_(std::move(policy)) {}

  // Returns false to stop the step (e.g. the stream to the caller is gone).
  using WindowCallback = std::function<bool(const v1::WindowMetrics&)>;
  // Polled every few tens of milliseconds; true stops the step promptly.
  using CancelledCallback = std::function<bool()>;

  // Errors: INVALID_ARGUMENT (naming the field) / UNIMPLEMENTED for a bad request (also:
  // several endpoints with a protocol that brings its own transport, e.g. KServe v2 gRPC),
  // UNAVAILABLE when the target host does not resolve, CANCELLED when stopped by either
  // callback. Connection and HTTP failures are not errors of Run: they are counted in the
  // result. So is a target the policy refuses: the step runs its schedule, connects to
  // nothing, and counts every request as an error of class "target_refused"
  // (kErrorTargetRefused); last_refusal() then says why.
  absl::StatusOr<v1::StepResult> Run(const v1::RunStepRequest& request,
                                     const WindowCallback& on_window,
                                     const CancelledCallback& is_cancelled);
  absl::StatusOr<v1::StepResult> Run(const StepConfig& config, const WindowCallback& on_window,
                                     const CancelledCallback& is_cancelled);
  // With an explicit binding (tests, or callers that bring their own source/handler).
  absl::StatusOr<v1::StepResult> Run(const StepConfig& config, const ProtocolBinding& binding,
                                     const WindowCallback& on_window,
                                     const CancelledCallback& is_cancelled);

  // The merged measured tally of the last successful Run (for tests and benchmarks that
  // need the raw histograms, e.g. send skew).
  const StepTally& last_tally() const { return last_tally_; }
  // Why the policy refused the last Run's target (names the host, address and rule); OK
  // when it did not.
  const absl::Status& last_refusal() const { return last_refusal_; }

 private:
  // Run after the endpoints were resolved and judged (targets[i] is config.endpoints[i]).
  absl::StatusOr<v1::StepResult> RunResolved(const StepConfig& config,
                                             const ProtocolBinding& binding,
                                             const std::vector<TargetAddress>& targets,
                                             const WindowCallback& on_window,
                                             const CancelledCallback& is_cancelled);

  const ProcReader* proc_;
  TargetPolicy policy_;
  StepTally last_tally_;
  absl::Status last_refusal_;
};

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_STEP_RUNNER_H_
