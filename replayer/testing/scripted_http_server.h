// ScriptedHttpServer: an in-process TCP server on 127.0.0.1:0 that answers each HTTP/1.1
// request with raw bytes a test scripts — garbage, truncated bodies, chunked streams split
// at awkward places with pauses between pieces — so tests can check how the replayer's
// client copes with what real servers get wrong. One thread per connection (tests only).
//
//   ScriptedHttpServer server([](int64_t n) {
//     return ScriptedHttpServer::Script{{{"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhel"}},
//                                       /*close_after=*/true};
//   });
//   request.set_target(server.url());
//
// `script` runs on connection threads; everything else on any thread.
#ifndef VANGUARD_REPLAYER_TESTING_SCRIPTED_HTTP_SERVER_H_
#define VANGUARD_REPLAYER_TESTING_SCRIPTED_HTTP_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace vanguard::replayer::testing {

class ScriptedHttpServer {
 public:
  struct Piece {
    std::string bytes;
    absl::Duration delay_before = absl::ZeroDuration();
  };
  struct Script {
    std::vector<Piece> pieces;
    bool close_after = false;  // close the connection after the last piece
  };
  // Called with the 0-based number of the request across all connections.
  using ScriptFunction = std::function<Script(int64_t request_number)>;

  explicit ScriptedHttpServer(ScriptFunction script);
  ~ScriptedHttpServer();  // closes every connection and joins the threads

  std::string url() const;  // "http://127.0.0.1:<port>"
  int64_t requests_received() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vanguard::replayer::testing

#endif  // VANGUARD_REPLAYER_TESTING_SCRIPTED_HTTP_SERVER_H_
