// An HTTP/1.1 server on 127.0.0.1 (port 0) for tests that receive webhooks: it records each
// request (target, headers, body) and answers it with the next status of its script, then
// 204 once the script is used up; answers that may carry a body carry one the sender must not
// keep.
//
//   RecordingHttpServer server({500});            // refuse the first request, accept later
//   RecordingHttpServer tls_server({}, RecordingHttpServer::Tls{cert_file, key_file});
//   std::string url = server.Url("/hook");
//   ... the code under test POSTs ...
//   std::vector<RecordingHttpServer::Request> got = server.WaitForRequests(2, absl::Seconds(10));
//
// Serves one connection at a time on its own thread; the destructor stops it. Any thread may
// call requests() and WaitForRequests().
#ifndef VANGUARD_TESTS_TESTING_RECORDING_HTTP_SERVER_H_
#define VANGUARD_TESTS_TESTING_RECORDING_HTTP_SERVER_H_

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace vanguard::testing {

class RecordingHttpServer {
 public:
  // The body of every answer.
  static constexpr char kResponseBody[] = "internal detail the sender must not store";

  struct Request {
    std::string method;
    std::string target;
    std::map<std::string, std::string> headers;  // names in lower case
    std::string body;
  };

  // PEM files of the certificate it serves https:// with.
  struct Tls {
    std::string cert;
    std::string key;
  };

  // With `tls`, it speaks HTTPS (a client that fails the handshake is recorded as nothing).
  explicit RecordingHttpServer(std::deque<int> statuses = {}, std::optional<Tls> tls = {});
  ~RecordingHttpServer();
  RecordingHttpServer(const RecordingHttpServer&) = delete;
  RecordingHttpServer& operator=(const RecordingHttpServer&) = delete;

  int port() const { return port_; }
  std::string Url(const std::string& path) const;
  std::vector<Request> requests();
  // The requests once there are at least `count` (or when `timeout` passed: fewer).
  std::vector<Request> WaitForRequests(size_t count, absl::Duration timeout);

 private:
  struct Io;
  void Serve();
  // Reads one request from `stream`, records it, answers it.
  template <typename Stream>
  void Exchange(Stream& stream);

  std::unique_ptr<Io> io_;
  int port_ = 0;
  bool tls_ = false;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  absl::Mutex mu_;
  std::vector<Request> requests_ ABSL_GUARDED_BY(mu_);
  std::deque<int> statuses_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vanguard::testing

#endif  // VANGUARD_TESTS_TESTING_RECORDING_HTTP_SERVER_H_
