// Test helpers: a scripted Replayer.RunStep stream for the gmock replayer stub, and
// StepResults shaped like a predictor at, or beyond, its capacity.
//
//   vanguard::v1::MockReplayerStub replayer;
//   auto script = std::make_shared<StreamScript>();
//   script->events = {WindowEvent(0), WindowEvent(1), ResultEvent(PassingResult(100))};
//   EXPECT_CALL(replayer, RunStepRaw).WillOnce(Return(NewScriptedReader(script)));
//
// Used by the worker's unit tests only, on the test's thread.
#ifndef VANGUARD_WORKER_TESTING_SCRIPTED_STREAM_H_
#define VANGUARD_WORKER_TESTING_SCRIPTED_STREAM_H_

#include <functional>
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/support/status.h"
#include "grpcpp/test/mock_stream.h"
#include "vanguard/v1/replayer.pb.h"

namespace vanguard::worker::testing_util {

struct StreamScript {
  std::vector<vanguard::v1::RunStepEvent> events;
  grpc::Status final_status = grpc::Status::OK;
  // Runs before every Read (e.g. advance a FakeClock by one window, or call Stop()).
  std::function<void()> before_read;
  int reads = 0;  // Read calls so far
};

// The reader the stub's RunStepRaw returns; the caller of RunStep takes ownership.
inline grpc::ClientReaderInterface<vanguard::v1::RunStepEvent>* NewScriptedReader(
    std::shared_ptr<StreamScript> script) {
  using ::testing::NiceMock;
  auto* reader = new NiceMock<grpc::testing::MockClientReader<vanguard::v1::RunStepEvent>>();
  ON_CALL(*reader, Read(::testing::_)).WillByDefault([script](vanguard::v1::RunStepEvent* event) {
    if (script->before_read) script->before_read();
    const size_t i = static_cast<size_t>(script->reads++);
    if (i >= script->events.size()) return false;
    *event = script->events[i];
    return true;
  });
  ON_CALL(*reader, Finish()).WillByDefault([script] { return script->final_status; });
  return reader;
}

inline vanguard::v1::RunStepEvent WindowEvent(int index, double achieved_qps = 0) {
  vanguard::v1::RunStepEvent event;
  event.mutable_window()->set_index(index);
  event.mutable_window()->set_achieved_qps(achieved_qps);
  return event;
}

inline vanguard::v1::RunStepEvent ResultEvent(const vanguard::v1::StepResult& result) {
  vanguard::v1::RunStepEvent event;
  *event.mutable_result() = result;
  return event;
}

// A 10 s step at `target_qps` that achieved `achieved_qps` with the given latencies and
// no errors; counts consistent.
inline vanguard::v1::StepResult MakeStepResult(double target_qps, double achieved_qps,
                                               double p50_ms, double p99_ms) {
  vanguard::v1::StepResult r;
  r.set_target_qps(target_qps);
  r.set_achieved_qps(achieved_qps);
  r.mutable_latency()->set_p50_ms(p50_ms);
  r.mutable_latency()->set_p90_ms(p99_ms * 0.8);
  r.mutable_latency()->set_p99_ms(p99_ms);
  r.mutable_latency()->set_max_ms(p99_ms * 1.5);
  r.mutable_service_latency()->set_p99_ms(p99_ms / 2);
  const int64_t scheduled = static_cast<int64_t>(target_qps * 10);
  const int64_t completed = std::min<int64_t>(scheduled, static_cast<int64_t>(achieved_qps * 10));
  r.set_scheduled(scheduled);
  r.set_sent(scheduled);
  r.set_completed(completed);
  r.set_timeouts(scheduled - completed);
  r.set_client_valid(true);
  r.set_latency_histogram("histogram-bytes");
  r.mutable_measured()->set_seconds(10);
  return r;
}

}  // namespace vanguard::worker::testing_util

#endif  // VANGUARD_WORKER_TESTING_SCRIPTED_STREAM_H_
