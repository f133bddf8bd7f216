// Asynchronous HTTP load client for the simulator's tests; see sim_load_client.h. Runs on the
// calling thread (one io_context, no locks).
#include "tests/simulator/sim_load_client.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http.hpp"

namespace vanguard::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct Connection {
  explicit Connection(asio::io_context& io) : socket(io) {}
  tcp::socket socket;
  beast::flat_buffer buffer;
  std::optional<http::response_parser<http::string_body>> parser;
  Clock::time_point intended;
  bool judged = false;
};

}  // namespace

SimHttpConnection::SimHttpConnection(int port) : socket_(io_) {
  socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  socket_.set_option(tcp::no_delay(true));
}

SimHttpReply SimHttpConnection::Send(const std::string& method, const std::string& target,
                                     const std::string& body) {
  http::request<http::string_body> request(http::string_to_verb(method), target, 11);
  request.set(http::field::host, "127.0.0.1");
  if (!body.empty() || method == "POST") {
    request.set(http::field::content_type, "application/json");
  }
  request.body() = body;
  request.prepare_payload();
  http::write(socket_, request);
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  http::read(socket_, buffer_, parser);
  SimHttpReply reply;
  reply.status = parser.get().result_int();
  reply.body = std::move(parser.get().body());
  reply.content_type = std::string(parser.get()[http::field::content_type]);
  reply.allow = std::string(parser.get()[http::field::allow]);
  reply.keep_alive = parser.get().keep_alive();
  return reply;
}

std::string InferRequestBytes(const std::string& model) {
  const std::string body =
      R"({"inputs":[{"name":"input0","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]})";
  return absl::StrCat("POST /v2/models/", model,
                      "/infer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      "Content-Length: ",
                      body.size(), "\r\n\r\n", body);
}

double SimLoadClient::Result::ErrorRate() const {
  return scheduled == 0 ? 1.0 : static_cast<double>(scheduled - ok) / scheduled;
}

double SimLoadClient::Result::LatencyPercentileMs(double percentile) const {
  if (latencies_us.empty()) return INFINITY;
  std::vector<int64_t> sorted = latencies_us;
  size_t rank = static_cast<size_t>(std::ceil(percentile / 100.0 * sorted.size()));
  rank = std::clamp<size_t>(rank, 1, sorted.size()) - 1;
  std::nth_element(sorted.begin(), sorted.begin() + rank, sorted.end());
  return sorted[rank] / 1000.0;
}

SimLoadClient::SimLoadClient(int port, std::string request)
    : port_(port), request_(std::move(request)) {}

SimLoadClient::Result SimLoadClient::RunOpenLoop(double rate, absl::Duration settle,
                                                 absl::Duration measure, uint64_t seed) {
  asio::io_context io;
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port_);
  Result result;
  // Absolute intended send times: t0 + the Poisson sum (never "sleep a gap after each send").
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  const Clock::time_point t0 = Clock::now() + std::chrono::milliseconds(20);
  const Clock::time_point judged_from = t0 + absl::ToChronoNanoseconds(settle);
  const Clock::time_point end = judged_from + absl::ToChronoNanoseconds(measure);
  std::vector<Clock::time_point> schedule;
  for (double t = gap(rng);; t += gap(rng)) {
    const Clock::time_point at = t0 + std::chrono::nanoseconds(static_cast<int64_t>(t * 1e9));
    if (at >= end) break;
    schedule.push_back(at);
  }
  std::vector<std::unique_ptr<Connection>> all;
  std::deque<Connection*> idle;
  size_t next = 0;
  int64_t outstanding = 0;
  asio::steady_timer timer(io);

  std::function<void(Connection*)> send = [&](Connection* c) {
    ++outstanding;
    c->parser.emplace();
    asio::async_write(c->socket, asio::buffer(request_), [&, c](beast::error_code ec, size_t) {
      if (ec) {
        --outstanding;
        if (c->judged) ++result.other_errors;
        return;
      }
      http::async_read(c->socket, c->buffer, *c->parser, [&, c](beast::error_code ec, size_t) {
        --outstanding;
        if (ec) {
          if (c->judged) ++result.other_errors;
          return;  // the connection is not reused
        }
        const int status = c->parser->get().result_int();
        if (c->judged) {
          if (status == 200) {
            ++result.ok;
            result.latencies_us.push_back(
                std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - c->intended)
                    .count());
          } else if (status == 503) {
            ++result.shed;
          } else {
            ++result.other_errors;
          }
        }
        idle.push_back(c);
      });
    });
  };

  std::function<void()> on_timer = [&] {
    const Clock::time_point now = Clock::now();
    while (next < schedule.size() && schedule[next] <= now) {
      Connection* c = nullptr;
      if (!idle.empty()) {
        c = idle.front();
        idle.pop_front();
      } else {
        all.push_back(std::make_unique<Connection>(io));
        c = all.back().get();
        beast::error_code ec;
        c->socket.connect(endpoint, ec);
        if (!ec) c->socket.set_option(tcp::no_delay(true), ec);
        result.max_connections = static_cast<int64_t>(all.size());
      }
      c->intended = schedule[next];
      c->judged = schedule[next] >= judged_from;
      if (c->judged) ++result.scheduled;
      ++next;
      send(c);
    }
    if (next < schedule.size()) {
      timer.expires_at(schedule[next]);
      timer.async_wait([&](beast::error_code ec) {
        if (!ec) on_timer();
      });
    }
  };
  on_timer();
  // Run until everything is sent and answered (bounded).
  const Clock::time_point give_up = end + std::chrono::seconds(10);
  while ((next < schedule.size() || outstanding > 0) && Clock::now() < give_up) {
    io.run_for(std::chrono::milliseconds(50));
  }
  result.other_errors += outstanding;  // never answered: counts against the run
  return result;
}

double SimLoadClient::RunClosedLoop(int connections, absl::Duration settle, absl::Duration measure,
                                    int64_t* errors) {
  asio::io_context io;
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port_);
  const Clock::time_point window_open = Clock::now() + absl::ToChronoNanoseconds(settle);
  const Clock::time_point window_close = window_open + absl::ToChronoNanoseconds(measure);
  int64_t in_window = 0;
  *errors = 0;
  std::vector<std::unique_ptr<Connection>> all;
  std::function<void(Connection*)> send = [&](Connection* c) {
    c->parser.emplace();
    asio::async_write(c->socket, asio::buffer(request_), [&, c](beast::error_code ec, size_t) {
      if (ec) {
        ++*errors;
        return;
      }
      http::async_read(c->socket, c->buffer, *c->parser, [&, c](beast::error_code ec, size_t) {
        if (ec) {
          ++*errors;
          return;
        }
        const Clock::time_point now = Clock::now();
        if (c->parser->get().result_int() != 200) ++*errors;
        if (now >= window_close) return;
        if (now >= window_open && c->parser->get().result_int() == 200) ++in_window;
        send(c);
      });
    });
  };
  for (int i = 0; i < connections; ++i) {
    all.push_back(std::make_unique<Connection>(io));
    beast::error_code ec;
    all.back()->socket.connect(endpoint, ec);
    if (ec) {
      ++*errors;
      continue;
    }
    all.back()->socket.set_option(tcp::no_delay(true), ec);
    send(all.back().get());
  }
  io.run_until(window_close + std::chrono::seconds(5));
  return in_window / absl::ToDoubleSeconds(measure);
}

}  // namespace vanguard::sim
