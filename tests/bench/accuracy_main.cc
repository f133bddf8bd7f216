// accuracy_bench: runs one capacity test through the worker's real TestRunner (strategy,
// MeasuredStepRunner, HealthAssessor, MetricsCollector, StepExecutor) against a real
// replayer and predictor, with an in-process orchestrator that only records what the worker
// reports. Used by tests/bench/profiles.sh; prints one line of key=value pairs:
//   strategy=adaptive variant=full estimate=612.5 converged=1 steps=11 test_s=97.3 ...
// Step lines go to stderr.
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "proto/testing/orchestrator_stub_mock.h"
#include "vanguard/v1/replayer.grpc.pb.h"
#include "worker/metrics_collector.h"
#include "worker/orchestrator_client.h"
#include "worker/proto_time.h"
#include "worker/step_executor.h"
#include "worker/test_runner.h"

ABSL_FLAG(std::string, replayer, "127.0.0.1:50052", "Replayer gRPC address");
ABSL_FLAG(std::string, endpoint, "http://127.0.0.1:8000", "Predictor base URL");
ABSL_FLAG(std::string, protocol, "kserve_v2_rest", "kserve_v2_rest or openai_completions");
ABSL_FLAG(std::string, model_name, "sim", "Served model name");
ABSL_FLAG(std::string, request_body,
          R"({"inputs":[{"name":"input0","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]})",
          "Request template");
ABSL_FLAG(double, slo_p99_ms, 100, "SLO: p99 latency limit (ms)");
ABSL_FLAG(double, slo_ttft_ms, 0, "SLO: p99 time-to-first-token limit (ms); 0: none");
ABSL_FLAG(double, max_error_rate, 0.01, "SLO: max error rate");
ABSL_FLAG(double, min_qps, 10, "Rate range: low end");
ABSL_FLAG(double, max_qps, 1000, "Rate range: high end");
ABSL_FLAG(std::string, strategy, "adaptive",
          "sweep, binary_search, adaptive, ladder, direct_controller or stability");
ABSL_FLAG(std::string, variant, "full",
          "full, no_warmup (no fixed warmup, no steady-state detection), closed_loop, p99_only, "
          "confirm_best (adaptive: a confirmation hold before finishing)");
ABSL_FLAG(double, step_seconds, 4, "Measured part of each step (s)");
ABSL_FLAG(double, warmup_seconds, 2, "Fixed warmup of each step (s), the registry default");
ABSL_FLAG(double, direct_target_qps, 0, "direct_controller: the autoscaler's target rate");
ABSL_FLAG(std::string, direct_json_url, "", "direct_controller: fetch the target from this URL");
ABSL_FLAG(double, stability_qps, 0, "stability: the rate held");
ABSL_FLAG(int, stability_segments, 6, "stability: segments");
ABSL_FLAG(int64_t, test_id, 1, "Test id (seeds the schedules)");

namespace {

using ::testing::NiceMock;
namespace v1 = vanguard::v1;
namespace w = vanguard::worker;

google::protobuf::Duration Ms(double ms) {
  return w::ToProtoDuration(absl::Microseconds(static_cast<int64_t>(ms * 1000)));
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("Runs one capacity test through the worker's TestRunner.");
  absl::ParseCommandLine(argc, argv);
  const std::string variant = absl::GetFlag(FLAGS_variant);
  const std::string strategy = absl::GetFlag(FLAGS_strategy);

  v1::LeaseTestResponse lease;
  lease.set_attempt(1);
  v1::Test* test = lease.mutable_test();
  test->set_id(absl::GetFlag(FLAGS_test_id));
  test->set_attempt(1);
  v1::Model* model = test->mutable_model();
  model->set_name(absl::GetFlag(FLAGS_model_name));
  model->set_version("bench");
  model->add_endpoints(absl::GetFlag(FLAGS_endpoint));
  model->set_request_template(absl::GetFlag(FLAGS_request_body));
  model->set_protocol(absl::GetFlag(FLAGS_protocol) == "openai_completions"
                          ? v1::PROTOCOL_OPENAI_COMPLETIONS
                          : v1::PROTOCOL_KSERVE_V2_REST);
  v1::Slo* slo = model->mutable_slo();
  *slo->mutable_p99_latency() = Ms(absl::GetFlag(FLAGS_slo_p99_ms));
  if (variant != "p99_only") {
    slo->set_max_error_rate(absl::GetFlag(FLAGS_max_error_rate));
    if (absl::GetFlag(FLAGS_slo_ttft_ms) > 0)
      *slo->mutable_ttft_p99() = Ms(absl::GetFlag(FLAGS_slo_ttft_ms));
  } else {
    slo->set_min_achieved_ratio(1e-9);  // the single-metric check ignores throughput
  }
  *model->mutable_default_warmup() =
      w::ToProtoDuration(absl::Milliseconds(absl::GetFlag(FLAGS_warmup_seconds) * 1000));

  v1::TestSpec* spec = test->mutable_spec();
  const double lo = absl::GetFlag(FLAGS_min_qps), hi = absl::GetFlag(FLAGS_max_qps);
  if (strategy == "sweep") {
    spec->mutable_sweep()->set_min_qps(lo);
    spec->mutable_sweep()->set_max_qps(hi);
    spec->mutable_sweep()->set_steps(10);
  } else if (strategy == "binary_search") {
    spec->mutable_binary_search()->set_min_qps(lo);
    spec->mutable_binary_search()->set_max_qps(hi);
  } else if (strategy == "adaptive") {
    spec->mutable_adaptive()->set_min_qps(lo);
    spec->mutable_adaptive()->set_max_qps(hi);
  } else if (strategy == "ladder") {
    spec->mutable_ladder()->set_start_qps(lo);
    spec->mutable_ladder()->set_max_qps(hi);
  } else if (strategy == "direct_controller") {
    if (!absl::GetFlag(FLAGS_direct_json_url).empty()) {
      spec->mutable_direct_controller()->set_json_url(absl::GetFlag(FLAGS_direct_json_url));
    } else {
      spec->mutable_direct_controller()->set_target_qps(absl::GetFlag(FLAGS_direct_target_qps));
    }
    spec->mutable_direct_controller()->set_headroom_fraction(0.1);
  } else if (strategy == "stability") {
    spec->mutable_stability()->set_rate_qps(absl::GetFlag(FLAGS_stability_qps));
    spec->mutable_stability()->set_segments(absl::GetFlag(FLAGS_stability_segments));
  } else {
    std::cerr << "unknown --strategy " << strategy << "\n";
    return 2;
  }
  *spec->mutable_step_duration() =
      w::ToProtoDuration(absl::Milliseconds(absl::GetFlag(FLAGS_step_seconds) * 1000));
  *spec->mutable_request_timeout() = w::ToProtoDuration(absl::Seconds(5));
  spec->set_schedule(v1::SCHEDULE_POISSON);

  NiceMock<v1::OrchestratorStubMock> orchestrator;  // accepts every call
  w::OrchestratorClient client(&orchestrator, {});
  auto replayer = v1::Replayer::NewStub(
      grpc::CreateChannel(absl::GetFlag(FLAGS_replayer), grpc::InsecureChannelCredentials()));
  vanguard::Clock* clock = vanguard::Clock::Real();
  w::StepExecutor executor(replayer.get(), clock);

  w::TestRunnerOptions options;
  options.worker_id = "accuracy-bench";
  options.heartbeat_thread = false;
  options.log = [](const std::string& line) { std::cerr << "  " << line << "\n"; };
  options.metrics_fetcher = [](const v1::Model& m) {
    return w::MetricsCollector::HttpFetcher(w::MetricsUrlFor(m));
  };
  if (variant == "no_warmup") {
    options.measured.fixed_warmup = false;
    options.measured.steady_state_detection = false;
  } else if (variant == "closed_loop") {
    options.measured.closed_loop = true;
  } else if (variant == "p99_only") {
    options.health.p99_only = true;
  } else if (variant == "confirm_best") {
    if (!spec->has_adaptive()) {  // mutable_adaptive() would replace the strategy asked for
      std::cerr << "--variant=confirm_best needs --strategy=adaptive\n";
      return 2;
    }
    spec->mutable_adaptive()->set_confirm_best(true);
  } else if (variant != "full") {
    std::cerr << "unknown --variant " << variant << "\n";
    return 2;
  }
  w::TestRunner runner(&client, &executor, clock, options);

  const auto t0 = std::chrono::steady_clock::now();
  const w::TestRunOutcome outcome = runner.Run(lease);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (outcome != w::TestRunOutcome::kSucceeded || !runner.last_result()) {
    std::cout << absl::StrFormat("strategy=%s variant=%s estimate=nan outcome=%s test_s=%.1f\n",
                                 strategy, variant, w::TestRunOutcomeName(outcome), seconds);
    return 1;
  }
  const v1::TestResult& r = *runner.last_result();
  double estimate = r.max_sustainable_qps();
  if (variant == "closed_loop") {
    // A closed loop offers no rate (its steps' targets only set their concurrency): its
    // estimate is what the best pass achieved, less the share the search takes off the best
    // pass (the adaptive search's resolution). The fewest achieved where the best rate ran
    // more than once.
    const double best = runner.last_done() && runner.last_done()->best_pass_qps > 0
                            ? runner.last_done()->best_pass_qps
                            : estimate;
    double achieved = -1;
    for (const w::StepRecord& s : runner.last_steps()) {
      if (s.step.target_qps() == best && (achieved < 0 || s.step.achieved_qps() < achieved)) {
        achieved = s.step.achieved_qps();
      }
    }
    if (achieved >= 0 && best > 0) estimate = achieved * (estimate / best);
  }
  std::cout << absl::StrFormat(
      "strategy=%s variant=%s estimate=%.2f converged=%d steps=%d test_s=%.1f ci_low=%.2f "
      "ci_high=%.2f reserve=%.2f survivor=%.2f drift_flags=%d\n",
      strategy, variant, estimate, r.converged() ? 1 : 0, r.steps_taken(), seconds,
      r.confidence_low_qps(), r.confidence_high_qps(), r.reserve_qps(), r.survivor_qps(),
      r.drift_flags_size());
  std::cerr << "  summary: " << r.summary() << "\n";
  return 0;
}
