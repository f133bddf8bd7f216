// End-to-end test of the recording reverse proxy: a client talks to an in-test upstream
// through the proxy; the client gets the upstream's answers, and the trace holds exactly the
// requests sent (bodies, paths, models, headers minus credentials, arrival gaps), replayable
// through the engine's trace source.
#include "replayer/trace/record_proxy.h"

#include <unistd.h>

#include <thread>
#include <utility>  // before Asio

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "boost/asio.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replayer/protocols/sse_parser.h"
#include "replayer/trace/trace_request_source.h"

namespace vanguard::replayer {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

// An upstream on 127.0.0.1:0 answering every request with "echo:<method> <target> <body>".
class EchoUpstream {
 public:
  EchoUpstream() : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    thread_ = std::thread([this] {
      while (true) {
        beast::error_code ec;
        tcp::socket socket(io_);
        acceptor_.accept(socket, ec);
        if (ec || stopping_) return;
        connections_.emplace_back([this, s = std::move(socket)]() mutable { Serve(std::move(s)); });
      }
    });
  }
  ~EchoUpstream() {
    stopping_ = true;
    beast::error_code ec;
    tcp::socket poke(io_);
    poke.connect(acceptor_.local_endpoint(), ec);  // wake accept()
    thread_.join();
    for (auto& t : connections_) t.join();
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  void Serve(tcp::socket socket) {
    beast::flat_buffer buffer;
    while (true) {
      http::request<http::string_body> request;
      beast::error_code ec;
      http::read(socket, buffer, request, ec);
      if (ec) return;
      http::response<http::string_body> response{http::status::ok, request.version()};
      response.set(http::field::content_type, "text/plain");
      response.body() = absl::StrCat("echo:", std::string(request.method_string()), " ",
                                     std::string(request.target()), " ", request.body());
      response.keep_alive(request.keep_alive());
      response.prepare_payload();
      http::write(socket, response, ec);
      if (ec || !request.keep_alive()) return;
    }
  }

  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  std::vector<std::thread> connections_;
};

TEST(RecordProxyTest, RecordsNRequestsThatReplayToTheSameBodies) {
  EchoUpstream upstream;
  FakeClock clock;
  std::string trace = absl::StrCat(::testing::TempDir(), "/recorded.", getpid(), ".vtr");
  constexpr int kRequests = 6;
  auto proxy = RecordProxy::Create({.listen = "127.0.0.1:0",
                                    .upstream = absl::StrCat("http://127.0.0.1:", upstream.port()),
                                    .output = trace,
                                    .max_requests = kRequests},
                                   &clock);
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  absl::Status run_status;
  std::thread runner([&] { run_status = (*proxy)->Run(); });

  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), (*proxy)->port()));
  beast::flat_buffer buffer;
  std::vector<std::string> bodies;
  for (int i = 0; i < kRequests; ++i) {
    http::request<http::string_body> request;
    request.version(11);
    request.method(http::verb::post);
    bool openai = i % 2 == 1;
    request.target(openai ? "/v1/chat/completions" : "/v2/models/resnet/infer");
    request.set(http::field::host, "proxy");
    request.set(http::field::content_type, "application/json");
    request.set(http::field::authorization, "Bearer do-not-record");
    request.set("X-Request-Id", absl::StrCat("r", i));
    request.body() = openai ? absl::StrCat(R"({"model":"llama","seq":)", i, "}")
                            : absl::StrCat(R"({"inputs":[{"seq":)", i, "}]}");
    request.keep_alive(true);
    request.prepare_payload();
    bodies.push_back(request.body());
    http::write(socket, request);
    http::response<http::string_body> response;
    http::read(socket, buffer, response);
    EXPECT_EQ(response.result_int(), 200);
    EXPECT_EQ(response.body(),
              absl::StrCat("echo:POST ", std::string(request.target()), " ", request.body()));
    clock.Advance(absl::Milliseconds(10 * (i + 1)));  // arrivals 10, 20, 30 ... ms apart
  }
  runner.join();  // the proxy stops by itself after kRequests
  ASSERT_TRUE(run_status.ok()) << run_status;
  EXPECT_EQ((*proxy)->requests_recorded(), kRequests);

  auto reader = TraceReader::Open(trace);
  ASSERT_TRUE(reader.ok()) << reader.status();
  TraceRecord record;
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(*(*reader)->Next(&record)) << i;
    EXPECT_EQ(record.payload, bodies[i]);
    EXPECT_EQ(record.method, "POST");
    EXPECT_EQ(record.interarrival_us, i == 0 ? 0u : static_cast<uint64_t>(10'000 * i));
    if (i % 2 == 1) {
      EXPECT_EQ(record.protocol, "openai_chat");
      EXPECT_EQ(record.model, "llama");
      EXPECT_EQ(record.path, "/v1/chat/completions");
    } else {
      EXPECT_EQ(record.protocol, "kserve_v2_rest");
      EXPECT_EQ(record.model, "resnet");
    }
    std::vector<std::string> names;
    for (const auto& [name, value] : record.headers) names.push_back(name);
    EXPECT_THAT(names, ::testing::UnorderedElementsAre("Content-Type", "X-Request-Id"));
  }
  EXPECT_FALSE(*(*reader)->Next(&record));

  // The recorded trace replays the same bodies through the engine's source.
  auto factory = OpenTraceSourceFactory(trace, {.loop = false});
  ASSERT_TRUE(factory.ok()) << factory.status();
  auto source = (*factory)(0, 1);
  ASSERT_TRUE(source.ok());
  OutgoingRequest request;
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE((*source)->Next(&request).ok());
    EXPECT_EQ(request.body, bodies[i]);
  }
}

TEST(RecordProxyTest, RelaysAStreamedResponseLiveNotWhenItEnds) {
  // The upstream sends the first SSE event, then holds the rest of the stream until the
  // client has seen that event through the proxy (bounded wait: a guard, not a timing test).
  asio::io_context upstream_io;
  tcp::acceptor upstream_acceptor(upstream_io,
                                  tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  std::atomic<bool> client_saw_first{false};
  std::atomic<bool> released_by_client{false};
  std::thread upstream([&] {
    tcp::socket socket(upstream_io);
    upstream_acceptor.accept(socket);
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    http::read(socket, buffer, request);
    asio::write(socket, asio::buffer(std::string_view(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n"
                            "d\r\ndata: first\n\n\r\n")));  // 13 bytes
    for (int i = 0; i < 2000 && !client_saw_first; ++i) absl::SleepFor(absl::Milliseconds(5));
    released_by_client = client_saw_first.load();
    asio::write(socket, asio::buffer(std::string_view(
                            "1c\r\ndata: second\n\ndata: [DONE]\n\n\r\n0\r\n\r\n")));  // 28
  });

  std::string trace = absl::StrCat(::testing::TempDir(), "/stream.", getpid(), ".vtr");
  auto proxy = RecordProxy::Create(
      {.upstream = absl::StrCat("http://127.0.0.1:", upstream_acceptor.local_endpoint().port()),
       .output = trace,
       .max_requests = 1});
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  absl::Status run_status;
  std::thread runner([&] { run_status = (*proxy)->Run(); });

  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), (*proxy)->port()));
  http::request<http::string_body> request{http::verb::post, "/v1/completions", 11};
  request.set(http::field::host, "proxy");
  request.body() = R"({"model":"llama","stream":true})";
  request.prepare_payload();
  http::write(socket, request);
  // Read the raw response: header, then the chunked body through our own decoder.
  std::string raw;
  std::string body;
  ChunkedBodyDecoder chunked;
  size_t header_end = std::string::npos;
  while (!chunked.done()) {
    char buf[256];
    beast::error_code ec;
    size_t n = socket.read_some(asio::buffer(buf), ec);
    if (ec) {
      ADD_FAILURE() << ec.message() << " after " << raw;
      break;
    }
    raw.append(buf, n);
    std::string_view fresh(buf, n);
    if (header_end == std::string::npos) {
      header_end = raw.find("\r\n\r\n");
      if (header_end == std::string::npos) continue;
      fresh = std::string_view(raw).substr(header_end + 4);
    }
    absl::Status fed = chunked.Feed(fresh, [&](std::string_view d) { body.append(d); });
    if (!fed.ok()) {
      ADD_FAILURE() << fed << " in " << raw;
      break;
    }
    if (body.find("data: first\n\n") != std::string::npos) client_saw_first = true;
  }
  socket.close();
  upstream.join();
  runner.join();
  EXPECT_TRUE(run_status.ok()) << run_status;
  EXPECT_TRUE(released_by_client) << "the proxy held the first event until the stream ended";
  EXPECT_EQ(body, "data: first\n\ndata: second\n\ndata: [DONE]\n\n");
  EXPECT_NE(raw.find("Content-Type: text/event-stream"), std::string::npos);
}

TEST(RecordProxyTest, Http10ClientsGetAnUnchunkedBodyEndedByClose) {
  EchoUpstream upstream;
  std::string trace = absl::StrCat(::testing::TempDir(), "/http10.", getpid(), ".vtr");
  auto proxy = RecordProxy::Create({.upstream = absl::StrCat("http://127.0.0.1:", upstream.port()),
                                    .output = trace,
                                    .max_requests = 1});
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  absl::Status run_status;
  std::thread runner([&] { run_status = (*proxy)->Run(); });
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), (*proxy)->port()));
  asio::write(socket, asio::buffer(std::string_view(
                          "POST /v2/models/m/infer HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}")));
  std::string raw;
  beast::error_code ec;
  while (!ec) {
    char buf[256];
    size_t n = socket.read_some(asio::buffer(buf), ec);
    raw.append(buf, n);
  }
  runner.join();
  EXPECT_TRUE(run_status.ok()) << run_status;
  EXPECT_EQ(raw.substr(0, 12), "HTTP/1.0 200");
  EXPECT_EQ(raw.find("chunked"), std::string::npos) << raw;
  EXPECT_NE(raw.find("\r\n\r\necho:POST /v2/models/m/infer {}"), std::string::npos) << raw;
}

TEST(RecordProxyTest, UnreachableUpstreamGivesTheClient502AndStillRecords) {
  // A port nobody listens on: bind, note it, close.
  uint16_t dead_port;
  {
    asio::io_context io;
    tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    dead_port = a.local_endpoint().port();
  }
  std::string trace = absl::StrCat(::testing::TempDir(), "/dead.", getpid(), ".vtr");
  auto proxy = RecordProxy::Create({.upstream = absl::StrCat("http://127.0.0.1:", dead_port),
                                    .output = trace,
                                    .max_requests = 1});
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  absl::Status run_status;
  std::thread runner([&] { run_status = (*proxy)->Run(); });
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), (*proxy)->port()));
  http::request<http::string_body> request{http::verb::post, "/anything", 11};
  request.body() = "x";
  request.prepare_payload();
  http::write(socket, request);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(socket, buffer, response);
  EXPECT_EQ(response.result_int(), 502);
  runner.join();
  EXPECT_TRUE(run_status.ok());
  EXPECT_EQ((*proxy)->requests_recorded(), 1);
}

TEST(RecordProxyTest, BadOptionsNameTheField) {
  EXPECT_THAT(RecordProxy::Create({.upstream = "", .output = "x"}).status().message(),
              ::testing::HasSubstr("upstream"));
  EXPECT_THAT(RecordProxy::Create({.upstream = "https://h:1", .output = "x"}).status().message(),
              ::testing::HasSubstr("http://"));
  EXPECT_THAT(RecordProxy::Create({.upstream = "http://h:1", .output = ""}).status().message(),
              ::testing::HasSubstr("output"));
  EXPECT_THAT(RecordProxy::Create({.listen = "nohost",
                                   .upstream = "http://h:1",
                                   .output = absl::StrCat(::testing::TempDir(), "/o.vtr")})
                  .status()
                  .message(),
              ::testing::HasSubstr("listen"));
}

}  // namespace
}  // namespace vanguard::replayer
