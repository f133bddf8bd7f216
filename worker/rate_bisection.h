// The search of the fleet strategies (replica_loss_strategy.h, version_transition_strategy.h):
// a binary search over trial rates between min_qps and max_qps, where each trial at a rate
// either holds or fails. The first trial runs at min_qps; after each trial the bracket
// [highest held, lowest failed] (max_qps standing in for a failure not seen) shrinks and the
// next trial runs at its midpoint, until the bracket is within the tolerance or the trial
// budget is spent. A first trial that fails ends the search: nothing held.
//
//   RateBisection search(config.min_qps(), config.max_qps(), config.tolerance_qps(),
//                        config.max_trials());
//   double rate = search.first_rate();
//   while (true) {
//     RateBisection::Verdict v = search.Record(rate, RunTrial(rate));
//     if (v.ending != RateBisection::Ending::kNone) { Finish(v); break; }
//     rate = v.next_rate;
//   }
//
// The bounds are checked once by ValidateRates (INVALID_ARGUMENT naming the field under the
// caller's prefix); the constructor assumes them checked. Pure and deterministic; called from
// the test runner's thread only (one instance per strategy, not shared).
#ifndef VANGUARD_WORKER_RATE_BISECTION_H_
#define VANGUARD_WORKER_RATE_BISECTION_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace vanguard::worker {

class RateBisection {
 public:
  static constexpr double kDefaultRelativeTolerance = 0.05;  // of max_qps, when tolerance 0
  static constexpr int kMaxTrials = 12;

  // How the search ended after a trial; kNone: it goes on at Verdict::next_rate.
  enum class Ending {
    kNone,
    kNothingHeld,    // the first trial (min_qps) failed
    kConverged,      // a held and a failed trial within the tolerance
    kNoTrialFailed,  // held up to within the tolerance of max_qps, which was never refuted
    kBudgetSpent,    // max_trials run and the bracket still wider than the tolerance
  };
  struct Verdict {
    Ending ending = Ending::kNone;
    double next_rate = 0;  // when ending == kNone
  };

  // OK, or INVALID_ARGUMENT "<prefix>.<field> <rule>" for: min_qps not > 0 or not finite,
  // max_qps not > min_qps or not finite, tolerance_qps negative or not finite, max_trials
  // outside [0, kMaxTrials].
  static absl::Status ValidateRates(absl::string_view prefix, double min_qps, double max_qps,
                                    double tolerance_qps, int max_trials);

  // Bounds as checked by ValidateRates. tolerance_qps 0: 5% of max_qps; max_trials 0: enough
  // halvings of [min_qps, max_qps] to reach the tolerance, plus the first trial, at most
  // kMaxTrials.
  RateBisection(double min_qps, double max_qps, double tolerance_qps, int max_trials);

  double first_rate() const { return min_qps_; }
  double tolerance() const { return tolerance_; }
  int max_trials() const { return max_trials_; }
  int trials() const { return trials_; }
  std::optional<double> highest_held() const { return highest_held_; }
  std::optional<double> lowest_failed() const { return lowest_failed_; }
  // The upper end of the bracket: the lowest failed rate, or max_qps while none failed.
  double high() const { return high_; }

  // Takes the finished trial at `rate`; the next rate, or how the search ended.
  Verdict Record(double rate, bool held);

  // How many trials after the one in flight the search expects at most (for StepsLeft).
  int TrialsLeftAfterCurrent() const;

  // The ending in words for a result's summary ("converged", ...); empty for kNone and
  // kNothingHeld, whose words depend on the strategy.
  std::string Describe(Ending ending) const;

 private:
  const double min_qps_;
  const double tolerance_;
  const int max_trials_;
  double low_;   // highest rate known (or assumed) to hold
  double high_;  // lowest rate known (or assumed) to fail
  std::optional<double> highest_held_;
  std::optional<double> lowest_failed_;
  int trials_ = 0;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_RATE_BISECTION_H_
