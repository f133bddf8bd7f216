#include "tests/testing/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

extern char** environ;

namespace vanguard::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TempPath(const std::string& stem) {
  static std::atomic<int> counter{0};
  const char* dir = std::getenv("TMPDIR");
  return absl::StrCat(dir ? dir : "/tmp", "/vanguard-test-", getpid(), "-", counter++, "-", stem);
}

}  // namespace

std::string BinPath(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* dir = std::getenv("VANGUARD_BIN_DIR");
  return absl::StrCat(dir ? dir : ".", "/", name);
}

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(const std::string& binary,
                                                              const std::vector<std::string>& args,
                                                              const std::vector<std::string>& env) {
  std::string path = BinPath(binary);
  if (access(path.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("not an executable: ", path,
                                            " (is VANGUARD_BIN_DIR set and the target built?)"));
  }
  std::unique_ptr<Subprocess> p(new Subprocess());
  std::string base = path.substr(path.rfind('/') + 1);
  p->stdout_path_ = TempPath(base + ".out");
  p->stderr_path_ = TempPath(base + ".err");

  std::vector<std::string> argv_s = {path};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
  env_s.insert(env_s.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  if (pid == 0) {
    int out = open(p->stdout_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(p->stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0) _exit(127);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    // Die with the test if the test process is killed (ctest timeout, Ctrl-C).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    execve(path.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  p->pid_ = pid;
  return p;
}

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::StartServer(
    const std::string& binary, const std::vector<std::string>& args,
    const std::vector<std::string>& env, absl::Duration timeout) {
  auto started = Start(binary, args, env);
  if (!started.ok()) return started.status();
  std::unique_ptr<Subprocess> p = std::move(*started);
  absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    std::string out = p->Stdout();
    size_t at = out.find("LISTENING ");
    if (at != std::string::npos) {
      size_t end = out.find('\n', at);
      if (end != std::string::npos) {
        p->address_ = out.substr(at + 10, end - at - 10);
        size_t colon = p->address_.rfind(':');
        if (colon == std::string::npos ||
            !absl::SimpleAtoi(p->address_.substr(colon + 1), &p->port_)) {
          return absl::InternalError(absl::StrCat(binary, ": bad LISTENING line: ", out));
        }
        return p;
      }
    }
    if (!p->Running()) {
      return absl::InternalError(absl::StrCat(binary, " exited (status ", p->status_,
                                              ") before listening; stderr:\n", p->Stderr()));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(absl::StrCat(binary, " did not print LISTENING within ",
                                                  absl::FormatDuration(timeout), "; stderr:\n",
                                                  p->Stderr()));
}

bool Subprocess::Running() {
  if (reaped_ || pid_ <= 0) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    status_ = status;
    return false;
  }
  return r == 0;
}

absl::StatusOr<int> Subprocess::Wait(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (Running()) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("pid ", pid_, " still running"));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  return 128 + WTERMSIG(status_);
}

int Subprocess::Terminate(absl::Duration grace) {
  if (!Running()) return reaped_ ? status_ : -1;
  kill(pid_, SIGTERM);
  absl::Time deadline = absl::Now() + grace;
  while (Running() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(10));
  if (Running()) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
    reaped_ = true;
  }
  return status_;
}

Subprocess::~Subprocess() {
  Terminate(absl::Seconds(5));
  unlink(stdout_path_.c_str());
  unlink(stderr_path_.c_str());
}

std::string Subprocess::Stdout() const { return ReadFile(stdout_path_); }
std::string Subprocess::Stderr() const { return ReadFile(stderr_path_); }

absl::StatusOr<RunResult> RunBinary(const std::string& binary, const std::vector<std::string>& args,
                                    const std::vector<std::string>& env, absl::Duration timeout) {
  auto p = Subprocess::Start(binary, args, env);
  if (!p.ok()) return p.status();
  auto code = (*p)->Wait(timeout);
  RunResult r;
  r.out = (*p)->Stdout();
  r.err = (*p)->Stderr();
  if (!code.ok()) {
    return absl::DeadlineExceededError(
        absl::StrCat(binary, " ", absl::StrJoin(args, " "), ": did not finish in ",
                     absl::FormatDuration(timeout), "; stderr:\n", r.err));
  }
  r.exit_code = *code;
  return r;
}

}  // namespace vanguard::testing
