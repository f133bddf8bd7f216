// A small asynchronous HTTP load client for the simulator's own end-to-end tests: open-loop
// Poisson arrivals (latency measured from the intended send time, new connections opened
// when all are busy) and closed-loop saturation runs. Deliberately independent of the
// replayer (which the simulator exists to test), so the two cannot share a bug.
//
//   SimLoadClient client(port, InferRequestBytes("sim"));
//   SimLoadClient::Result r = client.RunOpenLoop(900, absl::Milliseconds(500), absl::Seconds(3),
//   1); double p99 = r.LatencyPercentileMs(99);
//
// Runs its event loop on the calling thread; one run at a time. Also a blocking keep-alive
// connection (SimHttpConnection) for request/response checks, used by one thread.
#ifndef VANGUARD_TESTS_SIMULATOR_SIM_LOAD_CLIENT_H_
#define VANGUARD_TESTS_SIMULATOR_SIM_LOAD_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/beast/core/flat_buffer.hpp"

namespace vanguard::sim {

struct SimHttpReply {
  int status = 0;
  std::string body;
  std::string content_type;
  std::string allow;
  bool keep_alive = false;
};

// One blocking keep-alive HTTP/1.1 connection to 127.0.0.1:port. Throws on I/O errors.
class SimHttpConnection {
 public:
  explicit SimHttpConnection(int port);
  // method is "GET" or "POST"; a non-empty body is sent as application/json.
  SimHttpReply Send(const std::string& method, const std::string& target,
                    const std::string& body = "");
  SimHttpReply Get(const std::string& target) { return Send("GET", target); }
  SimHttpReply Post(const std::string& target, const std::string& body = "") {
    return Send("POST", target, body);
  }
  boost::asio::ip::tcp::socket& socket() { return socket_; }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

// A complete HTTP/1.1 keep-alive POST of a small KServe v2 infer request to `model`.
std::string InferRequestBytes(const std::string& model);

class SimLoadClient {
 public:
  struct Result {
    int64_t scheduled = 0;  // judged requests (sent after the settle period)
    int64_t ok = 0;         // judged 200s
    int64_t shed = 0;       // judged 503s
    int64_t other_errors = 0;
    std::vector<int64_t> latencies_us;  // judged 200s, from the intended send time
    int64_t max_connections = 0;
    double ErrorRate() const;
    double LatencyPercentileMs(double percentile) const;
  };

  SimLoadClient(int port, std::string request);

  // Poisson arrivals at `rate` per second for settle + measure; judges requests scheduled
  // after `settle`. Waits for every response (up to 10 s after the last send).
  Result RunOpenLoop(double rate, absl::Duration settle, absl::Duration measure, uint64_t seed);

  // `connections` clients each sending the next request as soon as the last reply arrives;
  // returns 200 replies per second received in [settle, settle + measure).
  double RunClosedLoop(int connections, absl::Duration settle, absl::Duration measure,
                       int64_t* errors);

 private:
  int port_;
  std::string request_;
};

}  // namespace vanguard::sim

#endif  // VANGUARD_TESTS_SIMULATOR_SIM_LOAD_CLIENT_H_
