// The simulated predictor's HTTP server; see sim_predictor_server.h.
//
// Threads: `threads` event-loop threads run io_context::run(). Each HttpSession's handlers run
// on that connection's strand; everything touching the SlotScheduler, the pending-request map
// and the completion timer runs on Core::scheduler_strand. A session hands itself to the
// scheduler strand (post) and gets its verdict back the same way, so the two never share
// state concurrently: while a request is with the scheduler, the session is idle.
#include "tests/simulator/sim_predictor_server.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "boost/asio/bind_executor.hpp"
#include "boost/asio/dispatch.hpp"
#include "boost/asio/executor_work_guard.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/strand.hpp"
#include "boost/beast/core/bind_handler.hpp"
#include "boost/beast/core/error.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/core/string.hpp"
#include "boost/beast/http.hpp"
#include "tests/simulator/inference_codec.h"

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

class HttpSession;

struct SimPredictorServer::Core {
  explicit Core(const SimPredictorConfig& config)
      : io(config.threads),
        acceptor(asio::make_strand(io)),
        scheduler_strand(asio::make_strand(io)),
        completion_timer(scheduler_strand),
        epoch(std::chrono::steady_clock::now()),
        model_name(config.model_name),
        model_label(EscapeLabel(config.model_name)),
        threads(config.threads),
        profile(config.profile),
        scheduler(config.profile.batch) {}

  // Virtual time of the scheduling model: steady time since the server was created.
  absl::Duration Now() const { return absl::FromChrono(std::chrono::steady_clock::now() - epoch); }

  void Accept();

  // Scheduler strand only.
  void OnInferArrival(std::shared_ptr<HttpSession> session);
  void OnCompletionTimer(const beast::error_code& ec);
  void DeliverCompletions();
  void ArmCompletionTimer();
  void AppendMetrics(std::string* out);

  // Declared first so it is destroyed last, after everything that holds its sockets.
  asio::io_context io;
  tcp::acceptor acceptor;
  asio::strand<asio::io_context::executor_type> scheduler_strand;
  asio::steady_timer completion_timer;  // scheduler strand
  const std::chrono::steady_clock::time_point epoch;
  const std::string model_name;
  const std::string model_label;  // escaped for Prometheus labels
  const int threads;
  const Profile profile;

  // Requests answered 400 for a malformed body; any session strand increments.
  std::atomic<uint64_t> malformed_requests{0};
  std::atomic<bool> stopping{false};

  // Scheduler strand only (strands are not visible to ABSL_GUARDED_BY).
  SlotScheduler scheduler;
  absl::flat_hash_map<uint64_t, std::shared_ptr<HttpSession>> pending;
  std::vector<SlotScheduler::Completion> completions;  // scratch, reused
  uint64_t next_request_id = 1;
  bool timer_armed = false;
  absl::Duration timer_deadline;

  std::vector<std::thread> workers;  // main thread only
};

// One client connection; handlers run on the connection's strand. Keeps one request in
// flight at a time (HTTP/1.1 without pipelining): the next read starts after the write.
class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket socket, SimPredictorServer::Core* core)
      : socket_(std::move(socket)), core_(core) {
    response_.set(http::field::server, "vanguard-sim-predictor");
  }

  void Start() {
    asio::dispatch(socket_.get_executor(),
                   beast::bind_front_handler(&HttpSession::ReadRequest, shared_from_this()));
  }

  // Called on the scheduler strand once the request was served (or rejected).
  void OnScheduled(bool served) {
    asio::post(socket_.get_executor(), [self = shared_from_this(), served] {
      if (served) {
        self->WriteResponse();
      } else {
        self->SendError(http::status::service_unavailable,
                        "queue full: the model's max_queue waiting requests are already queued");
      }
    });
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

    absl::string_view path(request.target().data(), request.target().size());
    if (size_t query = path.find('?'); query != absl::string_view::npos) {
      path = path.substr(0, query);
    }
    const http::verb method = request.method();

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
    // The response is ready now; the scheduler only decides when it may leave.
    response_.body().clear();
    AppendInferResponse(core_->model_name, *request, &response_.body());
    PrepareResponse(http::status::ok, "application/json");
    asio::post(core_->scheduler_strand, [self = shared_from_this()]() mutable {
      SimPredictorServer::Core* core = self->core_;
      core->OnInferArrival(std::move(self));
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
};

void SimPredictorServer::Core::Accept() {
  acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || stopping.load()) return;
    if (!ec) {
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      std::make_shared<HttpSession>(std::move(socket), this)->Start();
    }
    Accept();
  });
}

void SimPredictorServer::Core::OnInferArrival(std::shared_ptr<HttpSession> session) {
  if (stopping.load()) return;
  const uint64_t id = next_request_id++;
  completions.clear();
  const SlotScheduler::Admission admission = scheduler.Arrive(id, Now(), &completions);
  DeliverCompletions();
  if (admission == SlotScheduler::Admission::kRejected) {
    session->OnScheduled(false);
  } else {
    pending.emplace(id, std::move(session));
  }
  ArmCompletionTimer();
}

void SimPredictorServer::Core::DeliverCompletions() {
  for (const SlotScheduler::Completion& completion : completions) {
    auto it = pending.find(completion.request_id);
    if (it == pending.end()) continue;  // cannot happen: every admitted id is pending
    std::shared_ptr<HttpSession> session = std::move(it->second);
    pending.erase(it);
    session->OnScheduled(true);
  }
  completions.clear();
}

void SimPredictorServer::Core::ArmCompletionTimer() {
  const std::optional<absl::Duration> next = scheduler.NextEventTime();
  if (!next.has_value() || stopping.load()) return;
  if (timer_armed && timer_deadline <= *next) return;
  // Re-arming cancels an outstanding wait (its handler sees operation_aborted); a wait that
  // already expired still runs, finds nothing due, and re-arms: harmless.
  timer_armed = true;
  timer_deadline = *next;
  completion_timer.expires_at(epoch + absl::ToChronoNanoseconds(*next));
  completion_timer.async_wait([this](const beast::error_code& ec) { OnCompletionTimer(ec); });
}

void SimPredictorServer::Core::OnCompletionTimer(const beast::error_code& ec) {
  if (ec == asio::error::operation_aborted || stopping.load()) return;
  // The steady clock has reached the deadline, but the absl/chrono round trip may not agree
  // to the nanosecond; never ask the model for less than the deadline we slept to.
  const absl::Duration now = std::max(Now(), timer_deadline);
  timer_armed = false;
  scheduler.AdvanceTo(now, &completions);
  DeliverCompletions();
  ArmCompletionTimer();
}

void SimPredictorServer::Core::AppendMetrics(std::string* out) {
  const absl::Duration now = Now();
  completions.clear();
  scheduler.AdvanceTo(now, &completions);
  DeliverCompletions();
  ArmCompletionTimer();
  const SlotScheduler::Stats& stats = scheduler.stats();
  const std::string labels =
      absl::StrCat("{model=\"", model_label, "\",version=\"", kModelVersion, "\"}");
  auto metric = [&](absl::string_view name, absl::string_view type, absl::string_view help,
                    absl::string_view metric_labels, auto value) {
    absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n", name,
                    metric_labels, " ", value, "\n");
  };
  const uint64_t failures = stats.rejected + malformed_requests.load(std::memory_order_relaxed);
  metric("nv_inference_request_success", "counter",
         "Number of successful inference requests, all batch sizes", labels, stats.completed);
  metric("nv_inference_request_failure", "counter",
         "Number of failed inference requests (malformed or rejected by a full queue)", labels,
         failures);
  metric("nv_inference_count", "counter", "Number of inferences performed", labels,
         stats.completed);
  metric("nv_inference_exec_count", "counter", "Number of model executions performed", labels,
         stats.completed);
  metric("nv_inference_pending_request_count", "gauge",
         "Instantaneous number of requests queued or in service", labels,
         stats.queued + stats.in_service);
  metric("nv_inference_request_duration_us", "counter",
         "Cumulative inference request duration in microseconds (queue + compute)", labels,
         absl::ToInt64Microseconds(stats.total_queue_time + stats.total_service_time));
  metric("nv_inference_queue_duration_us", "counter",
         "Cumulative inference queuing duration in microseconds", labels,
         absl::ToInt64Microseconds(stats.total_queue_time));
  metric("nv_inference_compute_infer_duration_us", "counter",
         "Cumulative compute inference duration in microseconds", labels,
         absl::ToInt64Microseconds(stats.total_service_time));
  metric("nv_gpu_utilization", "gauge",
         "GPU utilization rate [0.0 - 1.0]: busy slots / slots over the last second",
         "{gpu_uuid=\"GPU-vanguard-sim-0\"}", absl::StrFormat("%.6f", scheduler.Utilization(now)));
  // vLLM's names for the same two populations, for procedures that judge the waiting queue.
  const std::string model_only = absl::StrCat("{model_name=\"", model_label, "\"}");
  metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed",
         model_only, stats.queued);
  metric("vllm:num_requests_running", "gauge", "Number of requests currently being served",
         model_only, stats.in_service);
}

absl::StatusOr<std::unique_ptr<SimPredictorServer>> SimPredictorServer::Create(
    const SimPredictorConfig& config) {
  if (config.threads < 1) {
    return absl::InvalidArgumentError(absl::StrCat("threads must be >= 1, got ", config.threads));
  }
  if (config.model_name.empty() || config.model_name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("model_name must be non-empty without '/', got \"", config.model_name, "\""));
  }
  Profile profile = config.profile;
  if (absl::Status status = FinalizeProfile(profile); !status.ok()) return status;
  absl::StatusOr<HostPort> host_port = ParseListen(config.listen);
  if (!host_port.ok()) return host_port.status();

  std::unique_ptr<SimPredictorServer> server(new SimPredictorServer());
  server->core_ = std::make_unique<Core>(config);
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
        absl::StrCat("cannot ", step, " ", config.listen, ": ", ec.message()));
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
  asio::post(core_->acceptor.get_executor(), [core = core_.get()] {
    beast::error_code ignored;
    core->acceptor.close(ignored);
  });
  core_->io.stop();
  for (std::thread& worker : core_->workers) worker.join();
  core_->workers.clear();
}

}  // namespace vanguard::sim
