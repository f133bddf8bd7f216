// Tests of the KServe v2 gRPC transport against an in-test GRPCInferenceService: one thread
// keeps many ModelInfer calls in flight, failures carry grpc_<CODE> classes, cancelled calls
// are never reported, and REST JSON bodies convert into the right ModelInferRequest.
#include "replayer/protocols/kserve_grpc_transport.h"

#include <poll.h>

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "inference/grpc_service.grpc.pb.h"

namespace vanguard::replayer {
namespace {

using ::testing::HasSubstr;

// ModelInfer that holds every call until `hold_until_in_flight` calls are open at once (so
// the test proves they were all in flight together), fails model "down" with UNAVAILABLE,
// never answers model "hang" until cancelled, answers model "sized" at once with a reply of
// the request id's number of raw output bytes, and fails model "full" with RESOURCE_EXHAUSTED.
class FakeInferenceService final : public inference::GRPCInferenceService::Service {
 public:
  explicit FakeInferenceService(int hold_until_in_flight) : hold_(hold_until_in_flight) {}

  grpc::Status ModelInfer(grpc::ServerContext* context, const inference::ModelInferRequest* request,
                          inference::ModelInferResponse* response) override {
    if (request->model_name() == "hang") {
      // Bounded: a guard against hanging the test, not a timing assertion.
      for (int i = 0; i < 4000 && !context->IsCancelled(); ++i)
        absl::SleepFor(absl::Milliseconds(5));
      return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    }
    if (request->model_name() == "sized") {
      // A reply whose one raw output holds as many bytes as the request's id says.
      response->add_raw_output_contents(std::string(std::stoul(request->id()), 'x'));
      return grpc::Status::OK;
    }
    if (request->model_name() == "full") {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "queue full");
    }
    absl::MutexLock lock(&mu_);
    received_.push_back(*request);
    if (request->model_name() == "down") return grpc::Status(grpc::StatusCode::UNAVAILABLE, "down");
    ++in_flight_;
    max_in_flight_ = std::max(max_in_flight_, in_flight_);
    // Bounded wait (a guard against hanging, not a timing assertion).
    mu_.AwaitWithTimeout(
        absl::Condition(
            +[](FakeInferenceService* s) { return s->max_in_flight_ >= s->hold_; }, this),
        absl::Seconds(20));
    --in_flight_;
    response->set_model_name(request->model_name());
    response->set_id(request->id());
    return grpc::Status::OK;
  }

  int max_in_flight() {
    absl::MutexLock lock(&mu_);
    return max_in_flight_;
  }
  std::vector<inference::ModelInferRequest> received() {
    absl::MutexLock lock(&mu_);
    return received_;
  }

 private:
  absl::Mutex mu_;
  const int hold_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int max_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<inference::ModelInferRequest> received_ ABSL_GUARDED_BY(mu_);
};

class KServeGrpcTransportTest : public ::testing::Test {
 protected:
  void StartServer(int hold) {
    service_ = std::make_unique<FakeInferenceService>(hold);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  // Every client call has ended by now (the transport, a local of the test, cancelled what
  // was open), so the server stops without gRPC's cancel-all path; a deadline of now took
  // that path every time, and its "Cancelling all calls" status, made here and read on
  // gRPC's executor through gRPC's own lock-free hand-off, was a ThreadSanitizer report.
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(10));
  }

  // Waits (bounded) until `want` completions have been taken.
  std::vector<AsyncTransport::Completion> Drain(AsyncTransport* transport, size_t want) {
    std::vector<AsyncTransport::Completion> all;
    AsyncTransport::Completion batch[4];  // small on purpose: exercises partial takes
    for (int spins = 0; all.size() < want && spins < 400; ++spins) {
      pollfd fd{transport->completion_fd(), POLLIN, 0};
      if (::poll(&fd, 1, 50) <= 0) continue;
      int n = transport->TakeCompletions(batch, 4);
      all.insert(all.end(), batch, batch + n);
    }
    return all;
  }

  std::unique_ptr<FakeInferenceService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

std::string Serialized(std::string_view model, std::string_view id) {
  auto request = ModelInferRequestFromKServeJson(
      model,
      absl::StrCat(R"({"id":")", std::string(id),
                   R"(","inputs":[{"name":"x","shape":[2],"datatype":"FP32","data":[1,2]}]})"));
  EXPECT_TRUE(request.ok()) << request.status();
  return request->SerializeAsString();
}

TEST_F(KServeGrpcTransportTest, OneThreadKeepsManyCallsInFlightOpenLoop) {
  constexpr int kCalls = 16;
  StartServer(/*hold=*/kCalls);
  auto factory = KServeGrpcTransportFactory(absl::StrCat("grpc://127.0.0.1:", port_));
  ASSERT_TRUE(factory.ok());
  auto transport = (*factory)(0, 1);
  ASSERT_TRUE(transport.ok()) << transport.status();
  std::vector<std::string> bodies;
  for (int i = 0; i < kCalls; ++i) bodies.push_back(Serialized("resnet", absl::StrCat("req-", i)));
  for (int i = 0; i < kCalls; ++i) {
    OutgoingRequest request;
    request.body = bodies[i];
    request.model = "resnet";
    // Send returns immediately: the server holds every call until all 16 are open.
    ASSERT_TRUE((*transport)->Send(100 + i, request).ok());
  }
  std::vector<AsyncTransport::Completion> done = Drain(transport->get(), kCalls);
  ASSERT_EQ(done.size(), static_cast<size_t>(kCalls));
  std::set<uint64_t> tags;
  for (const auto& c : done) {
    EXPECT_TRUE(c.ok) << c.error_class;
    EXPECT_GT(c.done_ns, 0);
    tags.insert(c.tag);
  }
  EXPECT_EQ(tags.size(), static_cast<size_t>(kCalls));
  EXPECT_EQ(*tags.begin(), 100u);
  EXPECT_EQ(service_->max_in_flight(), kCalls);
  auto received = service_->received();
  ASSERT_EQ(received.size(), static_cast<size_t>(kCalls));
  EXPECT_EQ(received[0].model_name(), "resnet");
  EXPECT_EQ(received[0].inputs(0).contents().fp32_contents_size(), 2);
}

TEST_F(KServeGrpcTransportTest, FailuresAreClassifiedAndCancelledCallsNeverReported) {
  StartServer(/*hold=*/1);
  auto created = KServeGrpcTransport::Create(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials()));
  ASSERT_TRUE(created.ok());
  KServeGrpcTransport* transport = created->get();
  std::string down = Serialized("down", "d");
  std::string hang = Serialized("hang", "h");
  std::string fine = Serialized("fine", "f");
  OutgoingRequest request;
  request.body = hang;
  ASSERT_TRUE(transport->Send(1, request).ok());
  request.body = down;
  ASSERT_TRUE(transport->Send(2, request).ok());
  request.body = fine;
  ASSERT_TRUE(transport->Send(3, request).ok());
  transport->Cancel(1);  // the engine timed it out
  std::vector<AsyncTransport::Completion> done = Drain(transport, 2);
  ASSERT_EQ(done.size(), 2u);
  std::map<uint64_t, AsyncTransport::Completion> by_tag;
  for (const auto& c : done) by_tag[c.tag] = c;
  ASSERT_TRUE(by_tag.count(2) && by_tag.count(3));
  EXPECT_FALSE(by_tag[2].ok);
  EXPECT_EQ(by_tag[2].error_class, "grpc_UNAVAILABLE");
  EXPECT_TRUE(by_tag[3].ok);
  // The cancelled call's completion (CANCELLED) is swallowed, not reported.
  for (int i = 0; i < 500 && transport->in_flight() > 0; ++i)
    absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(transport->in_flight(), 0);
  AsyncTransport::Completion extra[4];
  EXPECT_EQ(transport->TakeCompletions(extra, 4), 0);
}

TEST_F(KServeGrpcTransportTest, APinnedAddressIsConnectedWithoutResolvingTheName) {
  StartServer(/*hold=*/1);
  // The name cannot resolve (.invalid is reserved): only the pinned address can be reached.
  auto factory =
      KServeGrpcTransportFactory(absl::StrCat("http://no-such-predictor.invalid:", port_),
                                 absl::StrCat("ipv4:127.0.0.1:", port_));
  ASSERT_TRUE(factory.ok()) << factory.status();
  auto transport = (*factory)(0, 1);
  ASSERT_TRUE(transport.ok()) << transport.status();
  const std::string body = Serialized("resnet", "pinned");
  OutgoingRequest request;
  request.body = body;
  request.model = "resnet";
  ASSERT_TRUE((*transport)->Send(5, request).ok());
  std::vector<AsyncTransport::Completion> done = Drain(transport->get(), 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].ok) << done[0].error_class;
  EXPECT_EQ(service_->received().size(), 1u);
}

TEST_F(KServeGrpcTransportTest, UnreachableServerCompletesWithUnavailable) {
  int dead_port;
  {
    StartServer(1);
    dead_port = port_;
    server_->Shutdown(std::chrono::system_clock::now());
    server_.reset();
  }
  auto transport = (*KServeGrpcTransportFactory(absl::StrCat("127.0.0.1:", dead_port)))(0, 1);
  ASSERT_TRUE(transport.ok());
  std::string body = Serialized("m", "x");
  OutgoingRequest request;
  request.body = body;
  ASSERT_TRUE((*transport)->Send(7, request).ok());
  auto done = Drain(transport->get(), 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_FALSE(done[0].ok);
  EXPECT_EQ(done[0].error_class, "grpc_UNAVAILABLE");
}

// A model's reply is outside input: one larger than kMaxModelInferReplyBytes is refused as a
// request error of its own class (not a server's RESOURCE_EXHAUSTED), and the transport goes
// on with the next calls, a reply larger than gRPC's own 4 MiB default among them.
TEST_F(KServeGrpcTransportTest, AReplyOverTheLimitIsAReplyTooLargeErrorAndTheNextCallsGoOn) {
  StartServer(/*hold=*/1);
  auto factory = KServeGrpcTransportFactory(absl::StrCat("grpc://127.0.0.1:", port_));
  ASSERT_TRUE(factory.ok()) << factory.status();
  auto transport = (*factory)(0, 1);
  ASSERT_TRUE(transport.ok()) << transport.status();
  auto send = [&](uint64_t tag, std::string_view model, size_t reply_bytes) {
    const std::string body = Serialized(model, absl::StrCat(reply_bytes));
    OutgoingRequest request;
    request.body = body;
    request.model = std::string(model);
    ASSERT_TRUE((*transport)->Send(tag, request).ok());
  };

  send(1, "sized", kMaxModelInferReplyBytes + 1);
  std::vector<AsyncTransport::Completion> over = Drain(transport->get(), 1);
  ASSERT_EQ(over.size(), 1u);
  EXPECT_EQ(over[0].tag, 1u);
  EXPECT_FALSE(over[0].ok);
  EXPECT_EQ(over[0].error_class, kErrorReplyTooLarge);

  send(2, "sized", 8 << 20);
  send(3, "resnet", 0);
  send(4, "full", 0);
  std::vector<AsyncTransport::Completion> next = Drain(transport->get(), 3);
  ASSERT_EQ(next.size(), 3u);
  std::map<uint64_t, AsyncTransport::Completion> by_tag;
  for (const AsyncTransport::Completion& c : next) by_tag[c.tag] = c;
  EXPECT_TRUE(by_tag[2].ok) << by_tag[2].error_class;
  EXPECT_TRUE(by_tag[3].ok) << by_tag[3].error_class;
  // The server's own RESOURCE_EXHAUSTED keeps its code's class.
  EXPECT_FALSE(by_tag[4].ok);
  EXPECT_EQ(by_tag[4].error_class, "grpc_RESOURCE_EXHAUSTED");
}

TEST(ModelInferRequestFromKServeJsonTest, ConvertsEveryTypedDatatype) {
  auto request = ModelInferRequestFromKServeJson("m", R"({
    "id": "42", "parameters": {"priority": 3, "tag": "x"},
    "inputs": [
      {"name": "f", "shape": [2, 2], "datatype": "FP32", "data": [[1, 2], [3, 4.5]]},
      {"name": "i", "shape": [2], "datatype": "INT64", "data": [-1, 9007199254740993]},
      {"name": "u", "shape": [1], "datatype": "UINT8", "data": [255]},
      {"name": "b", "shape": [1], "datatype": "BOOL", "data": [true]},
      {"name": "s", "shape": [2], "datatype": "BYTES", "data": ["a", "bc"]}],
    "outputs": [{"name": "out"}]})");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->model_name(), "m");
  EXPECT_EQ(request->id(), "42");
  EXPECT_EQ(request->parameters().at("priority").int64_param(), 3);
  ASSERT_EQ(request->inputs_size(), 5);
  EXPECT_THAT(request->inputs(0).shape(), ::testing::ElementsAre(2, 2));
  EXPECT_THAT(request->inputs(0).contents().fp32_contents(), ::testing::ElementsAre(1, 2, 3, 4.5));
  EXPECT_EQ(request->inputs(1).contents().int64_contents(1), 9007199254740993);
  EXPECT_EQ(request->inputs(2).contents().uint_contents(0), 255u);
  EXPECT_TRUE(request->inputs(3).contents().bool_contents(0));
  EXPECT_EQ(request->inputs(4).contents().bytes_contents(1), "bc");
  EXPECT_EQ(request->outputs(0).name(), "out");
}

TEST(ModelInferRequestFromKServeJsonTest, BadBodiesNameTheField) {
  auto error = [](std::string_view body) {
    return std::string(ModelInferRequestFromKServeJson("m", body).status().message());
  };
  EXPECT_THAT(error("nope"), HasSubstr("request_body"));
  EXPECT_THAT(error(R"({"inputs":[]})"), HasSubstr("inputs"));
  EXPECT_THAT(error(R"({"inputs":[{"name":"x","shape":[3],"datatype":"FP32","data":[1,2]}]})"),
              HasSubstr("inputs[0].data: has 2 elements but shape needs 3"));
  // The product of the dimensions overflowed int64 (undefined behaviour) before this check.
  EXPECT_THAT(
      error(
          R"({"inputs":[{"name":"x","shape":[4611686018427387904,4],"datatype":"INT8","data":[1]}]})"),
      HasSubstr("inputs[0].shape: more elements than fit in 64 bits"));
  EXPECT_THAT(error(R"({"inputs":[{"name":"x","shape":[1],"datatype":"INT32","data":["a"]}]})"),
              HasSubstr("inputs[0].data[0]"));
  EXPECT_THAT(error(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP16","data":[1]}]})"),
              HasSubstr("FP16"));
  EXPECT_THAT(std::string(ModelInferRequestFromKServeJson("", "{}").status().message()),
              HasSubstr("model_name"));
  EXPECT_EQ(GrpcTargetFromUrl("http://h:8001/x").value(), "h:8001");
  EXPECT_FALSE(GrpcTargetFromUrl("h").ok());
}

TEST(KServeGrpcTemplateSourceTest, SendsTheConvertedBodyEveryTime) {
  auto factory = KServeGrpcTemplateSourceFactory("resnet", "");
  ASSERT_TRUE(factory.ok());
  auto source = (*factory)(1, 2);
  ASSERT_TRUE(source.ok());
  OutgoingRequest request;
  ASSERT_TRUE((*source)->Next(&request).ok());
  inference::ModelInferRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(std::string(request.body)));
  EXPECT_EQ(parsed.model_name(), "resnet");
  EXPECT_EQ(parsed.inputs(0).contents().fp32_contents_size(), 4);
  EXPECT_EQ(request.path, kModelInferMethod);
  EXPECT_EQ(KServeGrpcTemplateSourceFactory("resnet", "[1]").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vanguard::replayer
