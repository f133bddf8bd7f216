// replayer_fast_server: the "one fast local HTTP server" of the replayer benchmark
// (tests/bench/replayer.sh). One thread, one epoll set, non-blocking sockets; every request
// (any method and path, with or without a Content-Length body, pipelined or not) gets the
// same tiny keep-alive 200 response. It is deliberately cheaper per request than the load
// generators it serves, so the benchmark measures them and not it.
//
//   replayer_fast_server --listen=127.0.0.1:0 [--port_file=PATH]
//
// Prints "LISTENING <host>:<port>" once listening; exits cleanly on SIGTERM/SIGINT. All on
// the main thread.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:0", "HOST:PORT to listen on (IPv4); port 0 picks one");
ABSL_FLAG(std::string, port_file, "", "if set, write the port and a newline here atomically");

namespace {

constexpr std::string_view kResponse =
    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok";
constexpr size_t kBufferBytes = 64 * 1024;

struct Client {
  int fd = -1;
  std::string in;        // unparsed request bytes
  size_t body_left = 0;  // bytes of the current request's body still to skip
  std::string out;       // responses not yet written
};

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if ((a[i] | 0x20) != (b[i] | 0x20)) return false;
  }
  return true;
}

// The Content-Length of a request header block, 0 if absent.
size_t ContentLength(std::string_view header) {
  size_t pos = 0;
  while (true) {
    size_t eol = header.find("\r\n", pos);
    if (eol == std::string_view::npos) return 0;
    std::string_view line = header.substr(pos, eol - pos);
    pos = eol + 2;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (!EqualsIgnoreCase(line.substr(0, colon), "content-length")) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    size_t length = 0;
    std::from_chars(value.data(), value.data() + value.size(), length);
    return length;
  }
}

// Consumes complete requests from client.in, appending one response per request.
void Serve(Client& client) {
  size_t pos = 0;
  std::string_view in = client.in;
  while (pos < in.size()) {
    if (client.body_left > 0) {
      size_t skip = std::min(client.body_left, in.size() - pos);
      pos += skip;
      client.body_left -= skip;
      if (client.body_left > 0) break;
      client.out.append(kResponse);
      continue;
    }
    size_t end = in.find("\r\n\r\n", pos);
    if (end == std::string_view::npos) break;
    client.body_left = ContentLength(in.substr(pos, end + 2 - pos));
    pos = end + 4;
    if (client.body_left == 0) client.out.append(kResponse);
  }
  client.in.erase(0, pos);
}

bool Flush(Client& client) {
  while (!client.out.empty()) {
    ssize_t n = send(client.fd, client.out.data(), client.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      client.out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    return false;
  }
  return true;
}

bool WritePortFile(const std::string& path, int port) {
  std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    if (!out.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("a minimal epoll HTTP/1.1 server for the replayer benchmark");
  absl::ParseCommandLine(argc, argv);
  std::string listen_on = absl::GetFlag(FLAGS_listen);
  size_t colon = listen_on.rfind(':');
  if (colon == std::string::npos) {
    std::fprintf(stderr, "--listen must be HOST:PORT\n");
    return 2;
  }
  std::string host = listen_on.substr(0, colon);
  int port = std::atoi(listen_on.c_str() + colon + 1);

  int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1 ||
      bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(listener, 1024) != 0) {
    std::fprintf(stderr, "cannot listen on %s: %s\n", listen_on.c_str(), strerror(errno));
    return 1;
  }
  socklen_t length = sizeof(address);
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  port = ntohs(address.sin_port);

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  int signal_fd = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);

  int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listener, &ev);
  ev.data.u64 = 1;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, signal_fd, &ev);

  std::string port_file = absl::GetFlag(FLAGS_port_file);
  if (!port_file.empty() && !WritePortFile(port_file, port)) {
    std::fprintf(stderr, "cannot write %s\n", port_file.c_str());
    return 1;
  }
  std::printf("LISTENING %s:%d\n", host.c_str(), port);
  std::fflush(stdout);

  std::vector<Client*> clients;  // by fd
  std::vector<char> buffer(kBufferBytes);
  epoll_event events[256];
  while (true) {
    int n = epoll_wait(epoll_fd, events, 256, -1);
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < n; ++i) {
      uint64_t tag = events[i].data.u64;
      if (tag == 1) {
        for (Client* client : clients) {
          if (client != nullptr) close(client->fd);
          delete client;
        }
        return 0;
      }
      if (tag == 0) {
        while (true) {
          int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) break;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          if (static_cast<size_t>(fd) >= clients.size()) clients.resize(fd + 1, nullptr);
          clients[fd] = new Client{fd};
          epoll_event cev{};
          cev.events = EPOLLIN;
          cev.data.u64 = static_cast<uint64_t>(fd) + 2;
          epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &cev);
        }
        continue;
      }
      int fd = static_cast<int>(tag - 2);
      Client* client = clients[fd];
      if (client == nullptr) continue;
      bool alive = true;
      ssize_t got = recv(fd, buffer.data(), buffer.size(), 0);
      if (got > 0) {
        client->in.append(buffer.data(), static_cast<size_t>(got));
        Serve(*client);
        alive = Flush(*client);
        if (alive && !client->out.empty()) {
          epoll_event cev{};
          cev.events = EPOLLIN | EPOLLOUT;
          cev.data.u64 = tag;
          epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &cev);
        }
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        alive = false;
      }
      if (alive && (events[i].events & EPOLLOUT)) {
        alive = Flush(*client);
        if (alive && client->out.empty()) {
          epoll_event cev{};
          cev.events = EPOLLIN;
          cev.data.u64 = tag;
          epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &cev);
        }
      }
      if (!alive) {
        close(fd);
        delete client;
        clients[fd] = nullptr;
      }
    }
  }
}
