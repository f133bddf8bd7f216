// A loopback TCP proxy that forwards bytes both ways and, when told, loses one reply: the
// first chunk from the server that contains a marker is dropped and both sides of its
// connection are cut, as when a network or a proxy fails after the server answered. The
// client sees the call fail although the server did the work (e.g. a LeaseTest committed in
// the database whose reply never reached the worker).
//
//   ASSIGN_OR_RETURN(auto proxy, TcpProxy::Start(orchestrator->address()));
//   proxy->DropReplyContaining("http://127.0.0.1:40123");  // a string only that reply holds
//   ... point the client at proxy->address() ...
//   EXPECT_EQ(proxy->replies_dropped(), 1);
//
// gRPC sends a small reply's message uncompressed in one write, so a string of its payload
// (a model endpoint, a name) marks it. Later connections are forwarded untouched. One
// thread accepts, two threads pump each connection; the destructor stops them all. Any
// thread may call the methods.
#ifndef VANGUARD_TESTS_TESTING_TCP_PROXY_H_
#define VANGUARD_TESTS_TESTING_TCP_PROXY_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace vanguard::testing {

class TcpProxy {
 public:
  // Listens on 127.0.0.1 (a free port) and forwards every connection to `upstream`
  // ("host:port", an IPv4 address).
  static absl::StatusOr<std::unique_ptr<TcpProxy>> Start(const std::string& upstream);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  const std::string& address() const { return address_; }  // "127.0.0.1:PORT"

  // Arms the proxy: the next server-to-client chunk containing `marker`, after `skip`
  // such chunks forwarded, is not forwarded, and its connection is closed on both sides.
  // Once only.
  void DropReplyContaining(const std::string& marker, int skip = 0);
  int replies_dropped() const { return dropped_.load(); }

 private:
  TcpProxy() = default;
  void AcceptLoop();
  // Copies from `from` to `to` until either side closes; `from_server` pumps replies.
  void Pump(int from, int to, bool from_server);

  std::string address_;
  std::string upstream_host_;
  int upstream_port_ = 0;
  int listen_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<int> dropped_{0};
  std::thread acceptor_;

  absl::Mutex mu_;
  std::string marker_ ABSL_GUARDED_BY(mu_);  // empty: nothing to drop
  int skip_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int> fds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> pumps_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vanguard::testing

#endif  // VANGUARD_TESTS_TESTING_TCP_PROXY_H_
