// RunStep request building and stream collection. See step_executor.h.
#include "worker/step_executor.h"

#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "grpcpp/client_context.h"
#include "worker/proto_time.h"

namespace vanguard::worker {
namespace {

// splitmix64 finalizer: spreads nearby (test, step) pairs over the whole seed space.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

StepExecutor::StepExecutor(vanguard::v1::Replayer::StubInterface* replayer, Clock* clock,
                           StepExecutorOptions options)
    : replayer_(replayer), clock_(clock), options_(options) {}

uint64_t StepExecutor::StepSeed(int64_t test_id, int step_index) {
  return Mix(Mix(static_cast<uint64_t>(test_id)) ^ static_cast<uint64_t>(step_index));
}

absl::StatusOr<vanguard::v1::RunStepRequest> StepExecutor::BuildRequest(
    const vanguard::v1::Test& test, double rate_qps, int step_index) {
  const vanguard::v1::Model& model = test.model();
  const vanguard::v1::TestSpec& spec = test.spec();
  if (model.endpoints_size() == 0 || model.endpoints(0).empty()) {
    return absl::InvalidArgumentError(absl::StrCat("model.endpoints: model ", model.name(), ":",
                                                   model.version(),
                                                   " has no endpoint to send load to"));
  }
  if (!std::isfinite(rate_qps) || rate_qps <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("rate must be > 0 qps, got ", rate_qps));
  }
  const absl::Duration duration = FromProtoDuration(spec.step_duration());
  if (duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("spec.step_duration must be > 0");
  }
  const absl::Duration warmup = spec.has_step_warmup() ? FromProtoDuration(spec.step_warmup())
                                                       : FromProtoDuration(model.default_warmup());
  if (warmup < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(spec.has_step_warmup() ? "spec.step_warmup must be >= 0"
                                                             : "model.default_warmup must be >= 0");
  }
  absl::Duration timeout = FromProtoDuration(spec.request_timeout());
  if (timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("spec.request_timeout must be >= 0");
  }
  if (timeout == absl::ZeroDuration()) timeout = kDefaultRequestTimeout;

  vanguard::v1::RunStepRequest request;
  request.set_target(model.endpoints(0));
  request.set_endpoint_policy(spec.endpoint_policy());
  request.set_replayers(spec.replayers());
  // The replayer spreads over several endpoints on its own HTTP client only: a gRPC model
  // keeps today's behaviour (its first endpoint) unless the spec asks for a policy.
  if (model.protocol() == vanguard::v1::PROTOCOL_KSERVE_V2_GRPC &&
      spec.endpoint_policy() == vanguard::v1::ENDPOINT_POLICY_UNSPECIFIED) {
    request.set_endpoint_policy(vanguard::v1::ENDPOINT_POLICY_SINGLE);
  }
  if (model.endpoints_size() > 1 &&
      request.endpoint_policy() != vanguard::v1::ENDPOINT_POLICY_SINGLE) {
    for (const std::string& endpoint : model.endpoints()) request.add_targets(endpoint);
  }
  request.set_protocol(model.protocol());
  request.set_model_name(model.served_name().empty() ? model.name() : model.served_name());
  request.set_request_body(model.request_template());
  request.set_trace_path(spec.trace());
  request.set_rate_qps(rate_qps);
  // A spec that names no schedule gets Poisson arrivals: what an estimate claims (DESIGN.md,
  // "What an estimate claims"). Constant arrivals queue less than a real stream of users, so
  // a capacity measured with them over-claims on any model that queues.
  request.set_schedule(spec.schedule() == vanguard::v1::SCHEDULE_UNSPECIFIED
                           ? vanguard::v1::SCHEDULE_POISSON
                           : spec.schedule());
  request.set_seed(StepSeed(test.id(), step_index));
  *request.mutable_warmup() = ToProtoDuration(warmup);
  *request.mutable_duration() = ToProtoDuration(duration);
  *request.mutable_request_timeout() = ToProtoDuration(timeout);
  // max_connections stays 0: the replayer allows a connection for every request that can be
  // in flight (rate x request_timeout), so a slow model is measured rather than the client's
  // connection cap (a cap of one second's worth held a model of 1 s latencies at 256 in flight).
  // Per-request SLO, so the replayer counts goodput (requests that met it).
  *request.mutable_slo_latency() = model.slo().p99_latency();
  *request.mutable_slo_ttft() = model.slo().ttft_p99();
  return request;
}

absl::Duration StepExecutor::Deadline(const vanguard::v1::RunStepRequest& request) const {
  absl::Duration timeout = FromProtoDuration(request.request_timeout());
  if (timeout <= absl::ZeroDuration()) timeout = kDefaultRequestTimeout;
  return FromProtoDuration(request.warmup()) + FromProtoDuration(request.duration()) + timeout +
         options_.deadline_margin;
}

absl::StatusOr<ExecutedStep> StepExecutor::Execute(const vanguard::v1::RunStepRequest& request,
                                                   CancellationToken* cancel,
                                                   const WindowCallback& on_window) {
  ExecutedStep out;
  out.request = request;

  grpc::ClientContext ctx;
  // gRPC deadlines are absolute wall-clock times in the transport, so this one is taken
  // from the real clock rather than the injected one.
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + Deadline(request)));
  CancellationToken::Attachment attachment(cancel, &ctx);

  out.start_time = clock_->Now();
  std::unique_ptr<grpc::ClientReaderInterface<vanguard::v1::RunStepEvent>> reader =
      replayer_->RunStep(&ctx, request);
  if (reader == nullptr) return absl::InternalError("replayer stub returned no stream");

  bool have_result = false;
  bool refused = false;
  vanguard::v1::RunStepEvent event;
  while (reader->Read(&event)) {
    if (event.has_window()) {
      refused = event.window().errors_by_class().contains(kTargetRefusedClass);
      if (refused) {  // every request of the step will be: no point waiting for the end
        ctx.TryCancel();
        break;
      }
      out.windows.push_back(event.window());
      if (on_window) on_window(event.window());
    } else if (event.has_result()) {
      out.result = event.result();
      have_result = true;
      refused = out.result.errors_by_class().contains(kTargetRefusedClass);
    }
    if (cancel != nullptr && cancel->IsCancelled()) {
      ctx.TryCancel();
      break;
    }
  }
  const grpc::Status status = reader->Finish();
  out.end_time = clock_->Now();

  if (cancel != nullptr && cancel->IsCancelled()) {
    return absl::CancelledError("step cancelled");
  }
  if (refused) {
    return absl::PermissionDeniedError(
        "replayer RunStep: the replayer refused the model's endpoint: its address is not in "
        "the replayer's --allowed_targets (the replayer's log names the address and the rule)");
  }
  if (!status.ok()) {
    absl::Status s = FromGrpcStatus(status);
    return absl::Status(s.code(), absl::StrCat("replayer RunStep: ", s.message()));
  }
  if (!have_result) {
    return absl::UnavailableError("replayer RunStep: stream ended without a step result");
  }
  return out;
}

}  // namespace vanguard::worker
