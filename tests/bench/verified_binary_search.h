// The accuracy benchmark's time baseline: binary search given the adaptive search's final
// verification. Binary search (worker/binary_search_strategy.h, same range) runs to its
// estimate E; then E is held as one step of the sustained horizon. A hold that holds ends the
// search at E (converged). A hold that fails makes E a failure: binary search runs again in
// [the highest pass below E, E], its lower end known to pass (not measured again), and holds
// its new estimate; after kMaxHolds failed holds the estimate is the highest pass below the
// lowest failed hold, unconverged. Each hold is a RunStep marked `verification`, so the
// benchmark can charge it the adaptive search's final verification time.
//
//   VerifiedBinarySearch search(min_qps, max_qps, [&](double rate) { return part_s(rate); },
//                               /*horizon_s=*/300);
//
// Used by search_sim only (tests/bench/search_sim_main.cc); pure, one thread.
#ifndef VANGUARD_TESTS_BENCH_VERIFIED_BINARY_SEARCH_H_
#define VANGUARD_TESTS_BENCH_VERIFIED_BINARY_SEARCH_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "worker/binary_search_strategy.h"
#include "worker/strategy.h"

namespace vanguard::bench {

class VerifiedBinarySearch : public worker::Strategy {
 public:
  static constexpr int kMaxHolds = 3;

  // `part_seconds(rate)`: the measured seconds of one step at `rate` (a hold covers
  // horizon_s in parts of it). min_qps < max_qps, both > 0.
  VerifiedBinarySearch(double min_qps, double max_qps, std::function<double(double)> part_seconds,
                       double horizon_s);

  worker::Decision Next(const std::optional<worker::StepOutcome>& last) override;
  std::string name() const override { return "verified_binary_search"; }
  std::optional<int> StepsLeft() const override { return std::nullopt; }
  int holds() const { return holds_; }

 private:
  // A binary search over [low, high]; when low_passed its first step (at low) is not run.
  worker::Decision StartSearch(double low, double high, bool low_passed);
  // The binary search's decision: its step (remembered), or the hold of its estimate.
  worker::Decision Asked(worker::Decision d);
  // After the binary search ended at `done`: the hold of its estimate, or the end.
  worker::Decision Hold(const worker::Done& done);
  worker::Decision AfterHold(bool held);
  double HighestPassBelow(double rate) const;

  const double min_qps_;
  const double max_qps_;
  const std::function<double(double)> part_seconds_;
  const double horizon_s_;
  std::unique_ptr<worker::BinarySearchStrategy> search_;
  double asked_ = 0;            // the rate of the binary search's step in flight
  std::vector<double> passes_;  // every rate that passed, steps and holds
  double holding_ = 0;          // the rate held, while a hold is in flight
  double lowest_failed_hold_ = 0;
  int holds_ = 0;
  int steps_ = 0;
  std::optional<worker::Done> done_;
};

}  // namespace vanguard::bench

#endif  // VANGUARD_TESTS_BENCH_VERIFIED_BINARY_SEARCH_H_
