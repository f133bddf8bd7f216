// Unit tests of the continuous-batching (generative) model, in virtual time.
#include "tests/simulator/token_scheduler.h"

#include <cstdint>
#include <map>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::sim {
namespace {

using ::testing::HasSubstr;
using Admission = TokenScheduler::Admission;
using TokenEvent = TokenScheduler::TokenEvent;

absl::Duration Ms(double ms) { return absl::Microseconds(ms * 1000); }

TokenScheduler::Config Constant(int tokens) {
  TokenScheduler::Config config;
  config.slots = 1;
  config.max_seqs = 4;
  config.token_base = Ms(10);
  config.token_per_seq = Ms(2);
  config.prefill_per_token = absl::ZeroDuration();
  config.prompt_tokens = 0;
  config.output_tokens.kind = OutputLengthDistribution::Kind::kConstant;
  config.output_tokens.mean = tokens;
  config.output_tokens.min = 1;
  config.output_tokens.max = 10000;
  return config;
}

TEST(TokenSchedulerTest, RejectsInvalidConfigNamingTheField) {
  TokenScheduler::Config config = Constant(4);
  config.max_seqs = 0;
  auto scheduler = TokenScheduler::Create(config);
  ASSERT_FALSE(scheduler.ok());
  EXPECT_EQ(scheduler.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(scheduler.status().message(), HasSubstr("max_seqs"));
  config = Constant(4);
  config.output_tokens.max = 0;
  EXPECT_THAT(TokenScheduler::Create(config).status().message(), HasSubstr("output_tokens"));
}

TEST(TokenSchedulerTest, EmitsOneEventPerTokenAtIterationEnds) {
  TokenScheduler scheduler(Constant(3));
  std::vector<TokenEvent> events;
  EXPECT_EQ(scheduler.Arrive(1, Ms(0), 0, &events), Admission::kStarted);
  scheduler.AdvanceTo(absl::Seconds(1), &events);
  ASSERT_EQ(events.size(), 3u);
  // One sequence: every iteration takes 10 + 2 * 1 ms.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(events[i].token_index, i + 1);
    EXPECT_EQ(events[i].time, Ms(12 * (i + 1)));
    EXPECT_EQ(events[i].last, i == 2);
  }
  EXPECT_EQ(scheduler.stats().completed, 1u);
  EXPECT_EQ(scheduler.stats().tokens, 3u);
}

TEST(TokenSchedulerTest, PerSequenceTokenRateFallsAsMoreSequencesShareTheEngine) {
  TokenScheduler alone(Constant(10));
  TokenScheduler shared(Constant(10));
  std::vector<TokenEvent> events;
  alone.Arrive(1, Ms(0), 0, &events);
  alone.AdvanceTo(absl::Seconds(10), &events);
  const absl::Duration alone_done = events.back().time;
  events.clear();
  for (uint64_t id = 1; id <= 4; ++id) shared.Arrive(id, Ms(0), 0, &events);
  shared.AdvanceTo(absl::Seconds(10), &events);
  absl::Duration shared_done;
  for (const TokenEvent& e : events) {
    if (e.request_id == 1 && e.last) shared_done = e.time;
  }
  EXPECT_EQ(alone_done, Ms(120));  // 10 tokens * (10 + 2) ms
  // The first request starts alone; the other three join at the next iteration boundary.
  EXPECT_GT(shared_done, alone_done);
  EXPECT_EQ(shared_done, Ms(12) + 9 * Ms(18));  // then 4 sequences: 10 + 2 * 4 ms each
}

TEST(TokenSchedulerTest, WaitingRequestsJoinUpToMaxSeqsAndBeyondMaxQueueAreRejected) {
  TokenScheduler::Config config = Constant(5);
  config.max_queue = 2;
  TokenScheduler scheduler(config);
  std::vector<TokenEvent> events;
  std::vector<Admission> admissions;
  for (uint64_t id = 0; id < 8; ++id) admissions.push_back(scheduler.Arrive(id, Ms(0), 0, &events));
  // One starts the idle engine; the rest wait for an iteration boundary (max_queue 2).
  EXPECT_EQ(admissions[0], Admission::kStarted);
  EXPECT_EQ(admissions[1], Admission::kQueued);
  EXPECT_EQ(admissions[2], Admission::kQueued);
  for (int i = 3; i < 8; ++i) EXPECT_EQ(admissions[i], Admission::kRejected) << i;
  EXPECT_EQ(scheduler.stats().rejected, 5u);
  scheduler.AdvanceTo(Ms(12), &events);  // first iteration ends; both waiting join
  EXPECT_EQ(scheduler.stats().running, 3);
  EXPECT_EQ(scheduler.stats().waiting, 0);
  EXPECT_GT(scheduler.KvCacheUsage(), 0.0);
  scheduler.AdvanceTo(absl::Seconds(10), &events);
  EXPECT_EQ(scheduler.stats().completed, 3u);
  EXPECT_EQ(scheduler.KvCacheUsage(), 0.0);
}

TEST(TokenSchedulerTest, MaxTokensCapsTheOutput) {
  TokenScheduler scheduler(Constant(50));
  std::vector<TokenEvent> events;
  scheduler.Arrive(1, Ms(0), /*max_tokens=*/7, &events);
  scheduler.AdvanceTo(absl::Seconds(10), &events);
  ASSERT_EQ(events.size(), 7u);
  EXPECT_TRUE(events.back().last);
  EXPECT_EQ(events.back().output_tokens, 7);
}

TEST(TokenSchedulerTest, LognormalLengthsHaveTheComputedMean) {
  OutputLengthDistribution d;
  d.kind = OutputLengthDistribution::Kind::kLognormal;
  d.mean = 64;
  d.sigma = 0.5;
  d.min = 4;
  d.max = 256;
  const double mean = TokenScheduler::MeanOutputTokens(d);
  EXPECT_NEAR(mean, 64, 1.0);  // clamping moves it only slightly
  TokenScheduler::Config config = Constant(1);
  config.output_tokens = d;
  config.max_seqs = 100000;
  config.token_per_seq = absl::ZeroDuration();
  TokenScheduler scheduler(config);
  std::vector<TokenEvent> events;
  for (uint64_t id = 0; id < 20000; ++id) scheduler.Arrive(id, Ms(0), 0, &events);
  double total = 0;
  int minimum = 1 << 30, maximum = 0;
  // Request 0 runs alone for one 10 ms iteration; the rest join the second.
  scheduler.AdvanceTo(Ms(20), &events);
  int firsts = 0;
  for (const TokenEvent& e : events) {
    if (e.token_index != 1) continue;  // every request's first token carries its length
    ++firsts;
    total += e.output_tokens;
    minimum = std::min(minimum, e.output_tokens);
    maximum = std::max(maximum, e.output_tokens);
  }
  ASSERT_EQ(firsts, 20000);
  EXPECT_NEAR(total / firsts, mean, 0.01 * mean);
  EXPECT_GE(minimum, 4);
  EXPECT_LE(maximum, 256);
}

TEST(TokenSchedulerTest, ClosedLoopThroughputMatchesSaturationRps) {
  TokenScheduler::Config config;
  config.slots = 2;
  config.max_seqs = 8;
  config.token_base = Ms(8);
  config.token_per_seq = Ms(0.5);
  config.prefill_per_token = Ms(0.05);
  config.prompt_tokens = 100;
  config.output_tokens.kind = OutputLengthDistribution::Kind::kUniform;
  config.output_tokens.min = 10;
  config.output_tokens.max = 50;
  config.perturbations.jitter_sigma = 0.1;
  TokenScheduler scheduler(config);
  // 2 / (30 * 12 ms / 8 + 5 ms) = 40 rps.
  EXPECT_NEAR(scheduler.SaturationRps(), 40.0, 1e-9);
  std::vector<TokenEvent> events;
  uint64_t next_id = 0;
  for (int c = 0; c < 40; ++c) scheduler.Arrive(next_id++, Ms(0), 0, &events);
  uint64_t completed = 0;
  const absl::Duration from = absl::Seconds(20);
  const absl::Duration until = absl::Seconds(620);
  while (true) {
    const absl::Duration t = *scheduler.NextEventTime();
    if (t > until) break;
    events.clear();
    scheduler.AdvanceTo(t, &events);
    int finished = 0;
    for (const TokenEvent& e : events) {
      if (!e.last) continue;
      ++finished;
      if (t >= from) ++completed;
    }
    for (int i = 0; i < finished; ++i) scheduler.Arrive(next_id++, t, 0, &events);
  }
  EXPECT_NEAR(completed / 600.0, 40.0, 0.01 * 40.0);
}

}  // namespace
}  // namespace vanguard::sim
