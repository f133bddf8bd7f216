// Loopback TCP proxy that can lose one reply; see tcp_proxy.h.
#include "tests/testing/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace vanguard::testing {

absl::StatusOr<std::unique_ptr<TcpProxy>> TcpProxy::Start(const std::string& upstream) {
  std::unique_ptr<TcpProxy> proxy(new TcpProxy());
  const size_t colon = upstream.rfind(':');
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(upstream.substr(colon + 1), &proxy->upstream_port_)) {
    return absl::InvalidArgumentError(absl::StrCat("upstream must be host:port, got ", upstream));
  }
  proxy->upstream_host_ = upstream.substr(0, colon);
  proxy->listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (proxy->listen_fd_ < 0) return absl::InternalError(strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(proxy->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(proxy->listen_fd_, 16) != 0 ||
      getsockname(proxy->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return absl::InternalError(absl::StrCat("proxy listen: ", strerror(errno)));
  }
  proxy->address_ = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
  proxy->acceptor_ = std::thread([p = proxy.get()] { p->AcceptLoop(); });
  return proxy;
}

TcpProxy::~TcpProxy() {
  stopping_ = true;
  if (listen_fd_ >= 0) shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> pumps;
  {
    absl::MutexLock lock(&mu_);
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
    pumps.swap(pumps_);
  }
  for (std::thread& t : pumps) t.join();
  absl::MutexLock lock(&mu_);
  for (int fd : fds_) close(fd);
  if (listen_fd_ >= 0) close(listen_fd_);
}

void TcpProxy::DropReplyContaining(const std::string& marker, int skip) {
  absl::MutexLock lock(&mu_);
  marker_ = marker;
  skip_ = skip;
}

void TcpProxy::AcceptLoop() {
  while (!stopping_) {
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR) continue;
      return;  // shut down
    }
    const int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(upstream_port_));
    inet_pton(AF_INET, upstream_host_.c_str(), &addr.sin_addr);
    if (server < 0 || connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(client);
      if (server >= 0) close(server);
      continue;
    }
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      close(client);
      close(server);
      return;
    }
    fds_.push_back(client);
    fds_.push_back(server);
    pumps_.emplace_back([this, client, server] { Pump(client, server, /*from_server=*/false); });
    pumps_.emplace_back([this, client, server] { Pump(server, client, /*from_server=*/true); });
  }
}

void TcpProxy::Pump(int from, int to, bool from_server) {
  char buf[64 * 1024];
  while (true) {
    const ssize_t n = recv(from, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (from_server) {
      absl::MutexLock lock(&mu_);
      if (!marker_.empty() &&
          absl::string_view(buf, static_cast<size_t>(n)).find(marker_) != absl::string_view::npos &&
          skip_-- == 0) {
        marker_.clear();
        ++dropped_;
        break;  // the reply is lost with its connection
      }
    }
    for (ssize_t sent = 0; sent < n;) {
      const ssize_t m = send(to, buf + sent, static_cast<size_t>(n - sent), MSG_NOSIGNAL);
      if (m < 0 && errno == EINTR) continue;
      if (m <= 0) {
        shutdown(from, SHUT_RDWR);
        shutdown(to, SHUT_RDWR);
        return;
      }
      sent += m;
    }
  }
  // One side closed (or the reply was dropped): cut both, so the other pump ends too.
  shutdown(from, SHUT_RDWR);
  shutdown(to, SHUT_RDWR);
}

}  // namespace vanguard::testing
