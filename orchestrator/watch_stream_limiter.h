// Caps on concurrent WatchTest streams. Each open stream holds a gRPC server thread and polls
// the database, so a replica admits at most `max_streams` at once, and at most
// `max_per_token` from one caller token, so one client cannot take every slot.
//
//   WatchStreamLimiter limiter({.max_streams = 256, .max_per_token = 16});
//   ASSIGN_OR_RETURN(WatchStreamLimiter::Slot slot, limiter.Acquire(caller_token_id));
//   ... stream ...   // the slot is given back when `slot` is destroyed, however it ends
//
// Acquire is RESOURCE_EXHAUSTED, naming the cap and the orchestrator flag that sets it, when a
// cap is reached. Without a token (the binary's --insecure_no_auth) only the global cap
// applies: there is no identity to count by. `on_change`, when given, is called with the
// number of open streams after every change, under the limiter's lock (it should be cheap:
// a gauge). Thread-safe; gRPC server threads acquire and release.
#ifndef VANGUARD_ORCHESTRATOR_WATCH_STREAM_LIMITER_H_
#define VANGUARD_ORCHESTRATOR_WATCH_STREAM_LIMITER_H_

#include <cstdint>
#include <functional>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace vanguard {

class WatchStreamLimiter {
 public:
  struct Limits {
    int max_streams = 256;   // --max_watch_streams
    int max_per_token = 16;  // --max_watch_streams_per_token
  };

  // One admitted stream; gives its place back on destruction. Move-only.
  class Slot {
   public:
    Slot(Slot&& other) noexcept;
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot();

   private:
    friend class WatchStreamLimiter;
    Slot(WatchStreamLimiter* limiter, std::optional<int64_t> token_id)
        : limiter_(limiter), token_id_(token_id) {}
    WatchStreamLimiter* limiter_;  // nullptr once moved from
    std::optional<int64_t> token_id_;
  };

  explicit WatchStreamLimiter(Limits limits, std::function<void(int open)> on_change = nullptr)
      : limits_(limits), on_change_(std::move(on_change)) {}

  // A slot for a stream of the token `token_id` (nullopt: no token). RESOURCE_EXHAUSTED when
  // either cap is reached.
  absl::StatusOr<Slot> Acquire(std::optional<int64_t> token_id);

  int open() const;
  int open_for(int64_t token_id) const;

 private:
  void Release(std::optional<int64_t> token_id);

  const Limits limits_;
  const std::function<void(int)> on_change_;
  mutable absl::Mutex mu_;
  int open_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<int64_t, int> open_by_token_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_WATCH_STREAM_LIMITER_H_
