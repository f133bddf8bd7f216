// A WatchTest stream opened for a test of the orchestrator's stream caps: admitted (its
// first message read) or refused (its status). Used by the integration tests that count
// admitted and refused streams (auth_test, flood_test); test-only, any one thread per Watch.
#ifndef VANGUARD_TESTS_INTEGRATION_WATCH_STREAM_H_
#define VANGUARD_TESTS_INTEGRATION_WATCH_STREAM_H_

#include <memory>
#include <utility>

#include "grpcpp/grpcpp.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace vanguard {

// An open WatchTest stream (reader set), or the status that refused it (reader null).
struct Watch {
  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<grpc::ClientReader<v1::WatchTestResponse>> reader;
  grpc::Status refused;
};

// Opens `request` with `context` (its credentials and deadline) and reads the first message:
// an admitted stream sends the test at once, a refused one ends with its status.
inline Watch OpenWatch(v1::Orchestrator::Stub& stub, std::unique_ptr<grpc::ClientContext> context,
                       const v1::WatchTestRequest& request) {
  Watch w;
  w.context = std::move(context);
  w.reader = stub.WatchTest(w.context.get(), request);
  v1::WatchTestResponse first;
  if (!w.reader->Read(&first)) {
    w.refused = w.reader->Finish();
    w.reader.reset();
  }
  return w;
}

}  // namespace vanguard

#endif  // VANGUARD_TESTS_INTEGRATION_WATCH_STREAM_H_
