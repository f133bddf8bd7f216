// Test helper: an HTTP "server" on a loopback port (port 0, chosen by the kernel) that
// answers one connection with a fixed byte string and closes it.
//
//   OneShotHttpServer server("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
//   auto r = HttpGet(absl::StrCat("http://127.0.0.1:", server.port(), "/"), absl::Seconds(5));
//
// Used by the worker's unit tests only. Its own thread accepts and answers; the destructor
// stops it (also when nothing ever connected) and joins it.
#ifndef VANGUARD_WORKER_TESTING_ONE_SHOT_HTTP_SERVER_H_
#define VANGUARD_WORKER_TESTING_ONE_SHOT_HTTP_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <string>
#include <thread>

namespace vanguard::worker::testing_util {

class OneShotHttpServer {
 public:
  explicit OneShotHttpServer(std::string reply) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    listen(fd_, 1);
    thread_ = std::thread([this, reply = std::move(reply)] {
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      const ssize_t n = read(c, buf, sizeof(buf));
      if (n > 0) {
        std::lock_guard<std::mutex> lock(mu_);
        request_.assign(buf, static_cast<size_t>(n));
      }
      // MSG_NOSIGNAL: a client that hangs up early (a body over its limit) is no SIGPIPE.
      (void)!send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      close(c);
    });
  }
  ~OneShotHttpServer() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  OneShotHttpServer(const OneShotHttpServer&) = delete;
  OneShotHttpServer& operator=(const OneShotHttpServer&) = delete;

  int port() const { return port_; }

  // The bytes of the request it read (the first read only); call after the client's
  // exchange ended (the answer was sent after the read).
  std::string request() const {
    std::lock_guard<std::mutex> lock(mu_);
    return request_;
  }

 private:
  int fd_;
  int port_;
  mutable std::mutex mu_;
  std::string request_;
  std::thread thread_;
};

// A loopback port nothing listens on (bound, then closed): connecting to it is refused.
inline int ClosedLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace vanguard::worker::testing_util

#endif  // VANGUARD_WORKER_TESTING_ONE_SHOT_HTTP_SERVER_H_
