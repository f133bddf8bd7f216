// FakeProcReader: a ProcReader (replayer/proc_sched.h) over fixed text, for tests. A path it
// does not hold is NOT_FOUND, like a thread that has exited. `advancing` paths return their
// text with every number in it multiplied by the count of earlier reads of that path plus
// one, so two readings of the same counters differ (by the first reading).
//
// Thread-safe: the loops and the runner read it from their own threads.
#ifndef VANGUARD_REPLAYER_TESTING_FAKE_PROC_READER_H_
#define VANGUARD_REPLAYER_TESTING_FAKE_PROC_READER_H_

#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "replayer/proc_sched.h"

namespace vanguard::replayer::testing {

class FakeProcReader : public ProcReader {
 public:
  void SetFile(const std::string& path, const std::string& text, bool advancing = false) {
    absl::MutexLock lock(&mu_);
    files_[path] = text;
    if (advancing) advancing_.insert(path);
  }
  void SetDirectory(const std::string& path, std::vector<std::string> names) {
    absl::MutexLock lock(&mu_);
    directories_[path] = std::move(names);
  }

  absl::StatusOr<std::string> ReadFile(const std::string& path) const override {
    absl::MutexLock lock(&mu_);
    auto it = files_.find(path);
    if (it == files_.end()) return absl::NotFoundError(path);
    int64_t factor = ++reads_[path];
    if (advancing_.count(path) == 0) return it->second;
    std::string out;
    const std::string& text = it->second;
    for (size_t i = 0; i < text.size();) {
      if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
        out.push_back(text[i++]);
        continue;
      }
      size_t j = i;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      out += std::to_string(std::stoll(text.substr(i, j - i)) * factor);
      i = j;
    }
    return out;
  }
  absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) const override {
    absl::MutexLock lock(&mu_);
    auto it = directories_.find(path);
    if (it == directories_.end()) return absl::NotFoundError(path);
    return it->second;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::string> files_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> advancing_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<std::string>> directories_ ABSL_GUARDED_BY(mu_);
  mutable std::map<std::string, int64_t> reads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vanguard::replayer::testing

#endif  // VANGUARD_REPLAYER_TESTING_FAKE_PROC_READER_H_
