// FakeHttpServer: an in-process HTTP/1.1 keep-alive server for replayer tests, on
// 127.0.0.1:0 with its own Asio thread. Every request (any method, any path) is answered as
// `reply` decides, which lets tests make a server that is fast, failing, silent or stalling.
//
//   FakeHttpServer server([](int64_t n) { return FakeHttpServer::Reply{.status = 500}; });
//   request.set_target(server.url());   // "http://127.0.0.1:<port>"
//   ... server.requests_received() ...
//
// `reply` runs on the server thread; the constructor and accessors on any thread.
#ifndef VANGUARD_REPLAYER_TESTING_FAKE_HTTP_SERVER_H_
#define VANGUARD_REPLAYER_TESTING_FAKE_HTTP_SERVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/time/time.h"

namespace vanguard::replayer::testing {

class FakeHttpServer {
 public:
  struct Reply {
    int status = 200;
    // Answer this request only after this long (other connections are not held up).
    absl::Duration delay = absl::ZeroDuration();
    // Never answer this request (the connection stays open and silent).
    bool never_answer = false;
    // Stall the whole server: no response on any connection goes out before now + this,
    // like a garbage-collection pause.
    absl::Duration stall_all = absl::ZeroDuration();
    // Send "Connection: close" and close after the response.
    bool close_connection = false;
  };
  // Called with the 0-based number of the request across all connections.
  using ReplyFunction = std::function<Reply(int64_t request_number)>;

  explicit FakeHttpServer(ReplyFunction reply);
  ~FakeHttpServer();  // stops the thread and closes every connection

  uint16_t port() const;
  std::string url() const;  // "http://127.0.0.1:<port>"
  int64_t requests_received() const;
  int64_t connections_accepted() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vanguard::replayer::testing

#endif  // VANGUARD_REPLAYER_TESTING_FAKE_HTTP_SERVER_H_
