// ScriptedHttpServer implementation; see scripted_http_server.h. An accept thread plus one
// thread per connection; shared state is guarded by mu_.
#include "replayer/testing/scripted_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace vanguard::replayer::testing {

class ScriptedHttpServer::Impl {
 public:
  explicit Impl(ScriptFunction script) : script_(std::move(script)) {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        listen(listener_, 128) != 0) {
      std::abort();  // a test machine without loopback cannot run these tests
    }
    socklen_t length = sizeof(address);
    getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { Accept(); });
  }

  ~Impl() {
    stopping_.store(true);
    acceptor_.join();
    std::vector<std::thread> threads;
    {
      absl::MutexLock lock(&mu_);
      for (int fd : open_fds_) shutdown(fd, SHUT_RDWR);
      threads.swap(connection_threads_);
    }
    for (std::thread& t : threads) t.join();
    close(listener_);
  }

  uint16_t port() const { return port_; }
  int64_t requests_received() const { return requests_.load(); }

 private:
  void Accept() {
    while (!stopping_.load()) {
      pollfd p{listener_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      int fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      absl::MutexLock lock(&mu_);
      open_fds_.push_back(fd);
      connection_threads_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  void Serve(int fd) {
    std::string in;
    char buffer[4096];
    while (!stopping_.load()) {
      size_t header_end = in.find("\r\n\r\n");
      if (header_end == std::string::npos) {
        ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
        if (n <= 0) break;
        in.append(buffer, static_cast<size_t>(n));
        continue;
      }
      size_t body = BodyLength(std::string_view(in).substr(0, header_end + 2));
      while (in.size() < header_end + 4 + body) {
        ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
        if (n <= 0) return Finish(fd);
        in.append(buffer, static_cast<size_t>(n));
      }
      in.erase(0, header_end + 4 + body);
      Script script = script_(requests_.fetch_add(1));
      bool ok = true;
      for (const Piece& piece : script.pieces) {
        if (piece.delay_before > absl::ZeroDuration()) {
          std::this_thread::sleep_for(absl::ToChronoNanoseconds(piece.delay_before));
        }
        if (send(fd, piece.bytes.data(), piece.bytes.size(), MSG_NOSIGNAL) < 0) ok = false;
      }
      if (!ok || script.close_after) break;
    }
    Finish(fd);
  }

  void Finish(int fd) {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < open_fds_.size(); ++i) {
      if (open_fds_[i] == fd) {
        open_fds_.erase(open_fds_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
    close(fd);
  }

  static size_t BodyLength(std::string_view header) {
    size_t pos = 0;
    while (true) {
      size_t eol = header.find("\r\n", pos);
      if (eol == std::string_view::npos) return 0;
      std::string_view line = header.substr(pos, eol - pos);
      pos = eol + 2;
      constexpr std::string_view kName = "Content-Length:";
      if (line.size() > kName.size() && strncasecmp(line.data(), kName.data(), kName.size()) == 0) {
        return static_cast<size_t>(
            std::strtoul(std::string(line.substr(kName.size())).c_str(), nullptr, 10));
      }
    }
  }

  const ScriptFunction script_;
  int listener_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> requests_{0};
  std::thread acceptor_;
  absl::Mutex mu_;
  std::vector<int> open_fds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> connection_threads_ ABSL_GUARDED_BY(mu_);
};

ScriptedHttpServer::ScriptedHttpServer(ScriptFunction script)
    : impl_(std::make_unique<Impl>(std::move(script))) {}
ScriptedHttpServer::~ScriptedHttpServer() = default;
std::string ScriptedHttpServer::url() const {
  return absl::StrCat("http://127.0.0.1:", impl_->port());
}
int64_t ScriptedHttpServer::requests_received() const { return impl_->requests_received(); }

}  // namespace vanguard::replayer::testing
