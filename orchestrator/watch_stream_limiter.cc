// Concurrent WatchTest stream caps; see watch_stream_limiter.h. gRPC server threads call it.
#include "orchestrator/watch_stream_limiter.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace vanguard {

WatchStreamLimiter::Slot::Slot(Slot&& other) noexcept
    : limiter_(std::exchange(other.limiter_, nullptr)), token_id_(other.token_id_) {}

WatchStreamLimiter::Slot& WatchStreamLimiter::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    if (limiter_ != nullptr) limiter_->Release(token_id_);
    limiter_ = std::exchange(other.limiter_, nullptr);
    token_id_ = other.token_id_;
  }
  return *this;
}

WatchStreamLimiter::Slot::~Slot() {
  if (limiter_ != nullptr) limiter_->Release(token_id_);
}

absl::StatusOr<WatchStreamLimiter::Slot> WatchStreamLimiter::Acquire(
    std::optional<int64_t> token_id) {
  absl::MutexLock lock(&mu_);
  if (open_ >= limits_.max_streams) {
    return absl::ResourceExhaustedError(absl::StrCat("this orchestrator already serves ", open_,
                                                     " WatchTest streams, its limit "
                                                     "(--max_watch_streams=",
                                                     limits_.max_streams,
                                                     "); end a watch or retry later"));
  }
  if (token_id.has_value()) {
    auto it = open_by_token_.find(*token_id);
    const int mine = it == open_by_token_.end() ? 0 : it->second;
    if (mine >= limits_.max_per_token) {
      return absl::ResourceExhaustedError(
          absl::StrCat("this token already has ", mine,
                       " WatchTest streams open, the limit per token "
                       "(--max_watch_streams_per_token=",
                       limits_.max_per_token, "); end one of its watches first"));
    }
    ++open_by_token_[*token_id];
  }
  ++open_;
  if (on_change_) on_change_(open_);
  return Slot(this, token_id);
}

void WatchStreamLimiter::Release(std::optional<int64_t> token_id) {
  absl::MutexLock lock(&mu_);
  --open_;
  if (token_id.has_value()) {
    auto it = open_by_token_.find(*token_id);
    if (it != open_by_token_.end() && --it->second <= 0) open_by_token_.erase(it);
  }
  if (on_change_) on_change_(open_);
}

int WatchStreamLimiter::open() const {
  absl::MutexLock lock(&mu_);
  return open_;
}

int WatchStreamLimiter::open_for(int64_t token_id) const {
  absl::MutexLock lock(&mu_);
  auto it = open_by_token_.find(token_id);
  return it == open_by_token_.end() ? 0 : it->second;
}

}  // namespace vanguard
