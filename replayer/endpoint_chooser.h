// EndpointChooser: which of a step's endpoints (the replicas of one model) the next request
// goes to. Pure: no I/O, no clock; the caller passes the in-flight counts it keeps, so tests
// drive every policy with counts they choose.
//
//   EndpointChooser chooser(v1::ENDPOINT_POLICY_P2C, /*endpoints=*/3, /*seed=*/step_seed,
//                           /*stream=*/loop_shard);
//   int endpoint = chooser.Choose(in_flight);  // in_flight[i]: requests open to endpoint i
//
// Policies (v1::EndpointPolicy):
//  * single:      always endpoint 0 (the router address).
//  * round robin: stream, stream + 1, ... mod n: every n consecutive choices cover each
//                 endpoint once; loops start at their own stream so several loops together
//                 stay even.
//  * random:      uniform over the endpoints, from a SplitMix64 stream seeded by
//                 (seed, stream): the same seed gives the same sequence on every platform.
//  * p2c:         two distinct endpoints drawn as random draws them; the one with fewer in
//                 flight wins, a tie goes to the first drawn. With two endpoints that is
//                 always the less loaded one.
// ResolveEndpointPolicy turns UNSPECIFIED into the default (single for one endpoint, round
// robin for several).
//
// Not thread-safe: one per event loop. Choose() allocates nothing.
#ifndef VANGUARD_REPLAYER_ENDPOINT_CHOOSER_H_
#define VANGUARD_REPLAYER_ENDPOINT_CHOOSER_H_

#include <cstdint>

#include "absl/types/span.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard::replayer {

// The policy a step with `endpoints` endpoints runs with when asked for `policy`.
v1::EndpointPolicy ResolveEndpointPolicy(v1::EndpointPolicy policy, int endpoints);

class EndpointChooser {
 public:
  // `endpoints` >= 1; `policy` as resolved by ResolveEndpointPolicy (UNSPECIFIED is resolved
  // here too). `stream` tells apart the choosers of one step (the loop's shard).
  EndpointChooser(v1::EndpointPolicy policy, int endpoints, uint64_t seed, uint64_t stream);

  // The endpoint for the next request, in [0, endpoints). `in_flight` (size endpoints) is
  // read by p2c only; other policies accept an empty span.
  int Choose(absl::Span<const int> in_flight);

  v1::EndpointPolicy policy() const { return policy_; }
  int endpoints() const { return endpoints_; }

 private:
  uint64_t NextRandom();
  int Uniform(int n);  // in [0, n)

  v1::EndpointPolicy policy_;
  int endpoints_;
  uint64_t state_;
  int next_ = 0;  // round robin
};

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_ENDPOINT_CHOOSER_H_
