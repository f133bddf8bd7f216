// Unit tests of the WatchTest stream caps (no gRPC, no database).
#include "orchestrator/watch_stream_limiter.h"

#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(WatchStreamLimiterTest, OneTokenIsCappedWhileAnotherIsAdmitted) {
  WatchStreamLimiter limiter({.max_streams = 100, .max_per_token = 3});
  std::vector<WatchStreamLimiter::Slot> a;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<WatchStreamLimiter::Slot> slot = limiter.Acquire(1);
    ASSERT_TRUE(slot.ok()) << i << ": " << slot.status();
    a.push_back(*std::move(slot));
  }
  absl::StatusOr<WatchStreamLimiter::Slot> fourth = limiter.Acquire(1);
  EXPECT_EQ(fourth.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(fourth.status().message(), AllOf(HasSubstr("3 WatchTest streams"),
                                               HasSubstr("--max_watch_streams_per_token=3")));
  absl::StatusOr<WatchStreamLimiter::Slot> other = limiter.Acquire(2);
  EXPECT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(limiter.open_for(1), 3);
  EXPECT_EQ(limiter.open_for(2), 1);
  EXPECT_EQ(limiter.open(), 4);
}

TEST(WatchStreamLimiterTest, EndingAStreamFreesItsSlot) {
  std::vector<int> changes;
  WatchStreamLimiter limiter({.max_streams = 100, .max_per_token = 2},
                             [&changes](int open) { changes.push_back(open); });
  absl::StatusOr<WatchStreamLimiter::Slot> first = limiter.Acquire(7);
  ASSERT_TRUE(first.ok());
  {
    absl::StatusOr<WatchStreamLimiter::Slot> second = limiter.Acquire(7);
    ASSERT_TRUE(second.ok());
    EXPECT_FALSE(limiter.Acquire(7).ok());
    WatchStreamLimiter::Slot moved = *std::move(second);  // a moved slot releases once
  }
  EXPECT_EQ(limiter.open_for(7), 1);
  absl::StatusOr<WatchStreamLimiter::Slot> again = limiter.Acquire(7);
  EXPECT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(changes, (std::vector<int>{1, 2, 1, 2}));
  first = absl::StatusOr<WatchStreamLimiter::Slot>(absl::CancelledError());  // releases
  again = absl::StatusOr<WatchStreamLimiter::Slot>(absl::CancelledError());
  EXPECT_EQ(limiter.open(), 0);
  EXPECT_EQ(limiter.open_for(7), 0);
  EXPECT_EQ(changes.back(), 0);
}

TEST(WatchStreamLimiterTest, TheGlobalCapCountsEveryTokenAndAnonymousCallers) {
  WatchStreamLimiter limiter({.max_streams = 3, .max_per_token = 2});
  absl::StatusOr<WatchStreamLimiter::Slot> a = limiter.Acquire(1);
  absl::StatusOr<WatchStreamLimiter::Slot> b = limiter.Acquire(2);
  absl::StatusOr<WatchStreamLimiter::Slot> anonymous = limiter.Acquire(std::nullopt);
  ASSERT_TRUE(a.ok() && b.ok() && anonymous.ok());
  absl::StatusOr<WatchStreamLimiter::Slot> over = limiter.Acquire(3);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(over.status().message(), HasSubstr("--max_watch_streams=3"));
  b = absl::StatusOr<WatchStreamLimiter::Slot>(absl::CancelledError());
  EXPECT_TRUE(limiter.Acquire(3).ok());
}

TEST(WatchStreamLimiterTest, WithoutATokenOnlyTheGlobalCapApplies) {
  WatchStreamLimiter limiter({.max_streams = 5, .max_per_token = 1});
  std::vector<WatchStreamLimiter::Slot> slots;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<WatchStreamLimiter::Slot> slot = limiter.Acquire(std::nullopt);
    ASSERT_TRUE(slot.ok()) << i;
    slots.push_back(*std::move(slot));
  }
  EXPECT_FALSE(limiter.Acquire(std::nullopt).ok());
}

}  // namespace
}  // namespace vanguard
