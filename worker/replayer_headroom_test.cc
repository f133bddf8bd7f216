// Choosing how many replayers a step needs from their measured headroom, on a fake clock.
#include "worker/replayer_headroom.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::worker {
namespace {

using ::testing::ElementsAre;

const std::vector<std::string> kPool = {"a:1", "b:2", "c:3", "d:4"};

TEST(ReplayerHeadroomTest, EveryReplayerUntilTheyAreMeasured) {
  FakeClock clock;
  ReplayerHeadroom headroom(&clock);
  EXPECT_THAT(headroom.Choose(10, kPool, 0), ElementsAre(0, 1, 2, 3));
  EXPECT_FALSE(headroom.Capacity("a:1").has_value());
}

TEST(ReplayerHeadroomTest, TheFewestWhoseSmallestShareStillFits) {
  FakeClock clock;
  ReplayerHeadroom headroom(&clock);
  headroom.Observe("a:1", 1200, 0.5);   // 1200 req/s at kTargetLoopShare
  headroom.Observe("b:2", 1000, 0.25);  // 2000
  headroom.Observe("c:3", 1000, 1.0);   // 500
  EXPECT_EQ(headroom.Capacity("b:2"), 2000);
  EXPECT_THAT(headroom.Choose(2000, kPool, 0), ElementsAre(1));
  // 2100: b alone cannot; b and a split it 1050 each, under a's 1200.
  EXPECT_THAT(headroom.Choose(2100, kPool, 0), ElementsAre(0, 1));
  // 2500: two cannot (1250 each > a's 1200), three cannot (833 > c's 500): everyone,
  // the unmeasured d included.
  EXPECT_THAT(headroom.Choose(2500, kPool, 0), ElementsAre(0, 1, 2, 3));
}

TEST(ReplayerHeadroomTest, TheSpecsCountWinsUpToThePoolsSize) {
  FakeClock clock;
  ReplayerHeadroom headroom(&clock);
  headroom.Observe("a:1", 1000, 0.1);
  EXPECT_THAT(headroom.Choose(100, kPool, 3), ElementsAre(0, 1, 2));
  EXPECT_THAT(headroom.Choose(100, kPool, 9), ElementsAre(0, 1, 2, 3));
}

TEST(ReplayerHeadroomTest, AnIdleLoopSaysLittleAndNothingIsNotAMeasurement) {
  FakeClock clock;
  ReplayerHeadroom headroom(&clock);
  headroom.Observe("a:1", 10, 0.001);  // read as kMinLoopShare: 10 x 0.5 / 0.05
  EXPECT_DOUBLE_EQ(*headroom.Capacity("a:1"), 100);
  headroom.Observe("b:2", 10, 0);  // an old replayer that does not report the share
  headroom.Observe("c:3", 0, 0.3);
  EXPECT_FALSE(headroom.Capacity("b:2").has_value());
  EXPECT_FALSE(headroom.Capacity("c:3").has_value());
}

TEST(ReplayerHeadroomTest, AnEstimateOlderThanMaxAgeIsForgotten) {
  FakeClock clock;
  ReplayerHeadroom headroom(&clock);
  headroom.Observe("a:1", 1000, 0.5);
  clock.Advance(ReplayerHeadroom::kMaxAge);
  EXPECT_THAT(headroom.Choose(500, kPool, 0), ElementsAre(0));
  clock.Advance(absl::Seconds(1));
  EXPECT_THAT(headroom.Choose(500, kPool, 0), ElementsAre(0, 1, 2, 3));
}

}  // namespace
}  // namespace vanguard::worker
