#include "replayer/endpoint_chooser.h"

namespace vanguard::replayer {
namespace {

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

v1::EndpointPolicy ResolveEndpointPolicy(v1::EndpointPolicy policy, int endpoints) {
  if (policy != v1::ENDPOINT_POLICY_UNSPECIFIED) return policy;
  return endpoints > 1 ? v1::ENDPOINT_POLICY_ROUND_ROBIN : v1::ENDPOINT_POLICY_SINGLE;
}

EndpointChooser::EndpointChooser(v1::EndpointPolicy policy, int endpoints, uint64_t seed,
                                 uint64_t stream)
    : policy_(ResolveEndpointPolicy(policy, endpoints)),
      endpoints_(endpoints < 1 ? 1 : endpoints),
      state_(Mix(seed ^ Mix(stream + 0x9e3779b97f4a7c15ULL))),
      next_(static_cast<int>(stream % static_cast<uint64_t>(endpoints_))) {}

uint64_t EndpointChooser::NextRandom() {
  state_ += 0x9e3779b97f4a7c15ULL;  // SplitMix64
  return Mix(state_);
}

int EndpointChooser::Uniform(int n) {
  // Multiply-shift: unbiased enough for n far below 2^32, and the same on every platform.
  return static_cast<int>((static_cast<unsigned __int128>(NextRandom()) * n) >> 64);
}

int EndpointChooser::Choose(absl::Span<const int> in_flight) {
  if (endpoints_ == 1) return 0;
  switch (policy_) {
    case v1::ENDPOINT_POLICY_ROUND_ROBIN: {
      const int chosen = next_;
      next_ = next_ + 1 == endpoints_ ? 0 : next_ + 1;
      return chosen;
    }
    case v1::ENDPOINT_POLICY_RANDOM:
      return Uniform(endpoints_);
    case v1::ENDPOINT_POLICY_P2C: {
      const int first = Uniform(endpoints_);
      int second = Uniform(endpoints_ - 1);
      if (second >= first) ++second;  // distinct from first, uniform over the others
      if (in_flight.size() < static_cast<size_t>(endpoints_)) return first;
      return in_flight[second] < in_flight[first] ? second : first;
    }
    default:  // single
      return 0;
  }
}

}  // namespace vanguard::replayer
