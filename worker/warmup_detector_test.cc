// WarmupDetector on synthetic windows: linear warmups are seen to their end, a flat noisy
// latency is warm at once, a rising one is not a warmup.
#include "worker/warmup_detector.h"

#include <functional>
#include <random>

#include "gtest/gtest.h"

namespace vanguard::worker {
namespace {

constexpr absl::Duration kWindow = absl::Milliseconds(500);

// Feeds half-second windows whose latency is slowdown(t) * 20 ms with `noise` relative
// Gaussian scatter, until the detector is warm (or capped, or `until`); returns when the
// verdict came (the end of the last window fed).
absl::Duration FeedUntilWarm(WarmupDetector& d, const std::function<double(double)>& slowdown,
                             double noise, unsigned seed,
                             absl::Duration until = absl::Seconds(400)) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> scatter(0, noise);
  for (absl::Duration t; t < until && !d.warm() && !d.capped(); t += kWindow) {
    const double seconds = absl::ToDoubleSeconds(t + kWindow / 2);
    d.Add(t, kWindow, 20 * slowdown(seconds) * (1 + scatter(rng)));
  }
  return d.observed();
}

// Slowdown falling linearly from `factor` to 1 over `seconds`, flat after.
std::function<double(double)> Linear(double factor, double seconds) {
  return [=](double t) { return t < seconds ? factor - (factor - 1) * t / seconds : 1.0; };
}

TEST(WarmupDetectorTest, ALinearWarmupIsSeenAndItsEndFound) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    WarmupDetector d({});
    const absl::Duration decided = FeedUntilWarm(d, Linear(4, 120), 0.1, seed);
    ASSERT_TRUE(d.warm()) << "seed " << seed;
    EXPECT_GE(decided, absl::Seconds(120)) << "seed " << seed;
    EXPECT_LE(decided, absl::Seconds(200)) << "seed " << seed;
    EXPECT_GE(d.warmup(), absl::Seconds(100)) << "seed " << seed;
    EXPECT_LE(d.warmup(), absl::Seconds(140)) << "seed " << seed;
  }
}

TEST(WarmupDetectorTest, SlowAndGentleWarmupsAreSeenToo) {
  // The longest the test bed draws: 180 s at 6x (10% noise per window), and 180 s at 2x,
  // whose latency falls by under 3% per 10 s span at first (5% noise).
  for (double factor : {6.0, 2.0}) {
    for (unsigned seed = 1; seed <= 10; ++seed) {
      WarmupDetector d({});
      const absl::Duration decided =
          FeedUntilWarm(d, Linear(factor, 180), factor > 2 ? 0.1 : 0.05, seed);
      ASSERT_TRUE(d.warm()) << factor << "x seed " << seed;
      EXPECT_GE(decided, absl::Seconds(170)) << factor << "x seed " << seed;
      EXPECT_GE(d.warmup(), absl::Seconds(130)) << factor << "x seed " << seed;
      EXPECT_LE(d.warmup(), absl::Seconds(200)) << factor << "x seed " << seed;
    }
  }
}

TEST(WarmupDetectorTest, AFlatNoisyLatencyIsWarmAtOnce) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    WarmupDetector d({});
    const absl::Duration decided = FeedUntilWarm(
        d, [](double) { return 1.0; }, 0.15, seed);
    ASSERT_TRUE(d.warm()) << "seed " << seed;
    // The first verdict comes at 40 s; warm needs the drop's upper bound under
    // warm_tolerance, which 15% scatter per window reaches within a few more spans.
    EXPECT_LE(decided, absl::Seconds(90)) << "seed " << seed;
    EXPECT_EQ(d.warmup(), absl::ZeroDuration()) << "seed " << seed;
  }
  WarmupDetector d({});
  EXPECT_EQ(d.evidence_needed(kWindow), absl::Seconds(40));
}

TEST(WarmupDetectorTest, ANoisyLatencyHidingASlowWarmupIsNotCalledWarm) {
  // 173 s at 3.7x behind 50% scatter per window (a p50 of a few requests of a batching
  // model): no fall is significant at 40 s, which is no evidence the model is warm.
  int early = 0;
  for (unsigned seed = 1; seed <= 40; ++seed) {
    WarmupDetector d({});
    const absl::Duration decided = FeedUntilWarm(d, Linear(3.7, 173), 0.5, seed);
    early += decided < absl::Seconds(100) ? 1 : 0;
  }
  // Before warm_tolerance, every seed was called warm at the first verdict (40 s).
  EXPECT_LE(early, 8);
}

TEST(WarmupDetectorTest, ARisingLatencyIsNotAWarmup) {
  // A cold model overloaded, or a queue building: rising all along.
  WarmupDetector d({});
  FeedUntilWarm(
      d, [](double t) { return 1 + t / 30; }, 0.1, 3);
  EXPECT_TRUE(d.warm());
  EXPECT_FALSE(d.falling());
  EXPECT_EQ(d.warmup(), absl::ZeroDuration());
}

TEST(WarmupDetectorTest, AColdOverloadThatRisesThenDrainsEndsWhenFlat) {
  // Rising while cold and overloaded for 40 s, the backlog draining until 90 s, flat after.
  // Warm while it rises; falling while it drains; warm once flat, the warmup ending with
  // the drain.
  WarmupDetector d({});
  const auto slowdown = [](double t) {
    return t < 40 ? 2 + t / 10 : (t < 90 ? 6 - 5 * (t - 40) / 50 : 1.0);
  };
  FeedUntilWarm(d, slowdown, 0.1, 4, absl::Seconds(45));
  EXPECT_TRUE(d.warm());
  EXPECT_EQ(d.warmup(), absl::ZeroDuration());
  std::mt19937 rng(4);
  std::normal_distribution<double> scatter(0, 0.1);
  bool fell = false;
  for (absl::Duration t = d.observed(); t < absl::Seconds(200); t += kWindow) {
    d.Add(t, kWindow, 20 * slowdown(absl::ToDoubleSeconds(t + kWindow / 2)) * (1 + scatter(rng)));
    fell = fell || d.falling();
  }
  EXPECT_TRUE(fell);
  ASSERT_TRUE(d.warm());
  EXPECT_GE(d.warmup(), absl::Seconds(70));
  EXPECT_LE(d.warmup(), absl::Seconds(100));
}

TEST(WarmupDetectorTest, StillFallingAtTheCapIsCapped) {
  WarmupDetectorOptions options;
  options.max_warmup = absl::Seconds(120);
  WarmupDetector d(options);
  FeedUntilWarm(d, Linear(6, 600), 0.05, 5);
  EXPECT_FALSE(d.warm());
  EXPECT_TRUE(d.falling());
  EXPECT_TRUE(d.capped());
  EXPECT_EQ(d.warmup(), absl::Seconds(120));  // a lower bound: all it saw
}

TEST(WarmupDetectorTest, NoVerdictBeforeEnoughSpansNorFromEmptyWindows) {
  WarmupDetector d({});
  for (absl::Duration t; t < absl::Seconds(39); t += kWindow) d.Add(t, kWindow, 10);
  EXPECT_FALSE(d.warm());
  EXPECT_FALSE(d.falling());
  WarmupDetector empty({});
  for (absl::Duration t; t < absl::Seconds(30); t += kWindow) empty.Add(t, kWindow, 10);
  for (absl::Duration t = absl::Seconds(30); t < absl::Seconds(60); t += kWindow) {
    empty.Add(t, kWindow, 0);
  }
  EXPECT_FALSE(empty.warm());
  EXPECT_FALSE(d.warm());  // windows with no completions say nothing
}

TEST(WarmupDetectorTest, LongWindowsLengthenTheSpans) {
  // 5 s windows at a low rate: spans of 15 s (three windows), first verdict after 60 s.
  WarmupDetector d({});
  EXPECT_EQ(d.evidence_needed(absl::Seconds(5)), absl::Seconds(60));
  for (absl::Duration t; t < absl::Seconds(55); t += absl::Seconds(5)) {
    d.Add(t, absl::Seconds(5), 10 + absl::ToDoubleSeconds(t) / 100);
  }
  EXPECT_FALSE(d.warm());
  d.Add(absl::Seconds(55), absl::Seconds(5), 10.3);
  EXPECT_TRUE(d.warm());
}

}  // namespace
}  // namespace vanguard::worker
