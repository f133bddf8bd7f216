// Choosing k replayers from measured headroom; see replayer_headroom.h.
#include "worker/replayer_headroom.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace vanguard::worker {

void ReplayerHeadroom::Observe(const std::string& replayer, double shard_rate_qps,
                               double loop_share) {
  if (!(shard_rate_qps > 0) || !(loop_share > 0) || !std::isfinite(shard_rate_qps) ||
      !std::isfinite(loop_share)) {
    return;
  }
  const double capacity = shard_rate_qps * kTargetLoopShare / std::max(loop_share, kMinLoopShare);
  estimates_[replayer] = {capacity, clock_->Now()};
}

std::optional<double> ReplayerHeadroom::Capacity(const std::string& replayer) const {
  auto it = estimates_.find(replayer);
  if (it == estimates_.end() || clock_->Now() - it->second.measured > kMaxAge) {
    return std::nullopt;
  }
  return it->second.capacity_qps;
}

std::vector<int> ReplayerHeadroom::Choose(double rate_qps,
                                          const std::vector<std::string>& replayers,
                                          int requested) const {
  const int n = static_cast<int>(replayers.size());
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  if (requested > 0) {
    all.resize(std::min(requested, n));
    return all;
  }
  // The measured ones, largest capacity first (ties: pool order).
  std::vector<std::pair<double, int>> known;
  for (int i = 0; i < n; ++i) {
    if (std::optional<double> c = Capacity(replayers[i])) known.emplace_back(*c, i);
  }
  std::stable_sort(known.begin(), known.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 1; k <= known.size(); ++k) {
    if (known[k - 1].first * static_cast<double>(k) < rate_qps) continue;
    std::vector<int> chosen;
    for (size_t j = 0; j < k; ++j) chosen.push_back(known[j].second);
    std::sort(chosen.begin(), chosen.end());
    return chosen;
  }
  return all;
}

}  // namespace vanguard::worker
