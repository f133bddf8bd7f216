// The simulated predictor's servers; see sim_predictor_server.h.
//
// Threads: `threads` event-loop threads run io_context::run(). Each HttpSession's handlers run
// on that connection's strand; everything touching the model (SlotScheduler or
// TokenScheduler), the pending-request map and the event timer runs on Core::scheduler_strand.
// A request hands itself to the scheduler strand (post) as a PendingRequest and gets its
// outcome back the same way (tokens one by one in generative mode), so the two never share
// state concurrently. gRPC calls arrive on gRPC's own threads (callback API) and enter the
// same scheduler strand.
#include "tests/simulator/sim_predictor_server.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "boost/asio/bind_executor.hpp"
#include "boost/asio/dispatch.hpp"
#include "boost/asio/executor_work_guard.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/strand.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core/bind_handler.hpp"
#include "boost/beast/core/error.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/core/string.hpp"
#include "boost/beast/http.hpp"
#include "grpcpp/grpcpp.h"
#include "inference/grpc_service.grpc.pb.h"
#include "tests/simulator/inference_codec.h"
#include "tests/simulator/openai_codec.h"
namespace vanguard::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr uint64_t kMaxBodyBytes = 64ull << 20;
constexpr uint32_t kMaxHeaderBytes = 64u << 10;

struct HostPort {
  std::string host;
  int port = 0;
};

absl::StatusOr<HostPort> ParseListen(absl::string_view listen) {
  const size_t colon = listen.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen must be HOST:PORT, got \"", listen, "\""));
  }
  HostPort result;
  absl::string_view host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  result.host = host.empty() ? "0.0.0.0" : std::string(host);
  if (!absl::SimpleAtoi(listen.substr(colon + 1), &result.port) || result.port < 0 ||
      result.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen port must be 0..65535, got \"", listen.substr(colon + 1), "\""));
  }
  return result;
}

std::string FormatEndpoint(const tcp::endpoint& endpoint) {
  const asio::ip::address address = endpoint.address();
  if (address.is_v6()) return absl::StrCat("[", address.to_string(), "]:", endpoint.port());
  return absl::StrCat(address.to_string(), ":", endpoint.port());
}

// Prometheus label values escape backslash, double quote and newline.
std::string EscapeLabel(absl::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

beast::string_view ToBeast(absl::string_view s) { return {s.data(), s.size()}; }

bool IsHttpProtocolError(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_target).category();
}

}  // namespace

namespace {

// Value of `key` in a query string "a=1&b=2", or nullopt.
std::optional<std::string> QueryValue(absl::string_view query, absl::string_view key) {
  for (absl::string_view pair : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) != key) continue;
    return std::string(eq == absl::string_view::npos ? "" : pair.substr(eq + 1));
  }
  return std::nullopt;
}

int64_t UnixSeconds() { return absl::ToUnixSeconds(absl::Now()); }

// Elements in every input tensor of a gRPC infer request (the product of each shape, negative
// dimensions as 0, saturating): what it carries, as the REST codec counts it.
int64_t InputElements(const inference::ModelInferRequest& request) {
  constexpr int64_t kCap = int64_t{1} << 48;
  int64_t total = 0;
  for (const auto& input : request.inputs()) {
    int64_t elements = 1;
    for (int64_t dim : input.shape()) {
      if (dim <= 0) {
        elements = 0;
        break;
      }
      elements = dim > kCap / elements ? kCap : std::min(kCap, elements * dim);
    }
    total = std::min(kCap, total + elements);
  }
  return total;
}

// The simulated model's reply to a KServe v2 gRPC infer request: output0 echoes the first
// input as FP32 (like the REST codec).
void FillInferResponse(const inference::ModelInferRequest& request, absl::string_view model,
                       inference::ModelInferResponse* response) {
  response->set_model_name(std::string(model));
  response->set_model_version(kModelVersion);
  response->set_id(request.id());
  inference::ModelInferResponse::InferOutputTensor* output = response->add_outputs();
  output->set_name(kOutputName);
  output->set_datatype("FP32");
  if (request.inputs_size() == 0) return;
  const auto& input = request.inputs(0);
  *output->mutable_shape() = input.shape();
  int64_t elements = 1;
  for (int64_t dim : input.shape()) elements *= std::max<int64_t>(dim, 0);
  elements = std::min<int64_t>(elements, 1 << 20);
  auto* values = output->mutable_contents()->mutable_fp32_contents();
  const auto& contents = input.contents();
  values->Reserve(static_cast<int>(elements));
  for (int64_t i = 0; i < elements; ++i) {
    float v = 0;
    if (i < contents.fp32_contents_size()) {
      v = contents.fp32_contents(static_cast<int>(i));
    } else if (i < contents.fp64_contents_size()) {
      v = static_cast<float>(contents.fp64_contents(static_cast<int>(i)));
    } else if (i < contents.int_contents_size()) {
      v = static_cast<float>(contents.int_contents(static_cast<int>(i)));
    } else if (i < contents.int64_contents_size()) {
      v = static_cast<float>(contents.int64_contents(static_cast<int>(i)));
    }
    values->Add(v);
  }
}

}  // namespace

enum class RequestOutcome { kServed, kFailed, kRejected, kShutdown };

// A request waiting for the model. Methods run on the scheduler strand.
class PendingRequest {
 public:
  virtual ~PendingRequest() = default;
  // Batch mode: served (kFailed: the model returned an error), rejected by a full queue, or
  // dropped because the server stops.
  virtual void OnFinished(RequestOutcome outcome) = 0;
  // Generative mode: one token of the request (or its failure, event.failed).
  virtual void OnToken(const TokenScheduler::TokenEvent& event) = 0;
};

class HttpSession;
class GrpcInferenceService;

struct SimPredictorServer::Core {
  explicit Core(const SimPredictorConfig& config)
      : io(config.threads),
        acceptor(asio::make_strand(io)),
        scheduler_strand(asio::make_strand(io)),
        event_timer(scheduler_strand),
        epoch(std::chrono::steady_clock::now()),
        model_name(config.model_name),
        model_label(EscapeLabel(config.model_name)),
        threads(config.threads),
        profile(config.profile),
        generative(config.profile.mode == ProfileMode::kGenerative) {
    if (generative) {
      token_scheduler.emplace(profile.generative);
    } else if (config.autoscale) {
      autoscaler.emplace(*ReplicaAutoscaler::Create(*config.autoscale));  // validated by Create
      SlotScheduler::Config fleet = profile.batch;
      fleet.slots = profile.batch.slots * autoscaler->ready();
      batch_scheduler.emplace(fleet);
    } else {
      batch_scheduler.emplace(profile.batch);
    }
  }

  // Virtual time of the model: steady time since the server was created.
  absl::Duration Now() const { return absl::FromChrono(std::chrono::steady_clock::now() - epoch); }

  void Accept();
  // Any thread: hands a request to the model. `cost`: what the request carries relative to a
  // nominal one (ContentCost; batch mode only).
  void Submit(std::shared_ptr<PendingRequest> request, int max_tokens, double cost = 1);
  // Any thread: true (and counts it) if the request must fail by /admin/fail_next.
  bool TakeInjectedFailure();
  // Any thread: /admin/down is in force.
  bool Down() const {
    return absl::ToInt64Nanoseconds(Now()) < down_until_ns.load(std::memory_order_relaxed);
  }
  // Any thread: closes every HTTP connection except `keep`; returns how many.
  int DropConnections(const HttpSession* keep);
  void RegisterSession(const std::shared_ptr<HttpSession>& session);

  // Scheduler strand only.
  void OnArrival(std::shared_ptr<PendingRequest> request, int max_tokens, double cost);
  void OnEventTimer(const beast::error_code& ec);
  void AdvanceModel(absl::Duration now);
  void Deliver();
  void ArmEventTimer();
  void InjectStall(absl::Duration length);
  void SetColocation(double fraction);
  // On the scheduler strand: the model serves a new version cold from `cold_from` (after
  // /admin/restart's down part), its warmup `factor` decaying to 1 over `warmup`.
  void Restart(absl::Duration cold_from, double factor, absl::Duration warmup);
  // Any thread: the warmup the profile starts the model with (the restart's defaults).
  const Perturbations& InitialPerturbations() const {
    return generative ? token_scheduler->config().perturbations
                      : batch_scheduler->config().perturbations;
  }
  // The autoscaled fleet (when there is one) sees the work in flight at `now` and the batch
  // scheduler gets the ready replicas' slots.
  void Rescale(absl::Duration now);
  void AppendMetrics(std::string* out);
  void FailAllPending();

  // Declared first so it is destroyed last, after everything that holds its sockets.
  asio::io_context io;
  tcp::acceptor acceptor;
  asio::strand<asio::io_context::executor_type> scheduler_strand;
  asio::steady_timer event_timer;  // scheduler strand
  const std::chrono::steady_clock::time_point epoch;
  const std::string model_name;
  const std::string model_label;  // escaped for Prometheus labels
  const int threads;
  const Profile profile;
  const bool generative;

  // Any thread.
  std::atomic<uint64_t> malformed_requests{0};
  std::atomic<uint64_t> injected_failures{0};
  std::atomic<int64_t> fail_next{0};
  // /admin/down: until this virtual time (ns), every request but /admin/ ones has its
  // connection closed unanswered, as a lost replica's would be. 0: up.
  std::atomic<int64_t> down_until_ns{0};
  std::atomic<uint64_t> next_completion_id{1};
  std::atomic<bool> stopping{false};

  absl::Mutex sessions_mu;
  std::vector<std::weak_ptr<HttpSession>> sessions ABSL_GUARDED_BY(sessions_mu);

  // Scheduler strand only (strands are not visible to ABSL_GUARDED_BY).
  std::optional<SlotScheduler> batch_scheduler;
  std::optional<TokenScheduler> token_scheduler;
  std::optional<ReplicaAutoscaler> autoscaler;  // batch mode with config.autoscale only
  absl::flat_hash_map<uint64_t, std::shared_ptr<PendingRequest>> pending;
  std::vector<SlotScheduler::Completion> completions;    // scratch, reused
  std::vector<TokenScheduler::TokenEvent> token_events;  // scratch, reused
  uint64_t next_request_id = 1;
  bool timer_armed = false;
  absl::Duration timer_deadline;

  std::vector<std::thread> workers;  // main thread only
  std::unique_ptr<GrpcInferenceService> grpc_service;
  std::unique_ptr<grpc::Server> grpc_server;
};

// One client connection; handlers run on the connection's strand. Keeps one request in
// flight at a time (HTTP/1.1 without pipelining): the next read starts after the response
// (for a stream: after its last chunk) is written.
class HttpSession : public PendingRequest, public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket socket, SimPredictorServer::Core* core)
      : socket_(std::move(socket)), core_(core) {
    response_.set(http::field::server, "vanguard-sim-predictor");
  }

  void Start() {
    asio::dispatch(socket_.get_executor(),
                   beast::bind_front_handler(&HttpSession::ReadRequest, shared_from_this()));
  }

  // Any thread: closes the connection on its strand.
  void Drop() {
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->Close(); });
  }

  // Scheduler strand.
  void OnFinished(RequestOutcome outcome) override {
    asio::post(socket_.get_executor(), [self = shared_from_this(), outcome] {
      switch (outcome) {
        case RequestOutcome::kServed:
          return self->WriteResponse();
        case RequestOutcome::kFailed:
          return self->SendError(http::status::internal_server_error,
                                 "the model failed this request (simulated error_rate)");
        case RequestOutcome::kRejected:
          return self->SendError(
              http::status::service_unavailable,
              "queue full: the model's max_queue waiting requests are already queued");
        case RequestOutcome::kShutdown:
          return self->Close();
      }
    });
  }

  // Scheduler strand.
  void OnToken(const TokenScheduler::TokenEvent& event) override {
    asio::post(socket_.get_executor(),
               [self = shared_from_this(), event] { self->HandleToken(event); });
  }

  // Scheduler strand, while the session waits for the metrics page.
  std::string* response_body() { return &response_.body(); }

  void OnMetricsRendered() {
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      self->PrepareResponse(http::status::ok, "text/plain; version=0.0.4; charset=utf-8");
      self->WriteResponse();
    });
  }

 private:
  enum class RequestKind { kInfer, kCompletion };

  void ReadRequest() {
    response_.erase(http::field::allow);
    parser_.emplace();
    parser_->body_limit(kMaxBodyBytes);
    parser_->header_limit(kMaxHeaderBytes);
    http::async_read_header(
        socket_, buffer_, *parser_,
        beast::bind_front_handler(&HttpSession::OnReadHeader, shared_from_this()));
  }

  // Clients such as curl send "Expect: 100-continue" before a large body and wait (curl: 1 s)
  // for the go-ahead; that wait must not show up as model latency.
  void OnReadHeader(beast::error_code ec, size_t) {
    if (ec || parser_->is_done()) return OnRead(ec, 0);
    const http::request<http::string_body>& request = parser_->get();
    if (request.version() >= 11 && beast::iequals(request[http::field::expect], "100-continue")) {
      http::async_write(socket_, continue_response_,
                        [self = shared_from_this()](beast::error_code ec, size_t) {
                          if (ec) return self->Close();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(socket_, buffer_, *parser_,
                     beast::bind_front_handler(&HttpSession::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, size_t) {
    if (ec == http::error::end_of_stream) return Close();
    if (ec == http::error::body_limit) {
      keep_alive_ = false;
      version_ = 11;
      return SendError(http::status::payload_too_large,
                       absl::StrCat("request body exceeds ", kMaxBodyBytes, " bytes"));
    }
    if (ec && IsHttpProtocolError(ec)) {
      keep_alive_ = false;
      version_ = 11;
      return SendError(http::status::bad_request, absl::StrCat("bad HTTP request: ", ec.message()));
    }
    if (ec) return Close();
    HandleRequest();
  }

  void HandleRequest() {
    const http::request<http::string_body>& request = parser_->get();
    keep_alive_ = request.keep_alive();
    version_ = request.version();
    openai_errors_ = false;

    absl::string_view path(request.target().data(), request.target().size());
    absl::string_view query;
    if (size_t mark = path.find('?'); mark != absl::string_view::npos) {
      query = path.substr(mark + 1);
      path = path.substr(0, mark);
    }
    const http::verb method = request.method();
    constexpr absl::string_view kAdmin = "/admin/";
    const bool admin = path.substr(0, kAdmin.size()) == kAdmin;
    if (!admin && core_->Down()) return Close();  // a lost replica answers nothing

    if (path == "/v2/health/live" || path == "/v2/health/ready") {
      if (method != http::verb::get) return MethodNotAllowed("GET");
      return SendJson(http::status::ok,
                      path == "/v2/health/live" ? "{\"live\":true}" : "{\"ready\":true}");
    }
    if (path == "/v2" || path == "/v2/") {
      if (method != http::verb::get) return MethodNotAllowed("GET");
      return SendJson(http::status::ok, ServerMetadataJson());
    }
    if (path == "/metrics") {
      if (method != http::verb::get) return MethodNotAllowed("GET");
      response_.body().clear();
      asio::post(core_->scheduler_strand, [self = shared_from_this()] {
        self->core_->AppendMetrics(self->response_body());
        self->OnMetricsRendered();
      });
      return;
    }
    if (path == "/v1/completions" || path == "/v1/chat/completions") {
      openai_errors_ = true;
      if (method != http::verb::post) return MethodNotAllowed("POST");
      return HandleCompletion(/*chat=*/path == "/v1/chat/completions");
    }
    if (path == "/v1/models") {
      openai_errors_ = true;
      if (method != http::verb::get) return MethodNotAllowed("GET");
      return SendJson(http::status::ok,
                      absl::StrCat(R"({"object":"list","data":[{"id":")", core_->model_label,
                                   R"(","object":"model","owned_by":"vanguard-sim"}]})"));
    }
    if (admin) {
      if (method != http::verb::post) return MethodNotAllowed("POST");
      return HandleAdmin(path.substr(kAdmin.size()), query);
    }
    constexpr absl::string_view kModels = "/v2/models/";
    if (path.substr(0, kModels.size()) == kModels)
      return HandleModelPath(path.substr(kModels.size()));
    SendError(http::status::not_found, absl::StrCat("unknown path ", path));
  }

  // rest: "{name}[/versions/{version}][/ready|/infer]".
  void HandleModelPath(absl::string_view rest) {
    const http::verb method = parser_->get().method();
    const size_t slash = rest.find('/');
    const absl::string_view name = rest.substr(0, slash);
    absl::string_view action = slash == absl::string_view::npos ? "" : rest.substr(slash);
    constexpr absl::string_view kVersions = "/versions/";
    std::optional<absl::string_view> version;
    if (action.substr(0, kVersions.size()) == kVersions) {
      absl::string_view after = action.substr(kVersions.size());
      const size_t end = after.find('/');
      version = after.substr(0, end);
      action = end == absl::string_view::npos ? "" : after.substr(end);
    }
    if (action != "" && action != "/ready" && action != "/infer") {
      return SendError(http::status::not_found, "unknown path under /v2/models/");
    }
    if (name != core_->model_name) {
      return SendError(http::status::not_found,
                       absl::StrCat("unknown model \"", name, "\"; this server serves \"",
                                    core_->model_name, "\""));
    }
    if (version.has_value() && *version != kModelVersion) {
      return SendError(http::status::not_found,
                       absl::StrCat("unknown version \"", *version, "\" of model \"", name,
                                    "\"; available: ", kModelVersion));
    }
    if (action == "") {
      if (method != http::verb::get) return MethodNotAllowed("GET");
      return SendJson(http::status::ok, ModelMetadataJson(core_->model_name));
    }
    if (action == "/ready") {
      if (method != http::verb::get) return MethodNotAllowed("GET");
      return SendJson(http::status::ok, "{\"ready\":true}");
    }
    if (method != http::verb::post) return MethodNotAllowed("POST");
    HandleInfer();
  }

  void HandleInfer() {
    absl::StatusOr<InferRequest> request = ParseInferRequest(parser_->get().body());
    if (!request.ok()) {
      core_->malformed_requests.fetch_add(1, std::memory_order_relaxed);
      return SendError(http::status::bad_request, request.status().message());
    }
    if (core_->TakeInjectedFailure()) {
      return SendError(http::status::internal_server_error,
                       "injected failure (POST /admin/fail_next)");
    }
    // The response is ready now; the model only decides when it may leave.
    kind_ = RequestKind::kInfer;
    response_.body().clear();
    AppendInferResponse(core_->model_name, *request, &response_.body());
    PrepareResponse(http::status::ok, "application/json");
    core_->Submit(shared_from_this(), /*max_tokens=*/0,
                  ContentCost(core_->profile, request->elements));
  }

  void HandleCompletion(bool chat) {
    if (!core_->generative) {
      return SendError(http::status::not_found,
                       "this model is not generative: start the simulator with a generative "
                       "profile (e.g. --profile=llm) to serve /v1/completions");
    }
    absl::StatusOr<CompletionRequest> request = ParseCompletionRequest(parser_->get().body(), chat);
    if (!request.ok()) {
      core_->malformed_requests.fetch_add(1, std::memory_order_relaxed);
      return SendError(http::status::bad_request, request.status().message());
    }
    if (request->model.has_value() && *request->model != core_->model_name) {
      return SendError(http::status::not_found, absl::StrCat("The model `", *request->model,
                                                             "` does not exist; this "
                                                             "server serves `",
                                                             core_->model_name, "`"));
    }
    if (core_->TakeInjectedFailure()) {
      return SendError(http::status::internal_server_error,
                       "injected failure (POST /admin/fail_next)");
    }
    kind_ = RequestKind::kCompletion;
    completion_ = *std::move(request);
    completion_id_ = absl::StrCat(chat ? "chatcmpl-" : "cmpl-", core_->next_completion_id.fetch_add(
                                                                    1, std::memory_order_relaxed));
    completion_created_ = UnixSeconds();
    stream_started_ = false;
    stream_done_ = false;
    core_->Submit(shared_from_this(), completion_.max_tokens);
  }

  void HandleToken(const TokenScheduler::TokenEvent& event) {
    if (event.failed) {
      if (stream_started_) return Close();  // cannot happen: failures come before any token
      return SendError(http::status::internal_server_error,
                       "the model failed this request (simulated error_rate)");
    }
    if (kind_ == RequestKind::kInfer) {
      if (event.last) WriteResponse();
      return;
    }
    const bool length_capped =
        completion_.max_tokens > 0 && event.output_tokens >= completion_.max_tokens;
    const absl::string_view finish_reason = length_capped ? "length" : "stop";
    if (!completion_.stream) {
      if (!event.last) return;
      return SendJson(
          http::status::ok,
          CompletionResponseJson(completion_, completion_id_, completion_created_,
                                 core_->model_name, event.token_index,
                                 core_->profile.generative.prompt_tokens, finish_reason));
    }
    if (!stream_started_) {
      stream_started_ = true;
      chunked_ = version_ >= 11;
      if (!chunked_) keep_alive_ = false;
      absl::StrAppend(&stream_pending_, "HTTP/1.", version_ >= 11 ? "1" : "0",
                      " 200 OK\r\nServer: vanguard-sim-predictor\r\n"
                      "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n",
                      chunked_ ? "Transfer-Encoding: chunked\r\n" : "",
                      keep_alive_ ? "" : "Connection: close\r\n", "\r\n");
    }
    std::string data;
    AppendCompletionChunk(
        completion_, completion_id_, completion_created_, core_->model_name, event.token_index,
        event.last ? std::optional<absl::string_view>(finish_reason) : std::nullopt, &data);
    if (event.last) {
      if (completion_.include_usage) {
        AppendUsageChunk(completion_, completion_id_, completion_created_, core_->model_name,
                         core_->profile.generative.prompt_tokens, event.token_index, &data);
      }
      AppendDoneEvent(&data);
    }
    AppendStreamData(data);
    if (event.last) {
      if (chunked_) stream_pending_.append("0\r\n\r\n");
      stream_done_ = true;
    }
    WriteStream();
  }

  void AppendStreamData(absl::string_view data) {
    if (chunked_) {
      absl::StrAppend(&stream_pending_, absl::Hex(data.size()), "\r\n", data, "\r\n");
    } else {
      stream_pending_.append(data.data(), data.size());
    }
  }

  void WriteStream() {
    if (stream_writing_ || stream_pending_.empty()) return;
    stream_writing_ = true;
    std::swap(stream_in_flight_, stream_pending_);
    stream_pending_.clear();
    asio::async_write(socket_, asio::buffer(stream_in_flight_),
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        self->stream_writing_ = false;
                        if (ec) return self->Close();
                        if (!self->stream_pending_.empty()) return self->WriteStream();
                        if (self->stream_done_) {
                          self->stream_started_ = false;
                          self->stream_done_ = false;
                          return self->OnWrite({}, 0);
                        }
                      });
  }

  void HandleAdmin(absl::string_view action, absl::string_view query) {
    auto number = [&](absl::string_view key, double lo, double hi) -> std::optional<double> {
      std::optional<std::string> text = QueryValue(query, key);
      double value = 0;
      if (!text.has_value() || !absl::SimpleAtod(*text, &value) || !(value >= lo && value <= hi)) {
        return std::nullopt;
      }
      return value;
    };
    if (action == "stall") {
      std::optional<double> ms = number("ms", 0, 3.6e6);
      if (!ms) return SendError(http::status::bad_request, "stall needs ms=0..3600000");
      asio::post(core_->scheduler_strand, [self = shared_from_this(), ms = *ms] {
        self->core_->InjectStall(absl::Nanoseconds(ms * 1e6));
        asio::post(self->socket_.get_executor(), [self, ms] {
          self->SendJson(http::status::ok, absl::StrCat("{\"stalled_ms\":", ms, "}"));
        });
      });
      return;
    }
    if (action == "fail_next") {
      std::optional<double> n = number("n", 0, 1e12);
      if (!n) return SendError(http::status::bad_request, "fail_next needs n=0..1e12");
      core_->fail_next.store(static_cast<int64_t>(*n));
      return SendJson(http::status::ok,
                      absl::StrCat("{\"fail_next\":", static_cast<int64_t>(*n), "}"));
    }
    if (action == "drop_connections") {
      const int dropped = core_->DropConnections(this);
      return SendJson(http::status::ok, absl::StrCat("{\"dropped\":", dropped, "}"));
    }
    if (action == "down") {
      std::optional<double> seconds = number("seconds", 0, 86400);
      if (!seconds) return SendError(http::status::bad_request, "down needs seconds=0..86400");
      core_->down_until_ns.store(absl::ToInt64Nanoseconds(core_->Now()) +
                                 static_cast<int64_t>(*seconds * 1e9));
      const int dropped = core_->DropConnections(this);
      return SendJson(http::status::ok,
                      absl::StrCat("{\"down_seconds\":", *seconds, ",\"dropped\":", dropped, "}"));
    }
    if (action == "up") {
      core_->down_until_ns.store(0);
      return SendJson(http::status::ok, "{\"up\":true}");
    }
    if (action == "restart") return HandleRestart(query);
    if (action == "colocation") {
      std::optional<double> fraction = number("fraction", 0, 0.95);
      if (!fraction)
        return SendError(http::status::bad_request, "colocation needs fraction=0..0.95");
      asio::post(core_->scheduler_strand, [self = shared_from_this(), f = *fraction] {
        self->core_->SetColocation(f);
        asio::post(self->socket_.get_executor(), [self, f] {
          self->SendJson(http::status::ok, absl::StrCat("{\"colocation\":", f, "}"));
        });
      });
      return;
    }
    if (action == "exit") {
      std::optional<double> code = number("code", 0, 255);
      exit_code_after_write_ = code.has_value() ? static_cast<int>(*code) : 1;
      keep_alive_ = false;
      return SendJson(http::status::ok,
                      absl::StrCat("{\"exiting\":", *exit_code_after_write_, "}"));
    }
    SendError(http::status::not_found,
              absl::StrCat("unknown admin action \"", action,
                           "\"; known: stall?ms=, fail_next?n=, drop_connections, "
                           "down?seconds=, up, restart?down_s=&warmup_s=&factor=, "
                           "colocation?fraction=, exit?code="));
  }

  // /admin/restart?down_s=D&warmup_s=S&factor=F: a replica switching to a new version. Down
  // (as /admin/down, connections dropped) for D seconds (default 0: switched in place,
  // connections kept), then cold: service times F times longer decaying to 1 over S seconds
  // (defaults: the profile's warmup_factor and warmup_s, as after the simulator's start).
  void HandleRestart(absl::string_view query) {
    const Perturbations& initial = core_->InitialPerturbations();
    struct Param {
      const char* key;
      double lo, hi, value;
    };
    Param params[] = {{"down_s", 0, 86400, 0},
                      {"warmup_s", 0, 86400, absl::ToDoubleSeconds(initial.warmup)},
                      {"factor", 1, 1000, initial.warmup_factor}};
    for (Param& p : params) {
      std::optional<std::string> text = QueryValue(query, p.key);
      if (!text.has_value()) continue;
      if (!absl::SimpleAtod(*text, &p.value) || !(p.value >= p.lo && p.value <= p.hi)) {
        return SendError(http::status::bad_request,
                         absl::StrCat("restart needs ", p.key, "=", p.lo, "..", p.hi));
      }
    }
    const double down_s = params[0].value, warmup_s = params[1].value, factor = params[2].value;
    const absl::Duration cold_from = core_->Now() + absl::Seconds(down_s);
    int dropped = 0;
    if (down_s > 0) {
      core_->down_until_ns.store(absl::ToInt64Nanoseconds(cold_from));
      dropped = core_->DropConnections(this);
    }
    const std::string reply = absl::StrCat("{\"down_s\":", down_s, ",\"warmup_s\":", warmup_s,
                                           ",\"factor\":", factor, ",\"dropped\":", dropped, "}");
    asio::post(core_->scheduler_strand,
               [self = shared_from_this(), cold_from, factor, warmup_s, reply] {
                 self->core_->Restart(cold_from, factor, absl::Seconds(warmup_s));
                 asio::post(self->socket_.get_executor(),
                            [self, reply] { self->SendJson(http::status::ok, reply); });
               });
  }

  void MethodNotAllowed(absl::string_view allowed) {
    response_.set(http::field::allow, ToBeast(allowed));
    SendError(http::status::method_not_allowed,
              absl::StrCat("method ",
                           absl::string_view(parser_->get().method_string().data(),
                                             parser_->get().method_string().size()),
                           " not allowed here; use ", allowed));
  }

  void SendError(http::status status, absl::string_view message) {
    if (openai_errors_) {
      const int code = static_cast<int>(status);
      const absl::string_view type = code == 400   ? "BadRequestError"
                                     : code == 404 ? "NotFoundError"
                                     : code == 503 ? "ServiceUnavailableError"
                                                   : "InternalServerError";
      return SendJson(status, OpenAiErrorJson(message, type, code));
    }
    SendJson(status, ErrorJson(message));
  }

  void SendJson(http::status status, absl::string_view body) {
    response_.body().assign(body.data(), body.size());
    PrepareResponse(status, "application/json");
    WriteResponse();
  }

  void PrepareResponse(http::status status, absl::string_view content_type) {
    response_.result(status);
    response_.version(version_);
    response_.keep_alive(keep_alive_);
    response_.set(http::field::content_type, ToBeast(content_type));
    response_.prepare_payload();
  }

  void WriteResponse() {
    http::async_write(socket_, response_,
                      beast::bind_front_handler(&HttpSession::OnWrite, shared_from_this()));
  }

  void OnWrite(beast::error_code ec, size_t) {
    if (exit_code_after_write_.has_value()) std::_Exit(*exit_code_after_write_);
    if (ec) return Close();
    if (!keep_alive_) {
      beast::error_code ignored;
      socket_.shutdown(tcp::socket::shutdown_send, ignored);
      return Close();
    }
    ReadRequest();
  }

  void Close() {
    beast::error_code ignored;
    socket_.close(ignored);
  }

  tcp::socket socket_;
  SimPredictorServer::Core* core_;
  beast::flat_buffer buffer_;  // reused across requests on this connection
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;  // reused; its body keeps its capacity
  http::response<http::empty_body> continue_response_{http::status::continue_, 11};
  bool keep_alive_ = true;
  unsigned version_ = 11;
  bool openai_errors_ = false;
  std::optional<int> exit_code_after_write_;

  // The request with the model (one at a time).
  RequestKind kind_ = RequestKind::kInfer;
  CompletionRequest completion_;
  std::string completion_id_;
  int64_t completion_created_ = 0;
  // Streaming: bytes waiting to be written, bytes being written.
  bool stream_started_ = false;
  bool stream_done_ = false;
  bool stream_writing_ = false;
  bool chunked_ = true;
  std::string stream_pending_;
  std::string stream_in_flight_;
};

// One gRPC ModelInfer call waiting for the model; finishes the call exactly once (on the
// scheduler strand, or in its destructor if the server drops it).
class GrpcPendingInfer : public PendingRequest {
 public:
  GrpcPendingInfer(grpc::ServerUnaryReactor* reactor) : reactor_(reactor) {}
  ~GrpcPendingInfer() override {
    Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
  }

  void OnFinished(RequestOutcome outcome) override {
    switch (outcome) {
      case RequestOutcome::kServed:
        return Finish(grpc::Status::OK);
      case RequestOutcome::kFailed:
        return Finish(grpc::Status(grpc::StatusCode::INTERNAL,
                                   "the model failed this request (simulated error_rate)"));
      case RequestOutcome::kRejected:
        return Finish(
            grpc::Status(grpc::StatusCode::UNAVAILABLE,
                         "queue full: the model's max_queue waiting requests are already queued"));
      case RequestOutcome::kShutdown:
        return Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
    }
  }

  void OnToken(const TokenScheduler::TokenEvent& event) override {
    if (event.failed) {
      return Finish(grpc::Status(grpc::StatusCode::INTERNAL,
                                 "the model failed this request (simulated error_rate)"));
    }
    if (event.last) Finish(grpc::Status::OK);
  }

 private:
  void Finish(const grpc::Status& status) {
    if (finished_) return;
    finished_ = true;
    reactor_->Finish(status);
  }

  grpc::ServerUnaryReactor* reactor_;
  bool finished_ = false;
};

// KServe v2 gRPC (inference.GRPCInferenceService) on gRPC's callback API; its methods run on
// gRPC threads. ModelInfer enters the same model as the REST endpoint.
class GrpcInferenceService final : public inference::GRPCInferenceService::CallbackService {
 public:
  explicit GrpcInferenceService(SimPredictorServer::Core* core) : core_(core) {}

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* context,
                                       const inference::ServerLiveRequest*,
                                       inference::ServerLiveResponse* response) override {
    response->set_live(true);
    return Done(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* context,
                                        const inference::ServerReadyRequest*,
                                        inference::ServerReadyResponse* response) override {
    response->set_ready(!core_->stopping.load());
    return Done(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* context,
                                       const inference::ModelReadyRequest* request,
                                       inference::ModelReadyResponse* response) override {
    grpc::Status status = CheckModel(request->name(), request->version());
    if (status.ok()) response->set_ready(true);
    return Done(context, status);
  }

  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* context,
                                           const inference::ServerMetadataRequest*,
                                           inference::ServerMetadataResponse* response) override {
    response->set_name("vanguard-sim-predictor");
    response->set_version("0.1.0");
    return Done(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* context,
                                          const inference::ModelMetadataRequest* request,
                                          inference::ModelMetadataResponse* response) override {
    grpc::Status status = CheckModel(request->name(), request->version());
    if (status.ok()) {
      response->set_name(core_->model_name);
      response->add_versions(kModelVersion);
      response->set_platform("vanguard_sim");
      auto* input = response->add_inputs();
      input->set_name("input0");
      input->set_datatype("FP32");
      input->add_shape(-1);
      input->add_shape(-1);
      auto* output = response->add_outputs();
      output->set_name(kOutputName);
      output->set_datatype("FP32");
      output->add_shape(-1);
      output->add_shape(-1);
    }
    return Done(context, status);
  }

  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* context,
                                       const inference::ModelInferRequest* request,
                                       inference::ModelInferResponse* response) override {
    grpc::Status status = CheckModel(request->model_name(), request->model_version());
    if (!status.ok()) return Done(context, status);
    if (request->inputs_size() == 0) {
      core_->malformed_requests.fetch_add(1, std::memory_order_relaxed);
      return Done(context, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                        "inputs: at least one input tensor is required"));
    }
    if (core_->stopping.load()) {
      return Done(context,
                  grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
    }
    if (core_->TakeInjectedFailure()) {
      return Done(context, grpc::Status(grpc::StatusCode::INTERNAL,
                                        "injected failure (POST /admin/fail_next)"));
    }
    FillInferResponse(*request, core_->model_name, response);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    core_->Submit(std::make_shared<GrpcPendingInfer>(reactor), /*max_tokens=*/0,
                  ContentCost(core_->profile, InputElements(*request)));
    return reactor;
  }

 private:
  static grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* context,
                                        const grpc::Status& status) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }

  grpc::Status CheckModel(const std::string& name, const std::string& version) const {
    if (name != core_->model_name) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("unknown model \"", name, "\"; this server serves \"",
                                       core_->model_name, "\""));
    }
    if (!version.empty() && version != kModelVersion) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("unknown version \"", version, "\" of model \"", name,
                                       "\"; available: ", kModelVersion));
    }
    return grpc::Status::OK;
  }

  SimPredictorServer::Core* core_;
};

void SimPredictorServer::Core::Accept() {
  acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || stopping.load()) return;
    if (!ec) {
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      auto session = std::make_shared<HttpSession>(std::move(socket), this);
      RegisterSession(session);
      session->Start();
    }
    Accept();
  });
}

void SimPredictorServer::Core::RegisterSession(const std::shared_ptr<HttpSession>& session) {
  absl::MutexLock lock(&sessions_mu);
  // Forget closed connections now and then, so the list stays about as long as the live set.
  if (sessions.size() >= 64 && sessions.size() == sessions.capacity()) {
    sessions.erase(std::remove_if(sessions.begin(), sessions.end(),
                                  [](const std::weak_ptr<HttpSession>& s) { return s.expired(); }),
                   sessions.end());
    sessions.reserve(sessions.size() * 2 + 64);
  }
  sessions.push_back(session);
}

int SimPredictorServer::Core::DropConnections(const HttpSession* keep) {
  std::vector<std::shared_ptr<HttpSession>> live;
  {
    absl::MutexLock lock(&sessions_mu);
    for (const std::weak_ptr<HttpSession>& weak : sessions) {
      std::shared_ptr<HttpSession> session = weak.lock();
      if (session != nullptr && session.get() != keep) live.push_back(std::move(session));
    }
    sessions.clear();
  }
  for (const auto& session : live) session->Drop();
  return static_cast<int>(live.size());
}

bool SimPredictorServer::Core::TakeInjectedFailure() {
  int64_t remaining = fail_next.load(std::memory_order_relaxed);
  while (remaining > 0) {
    if (fail_next.compare_exchange_weak(remaining, remaining - 1)) {
      injected_failures.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

void SimPredictorServer::Core::Submit(std::shared_ptr<PendingRequest> request, int max_tokens,
                                      double cost) {
  asio::post(scheduler_strand, [this, request = std::move(request), max_tokens, cost]() mutable {
    OnArrival(std::move(request), max_tokens, cost);
  });
}

void SimPredictorServer::Core::OnArrival(std::shared_ptr<PendingRequest> request, int max_tokens,
                                         double cost) {
  if (stopping.load()) {
    request->OnFinished(RequestOutcome::kShutdown);
    return;
  }
  const uint64_t id = next_request_id++;
  const absl::Duration now = Now();
  bool rejected;
  if (generative) {
    rejected = token_scheduler->Arrive(id, now, max_tokens, &token_events) ==
               TokenScheduler::Admission::kRejected;
  } else {
    rejected =
        batch_scheduler->Arrive(id, now, &completions, cost) == SlotScheduler::Admission::kRejected;
    Rescale(now);
  }
  Deliver();
  if (rejected) {
    request->OnFinished(RequestOutcome::kRejected);
  } else {
    pending.emplace(id, std::move(request));
  }
  ArmEventTimer();
}

void SimPredictorServer::Core::AdvanceModel(absl::Duration now) {
  if (generative) {
    token_scheduler->AdvanceTo(now, &token_events);
  } else {
    batch_scheduler->AdvanceTo(now, &completions);
    Rescale(now);
  }
  Deliver();
}

void SimPredictorServer::Core::Rescale(absl::Duration now) {
  if (!autoscaler) return;
  const SlotScheduler::Stats& stats = batch_scheduler->stats();
  const int slots = profile.batch.slots *
                    autoscaler->Observe(now, static_cast<double>(stats.queued + stats.in_service));
  if (slots != batch_scheduler->config().slots) {
    batch_scheduler->SetSlots(slots, now, &completions);
  }
}

void SimPredictorServer::Core::Deliver() {
  for (const SlotScheduler::Completion& completion : completions) {
    auto it = pending.find(completion.request_id);
    if (it == pending.end()) continue;  // cannot happen: every admitted id is pending
    std::shared_ptr<PendingRequest> request = std::move(it->second);
    pending.erase(it);
    request->OnFinished(completion.failed ? RequestOutcome::kFailed : RequestOutcome::kServed);
  }
  completions.clear();
  for (const TokenScheduler::TokenEvent& event : token_events) {
    auto it = pending.find(event.request_id);
    if (it == pending.end()) continue;
    it->second->OnToken(event);
    if (event.last) pending.erase(it);
  }
  token_events.clear();
}

void SimPredictorServer::Core::ArmEventTimer() {
  std::optional<absl::Duration> next =
      generative ? token_scheduler->NextEventTime() : batch_scheduler->NextEventTime();
  if (std::optional<absl::Duration> scale =
          autoscaler ? autoscaler->NextEventTime() : std::nullopt) {
    next = next ? std::min(*next, *scale) : scale;
  }
  if (!next.has_value() || stopping.load()) return;
  if (timer_armed && timer_deadline <= *next) return;
  // Re-arming cancels an outstanding wait (its handler sees operation_aborted); a wait that
  // already expired still runs, finds nothing due, and re-arms: harmless.
  timer_armed = true;
  timer_deadline = *next;
  event_timer.expires_at(epoch + absl::ToChronoNanoseconds(*next));
  event_timer.async_wait([this](const beast::error_code& ec) { OnEventTimer(ec); });
}

void SimPredictorServer::Core::OnEventTimer(const beast::error_code& ec) {
  if (ec == asio::error::operation_aborted || stopping.load()) return;
  // The steady clock has reached the deadline, but the absl/chrono round trip may not agree
  // to the nanosecond; never ask the model for less than the deadline we slept to.
  const absl::Duration now = std::max(Now(), timer_deadline);
  timer_armed = false;
  AdvanceModel(now);
  ArmEventTimer();
}

void SimPredictorServer::Core::InjectStall(absl::Duration length) {
  if (generative) {
    token_scheduler->InjectStall(Now(), length, &token_events);
  } else {
    batch_scheduler->InjectStall(Now(), length, &completions);
  }
  Deliver();
  // The earliest event moved later: re-arm from scratch.
  timer_armed = false;
  event_timer.cancel();
  ArmEventTimer();
}

void SimPredictorServer::Core::SetColocation(double fraction) {
  AdvanceModel(Now());
  if (generative) {
    token_scheduler->SetColocation(fraction);
  } else {
    batch_scheduler->SetColocation(fraction);
  }
  ArmEventTimer();
}

void SimPredictorServer::Core::Restart(absl::Duration cold_from, double factor,
                                       absl::Duration warmup) {
  AdvanceModel(Now());
  if (generative) {
    token_scheduler->Restart(cold_from, factor, warmup);
  } else {
    batch_scheduler->Restart(cold_from, factor, warmup);
  }
  ArmEventTimer();
}

void SimPredictorServer::Core::FailAllPending() {
  for (auto& [id, request] : pending) request->OnFinished(RequestOutcome::kShutdown);
  pending.clear();
}

void SimPredictorServer::Core::AppendMetrics(std::string* out) {
  const absl::Duration now = Now();
  AdvanceModel(now);
  ArmEventTimer();
  const std::string labels =
      absl::StrCat("{model=\"", model_label, "\",version=\"", kModelVersion, "\"}");
  const std::string model_only = absl::StrCat("{model_name=\"", model_label, "\"}");
  auto metric = [&](absl::string_view name, absl::string_view type, absl::string_view help,
                    absl::string_view metric_labels, auto value) {
    absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n", name,
                    metric_labels, " ", value, "\n");
  };
  const uint64_t outside_model = malformed_requests.load(std::memory_order_relaxed) +
                                 injected_failures.load(std::memory_order_relaxed);
  uint64_t completed, failed, rejected, executions;
  int64_t waiting, running;
  absl::Duration queue_time;
  double utilization;
  double warmup_factor;
  if (generative) {
    const TokenScheduler::Stats& stats = token_scheduler->stats();
    completed = stats.completed;
    failed = stats.failed;
    rejected = stats.rejected;
    executions = stats.iterations;
    waiting = stats.waiting;
    running = stats.running;
    queue_time = stats.total_queue_time;
    utilization = token_scheduler->Utilization();
    warmup_factor = token_scheduler->WarmupFactor(now);
  } else {
    const SlotScheduler::Stats& stats = batch_scheduler->stats();
    completed = stats.completed;
    failed = stats.failed;
    rejected = stats.rejected;
    executions = stats.batches;
    waiting = stats.queued;
    running = stats.in_service;
    queue_time = stats.total_queue_time;
    utilization = batch_scheduler->Utilization(now);
    warmup_factor = batch_scheduler->WarmupFactor(now);
  }
  metric("nv_inference_request_success", "counter",
         "Number of successful inference requests, all batch sizes", labels, completed - failed);
  metric("nv_inference_request_failure", "counter",
         "Number of failed inference requests (malformed, rejected by a full queue, model "
         "errors, injected failures)",
         labels, rejected + failed + outside_model);
  metric("nv_inference_count", "counter", "Number of inferences performed", labels, completed);
  metric("nv_inference_exec_count", "counter",
         "Number of model executions performed (batches; decoding iterations when generative)",
         labels, executions);
  metric("nv_inference_pending_request_count", "gauge",
         "Instantaneous number of requests waiting to start (queued, not in service)", labels,
         waiting);
  metric("nv_inference_queue_duration_us", "counter",
         "Cumulative inference queuing duration in microseconds", labels,
         absl::ToInt64Microseconds(queue_time));
  if (!generative) {
    const SlotScheduler::Stats& stats = batch_scheduler->stats();
    metric("nv_inference_request_duration_us", "counter",
           "Cumulative inference request duration in microseconds (queue + compute)", labels,
           absl::ToInt64Microseconds(stats.total_queue_time + stats.total_service_time));
    metric("nv_inference_compute_infer_duration_us", "counter",
           "Cumulative compute inference duration in microseconds", labels,
           absl::ToInt64Microseconds(stats.total_service_time));
  }
  metric("nv_gpu_utilization", "gauge",
         "GPU utilization rate [0.0 - 1.0]: busy slots / slots (over the last second in batch "
         "mode)",
         "{gpu_uuid=\"GPU-vanguard-sim-0\"}", absl::StrFormat("%.6f", utilization));
  // A 16 GiB accelerator holding 6 GiB of weights plus what the work in flight needs (KV cache
  // in generative mode, activations of busy slots in batch mode): moves with load.
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  const double in_flight_share = generative ? token_scheduler->KvCacheUsage() : utilization;
  metric("nv_gpu_memory_total_bytes", "gauge", "GPU total memory, in bytes",
         "{gpu_uuid=\"GPU-vanguard-sim-0\"}", absl::StrFormat("%.0f", 16 * kGiB));
  metric("nv_gpu_memory_used_bytes", "gauge", "GPU used memory, in bytes",
         "{gpu_uuid=\"GPU-vanguard-sim-0\"}",
         absl::StrFormat("%.0f", (6 + 8 * in_flight_share) * kGiB));
  // vLLM's names for the same two populations, for procedures that judge the waiting queue.
  metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed",
         model_only, waiting);
  metric("vllm:num_requests_running", "gauge", "Number of requests currently being served",
         model_only, running);
  if (generative) {
    metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
           model_only, absl::StrFormat("%.6f", token_scheduler->KvCacheUsage()));
    metric("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
           model_only, token_scheduler->stats().tokens);
  }
  if (autoscaler) {
    metric("vanguard_sim_replicas", "gauge",
           "Replicas of the autoscaled fleet ready to serve (each with the profile's slots)",
           labels, autoscaler->ready());
    metric("vanguard_sim_replicas_starting", "gauge",
           "Replicas of the autoscaled fleet started and still in their cold start", labels,
           autoscaler->starting());
    metric("vanguard_sim_replicas_desired", "gauge",
           "Replicas the autoscaled fleet's rule wants for the work in flight", labels,
           autoscaler->desired());
  }
  metric("vanguard_sim_warmup_factor", "gauge",
         "Current service-time multiplier of the simulated model's warmup (1 = warm)", labels,
         absl::StrFormat("%.6f", warmup_factor));
  metric("vanguard_sim_saturation_rps", "gauge",
         "Requests per second the simulated profile serves at saturation after warmup", labels,
         absl::StrFormat("%.3f", vanguard::sim::SaturationRps(profile)));
}

absl::StatusOr<std::unique_ptr<SimPredictorServer>> SimPredictorServer::Create(
    const SimPredictorConfig& config) {
  if (config.threads < 1 || config.threads > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads must be in [1, 256], got ", config.threads));
  }
  if (config.model_name.empty() || config.model_name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("model_name must be non-empty without '/', got \"", config.model_name, "\""));
  }
  SimPredictorConfig checked = config;
  if (absl::Status status = FinalizeProfile(checked.profile); !status.ok()) return status;
  if (checked.autoscale) {
    if (checked.profile.mode == ProfileMode::kGenerative) {
      return absl::InvalidArgumentError("autoscale: only batch profiles have a scaling fleet");
    }
    if (absl::StatusOr<ReplicaAutoscaler> fleet = ReplicaAutoscaler::Create(*checked.autoscale);
        !fleet.ok()) {
      return fleet.status();
    }
  }
  absl::StatusOr<HostPort> host_port = ParseListen(checked.listen);
  if (!host_port.ok()) return host_port.status();
  std::optional<HostPort> grpc_host_port;
  if (!checked.grpc_listen.empty()) {
    absl::StatusOr<HostPort> parsed = ParseListen(checked.grpc_listen);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("grpc_", parsed.status().message()));
    }
    grpc_host_port = *parsed;
  }

  std::unique_ptr<SimPredictorServer> server(new SimPredictorServer());
  server->core_ = std::make_unique<Core>(checked);
  Core& core = *server->core_;

  beast::error_code ec;
  tcp::endpoint endpoint;
  const asio::ip::address address = asio::ip::make_address(host_port->host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(address, static_cast<uint16_t>(host_port->port));
  } else {
    tcp::resolver resolver(core.io);
    auto results = resolver.resolve(host_port->host, std::to_string(host_port->port),
                                    tcp::resolver::passive, ec);
    if (ec || results.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("listen host \"", host_port->host, "\" does not resolve: ", ec.message()));
    }
    endpoint = results.begin()->endpoint();
  }
  auto fail = [&](absl::string_view step) {
    return absl::UnavailableError(
        absl::StrCat("cannot ", step, " ", checked.listen, ": ", ec.message()));
  };
  if (core.acceptor.open(endpoint.protocol(), ec)) return fail("open a socket for");
  if (core.acceptor.set_option(asio::socket_base::reuse_address(true), ec)) {
    return fail("set SO_REUSEADDR for");
  }
  if (core.acceptor.bind(endpoint, ec)) return fail("bind");
  if (core.acceptor.listen(asio::socket_base::max_listen_connections, ec)) return fail("listen on");
  const tcp::endpoint bound = core.acceptor.local_endpoint(ec);
  if (ec) return fail("read the bound address of");
  server->address_ = FormatEndpoint(bound);
  server->port_ = bound.port();

  if (grpc_host_port.has_value()) {
    core.grpc_service = std::make_unique<GrpcInferenceService>(&core);
    const std::string host = grpc_host_port->host.find(':') != std::string::npos
                                 ? absl::StrCat("[", grpc_host_port->host, "]")
                                 : grpc_host_port->host;
    int selected_port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort(absl::StrCat(host, ":", grpc_host_port->port),
                             grpc::InsecureServerCredentials(), &selected_port);
    builder.RegisterService(core.grpc_service.get());
    builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxBodyBytes));
    core.grpc_server = builder.BuildAndStart();
    if (core.grpc_server == nullptr || selected_port == 0) {
      return absl::UnavailableError(absl::StrCat("cannot serve gRPC on ", checked.grpc_listen));
    }
    server->grpc_address_ = absl::StrCat(host, ":", selected_port);
  }
  return server;
}

SimPredictorServer::~SimPredictorServer() {
  Shutdown();
  if (core_ != nullptr) core_->pending.clear();  // event loop stopped: no strand is running
}

double SimPredictorServer::SaturationRps() const {
  return vanguard::sim::SaturationRps(core_->profile);
}

void SimPredictorServer::Start() {
  core_->Accept();
  for (int i = 0; i < core_->threads; ++i) {
    core_->workers.emplace_back([core = core_.get()] {
      auto guard = asio::make_work_guard(core->io);
      core->io.run();
    });
  }
}

void SimPredictorServer::Shutdown() {
  if (core_ == nullptr || core_->stopping.exchange(true)) return;
  // gRPC waits for every call to finish: answer the ones still with the model first.
  if (core_->grpc_server != nullptr) {
    if (!core_->workers.empty()) {
      std::promise<void> drained;
      asio::post(core_->scheduler_strand, [core = core_.get(), &drained] {
        core->FailAllPending();
        drained.set_value();
      });
      drained.get_future().wait_for(std::chrono::seconds(2));
    }
    core_->grpc_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }
  asio::post(core_->acceptor.get_executor(), [core = core_.get()] {
    beast::error_code ignored;
    core->acceptor.close(ignored);
  });
  core_->io.stop();
  for (std::thread& worker : core_->workers) worker.join();
  core_->workers.clear();
  core_->pending.clear();
}

}  // namespace vanguard::sim
