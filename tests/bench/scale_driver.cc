// The scale benchmark's driver (tests/bench/scale.sh): runs one step over k running
// `vanguard-replayer serve` processes through the worker's own ReplayerPool (each replayer
// one shard of the schedule, results merged exactly, as a worker with --replayer=a,b,... does)
// and prints the merged StepResult as JSON.
//
//   scale_driver --replayers=127.0.0.1:5001,127.0.0.1:5002 --target=http://127.0.0.1:8080 \
//     --rate=20000 --duration=5s --warmup=1s > merged.json
//
// Exit 1 when the step fails, 2 on bad flags.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "vanguard/v1/replayer.grpc.pb.h"
#include "worker/proto_time.h"
#include "worker/replayer_pool.h"
#include "worker/step_executor.h"

ABSL_FLAG(std::string, replayers, "", "comma-separated replayer gRPC addresses (host:port)");
ABSL_FLAG(std::string, target, "", "the server's base URL, e.g. http://127.0.0.1:8080");
ABSL_FLAG(double, rate, 10000, "total offered rate, requests per second");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(5), "measured part");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(1), "warmup before it");
ABSL_FLAG(int32_t, max_connections, 512, "keep-alive connections per replayer");
ABSL_FLAG(uint64_t, seed, 1, "the step's seed (Poisson schedule)");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::vector<std::string> addresses =
      absl::StrSplit(absl::GetFlag(FLAGS_replayers), ',', absl::SkipWhitespace());
  if (addresses.empty() || absl::GetFlag(FLAGS_target).empty()) {
    std::cerr << "scale_driver: --replayers and --target are required\n";
    return 2;
  }
  std::vector<std::unique_ptr<vanguard::v1::Replayer::Stub>> stubs;
  std::vector<std::unique_ptr<vanguard::worker::StepExecutor>> executors;
  std::vector<vanguard::worker::PoolMember> members;
  for (const std::string& address : addresses) {
    stubs.push_back(vanguard::v1::Replayer::NewStub(
        grpc::CreateChannel(address, grpc::InsecureChannelCredentials())));
    executors.push_back(std::make_unique<vanguard::worker::StepExecutor>(stubs.back().get(),
                                                                         vanguard::Clock::Real()));
    members.push_back({address, executors.back().get()});
  }
  vanguard::worker::ReplayerPool pool(std::move(members));

  vanguard::v1::RunStepRequest request;
  request.set_target(absl::GetFlag(FLAGS_target));
  request.set_protocol(vanguard::v1::PROTOCOL_HTTP);
  request.set_rate_qps(absl::GetFlag(FLAGS_rate));
  request.set_schedule(vanguard::v1::SCHEDULE_POISSON);
  request.set_seed(absl::GetFlag(FLAGS_seed));
  // The bench measures k replayers: every one of them, whatever their headroom.
  request.set_replayers(static_cast<int32_t>(addresses.size()));
  request.set_max_connections(absl::GetFlag(FLAGS_max_connections));
  *request.mutable_warmup() = vanguard::worker::ToProtoDuration(absl::GetFlag(FLAGS_warmup));
  *request.mutable_duration() = vanguard::worker::ToProtoDuration(absl::GetFlag(FLAGS_duration));
  *request.mutable_request_timeout() = vanguard::worker::ToProtoDuration(absl::Seconds(2));
  absl::StatusOr<vanguard::worker::ExecutedStep> step = pool.Execute(request, nullptr, nullptr);
  if (!step.ok()) {
    std::cerr << "scale_driver: " << step.status() << "\n";
    return 1;
  }
  step->result.clear_latency_histogram();  // keep the printed JSON short
  step->result.clear_service_latency_histogram();
  step->result.clear_send_skew_histogram();
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(step->result, &json, options).ok()) return 1;
  std::printf("%s\n", json.c_str());
  return 0;
}
