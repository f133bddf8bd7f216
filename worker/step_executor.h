// Runs one step on the replayer: builds the RunStepRequest for a leased test and rate,
// calls Replayer.RunStep (server streaming), and collects the per-window metrics and the
// final StepResult.
//
//   StepExecutor executor(replayer_stub.get(), Clock::Real());
//   ASSIGN_OR_RETURN(RunStepRequest req, StepExecutor::BuildRequest(test, 400, /*index=*/2));
//   ASSIGN_OR_RETURN(ExecutedStep step, executor.Execute(req, &cancel, on_window));
//
// Called from the test runner's thread; the CancellationToken may be cancelled from any
// thread and stops the stream promptly.
#ifndef VANGUARD_WORKER_STEP_EXECUTOR_H_
#define VANGUARD_WORKER_STEP_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "vanguard/v1/replayer.grpc.pb.h"
#include "vanguard/v1/replayer.pb.h"
#include "vanguard/v1/test.pb.h"
#include "worker/cancellation.h"

namespace vanguard::worker {

// What one RunStep call produced.
struct ExecutedStep {
  vanguard::v1::RunStepRequest request;
  vanguard::v1::StepResult result;
  // Every streamed window, warmup included, in arrival order (kept for per-window storage).
  std::vector<vanguard::v1::WindowMetrics> windows;
  absl::Time start_time;
  absl::Time end_time;
};

// What ReplayerClient::BeginTest settled on for one test.
struct TestReplayers {
  // Set when the test runs on fewer replayers than it wants (a DNS pool that did not reach
  // the count in time, a shorter fixed list), in words, for the test's result.
  std::string shortfall;
};

// The error class a replayer counts every request of a step under when its target policy
// (--allowed_targets) refused the step's target.
inline constexpr char kTargetRefusedClass[] = "target_refused";

// What runs one RunStepRequest on the replayer side and collects it: one replayer
// (StepExecutor) or several sharing the step (ReplayerPool, replayer_pool.h). The
// MeasuredStepRunner and the TestRunner depend on this interface only.
class ReplayerClient {
 public:
  using WindowCallback = std::function<void(const vanguard::v1::WindowMetrics&)>;

  virtual ~ReplayerClient() = default;

  // Called by the test runner at the start of each test, before its first step, with the
  // number of replayers the test wants (TestSpec.replayers; 0: no wish) and the test's
  // token (nullable; cancelled when the test is cancelled or the worker stops): a pool that
  // resolves a DNS name resolves it again here, waiting for `wanted_replayers` of them
  // (replayer_set.h). An error fails the test before any step runs; CANCELLED when `cancel`
  // fired. Default: nothing to do.
  virtual absl::StatusOr<TestReplayers> BeginTest(int wanted_replayers, CancellationToken* cancel) {
    return TestReplayers{};
  }

  // Runs the step. `cancel` (nullable) stops it from another thread; `on_window`
  // (nullable) sees each window as it arrives, in index order, on the calling thread.
  // Errors as StepExecutor::Execute documents; never a partial ExecutedStep.
  virtual absl::StatusOr<ExecutedStep> Execute(const vanguard::v1::RunStepRequest& request,
                                               CancellationToken* cancel,
                                               const WindowCallback& on_window) = 0;
};

struct StepExecutorOptions {
  // Added to warmup + duration + request timeout to form the RunStep deadline: covers
  // connection setup and draining the last requests.
  absl::Duration deadline_margin = absl::Seconds(10);
};

class StepExecutor : public ReplayerClient {
 public:
  static constexpr absl::Duration kDefaultRequestTimeout = absl::Seconds(10);

  // `replayer` and `clock` must outlive the executor.
  StepExecutor(vanguard::v1::Replayer::StubInterface* replayer, Clock* clock,
               StepExecutorOptions options = {});

  // The request for step `step_index` of `test` at `rate_qps`: model endpoints[0] as
  // target and, when the model lists several, all of them as targets with the spec's
  // endpoint_policy (unspecified: the replayer's default, round robin; for KServe v2 gRPC,
  // which the replayer cannot spread, single on endpoints[0]); served_name (or name) as
  // model_name, request_template as body; duration,
  // warmup (default: the model's), request timeout (default 10 s) and schedule from the
  // spec; a seed derived from the test id and step index. INVALID_ARGUMENT naming the
  // field when the test cannot be run (no endpoint, no step_duration, bad rate).
  static absl::StatusOr<vanguard::v1::RunStepRequest> BuildRequest(const vanguard::v1::Test& test,
                                                                   double rate_qps, int step_index);

  // Deterministic, distinct per (test, step) so a rerun replays the same schedule.
  static uint64_t StepSeed(int64_t test_id, int step_index);

  // warmup + duration + request timeout + margin.
  absl::Duration Deadline(const vanguard::v1::RunStepRequest& request) const;

  // Runs the step. `cancel` (nullable) stops it from another thread; `on_window`
  // (nullable) sees each window as it arrives, on this thread.
  // Errors: CANCELLED when `cancel` fired; PERMISSION_DENIED as soon as a window or the
  // result counts an error of class kTargetRefusedClass (the replayer's target policy
  // refused the endpoint: nothing was sent, and a retry would be refused again); the
  // replayer's status when the call failed (UNAVAILABLE when it is down,
  // DEADLINE_EXCEEDED...); UNAVAILABLE when the stream ended without a StepResult.
  absl::StatusOr<ExecutedStep> Execute(const vanguard::v1::RunStepRequest& request,
                                       CancellationToken* cancel,
                                       const WindowCallback& on_window) override;

 private:
  vanguard::v1::Replayer::StubInterface* const replayer_;
  Clock* const clock_;
  const StepExecutorOptions options_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_STEP_EXECUTOR_H_
