// Unit tests of profile files: the five named profiles, parsing rules and errors.
#include "tests/simulator/profile.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ProfileTest, ShipsFiveNamedProfilesSpanningTheModelClasses) {
  EXPECT_THAT(NamedProfiles(), ElementsAre("embedding", "llm", "nlp_encoder", "ranking", "vision"));
  for (const std::string& name : NamedProfiles()) {
    absl::StatusOr<Profile> profile = LoadProfile(name);
    ASSERT_TRUE(profile.ok()) << name << ": " << profile.status();
    EXPECT_EQ(profile->name, name);
    EXPECT_FALSE(profile->description.empty()) << name;
    EXPECT_GT(SaturationRps(*profile), 1.0) << name;
    EXPECT_GT(profile->slo.latency_limit, absl::ZeroDuration()) << name;
    EXPECT_GT(profile->batch.perturbations.warmup, absl::ZeroDuration()) << name;
  }
  EXPECT_EQ(LoadProfile("llm")->mode, ProfileMode::kGenerative);
  EXPECT_NE(LoadProfile("llm")->slo.ttft_limit, absl::InfiniteDuration());
  EXPECT_EQ(LoadProfile("vision")->mode, ProfileMode::kBatch);
  // Sub-millisecond embedding: one request alone is served in under a millisecond.
  const Profile embedding = *LoadProfile("embedding");
  EXPECT_LT(embedding.batch.service_time + embedding.batch.per_item_time, absl::Milliseconds(1));
  // Ranking batches are large.
  EXPECT_GE(LoadProfile("ranking")->batch.max_batch, 64);
}

TEST(ProfileTest, ParsesEveryFieldWithDefaultsForTheRest) {
  absl::StatusOr<Profile> profile = ParseProfileJson(R"({
    "name": "t", "slots": 3, "base_ms": 2.5, "per_item_ms": 0.5, "max_batch": 4,
    "max_queue_delay_ms": 1, "max_queue": 10, "jitter_sigma": 0.1, "warmup_factor": 2,
    "warmup_s": 3, "stall_rate_per_s": 0.5, "stall_ms": 20, "colocation": 0.2,
    "error_rate": 0.01, "seed": 9,
    "slo": {"latency_percentile": 95, "latency_ms": 50, "max_error_rate": 0.02}})");
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_EQ(profile->batch.slots, 3);
  EXPECT_EQ(profile->batch.service_time, absl::Microseconds(2500));
  EXPECT_EQ(profile->batch.per_item_time, absl::Microseconds(500));
  EXPECT_EQ(profile->batch.max_batch, 4);
  EXPECT_EQ(profile->batch.max_queue, 10);
  EXPECT_EQ(profile->batch.perturbations.warmup, absl::Seconds(3));
  EXPECT_EQ(profile->batch.perturbations.stall_duration, absl::Milliseconds(20));
  EXPECT_EQ(profile->batch.perturbations.seed, 9u);
  EXPECT_EQ(profile->slo.latency_percentile, 95);
  EXPECT_EQ(profile->slo.latency_limit, absl::Milliseconds(50));
  EXPECT_EQ(profile->slo.ttft_limit, absl::InfiniteDuration());
  // Shared fields reach the generative config too.
  EXPECT_EQ(profile->generative.slots, 3);
  EXPECT_EQ(profile->generative.perturbations.colocation, 0.2);

  absl::StatusOr<Profile> empty = ParseProfileJson("{}");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->batch.slots, 4);
  EXPECT_EQ(empty->batch.service_time, absl::Milliseconds(10));
  EXPECT_DOUBLE_EQ(SaturationRps(*empty), 400.0);
}

TEST(ProfileTest, RejectsBadFilesNamingTheKey) {
  auto error = [](const char* text) {
    absl::StatusOr<Profile> profile = ParseProfileJson(text);
    EXPECT_FALSE(profile.ok()) << text;
    EXPECT_EQ(profile.status().code(), absl::StatusCode::kInvalidArgument) << text;
    return std::string(profile.status().message());
  };
  EXPECT_THAT(error("{not json"), HasSubstr("JSON"));
  EXPECT_THAT(error("[1]"), HasSubstr("object"));
  EXPECT_THAT(error(R"({"slotz": 2})"), HasSubstr("slotz"));
  EXPECT_THAT(error(R"({"slots": 0})"), HasSubstr("slots"));
  EXPECT_THAT(error(R"({"slots": 1.5})"), HasSubstr("slots"));
  EXPECT_THAT(error(R"({"base_ms": "fast"})"), HasSubstr("base_ms"));
  EXPECT_THAT(error(R"({"colocation": 0.99})"), HasSubstr("colocation"));
  EXPECT_THAT(error(R"({"mode": "streaming"})"), HasSubstr("mode"));
  EXPECT_THAT(error(R"({"slo": {"latency_ms": 0}})"), HasSubstr("slo.latency_ms"));
  EXPECT_THAT(error(R"({"generative": {"output_tokens": {"distribution": "zipf"}}})"),
              HasSubstr("generative.output_tokens.distribution"));
  EXPECT_THAT(error(R"({"mode": "generative", "generative": {"max_seqs": 0}})"),
              HasSubstr("max_seqs"));
}

TEST(ProfileTest, UnknownNameListsTheNamedProfiles) {
  absl::StatusOr<Profile> profile = LoadProfile("resnet");
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(profile.status().message(), HasSubstr("vision"));
  EXPECT_EQ(LoadProfile("/nonexistent/profile.json").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace vanguard::sim

namespace vanguard::sim {
namespace {

TEST(ProfileJsonTest, BatchProfileRoundTripsThroughItsJson) {
  absl::StatusOr<Profile> ranking = LoadProfile("ranking");
  ASSERT_TRUE(ranking.ok());
  ranking->cost_sigma = 0.4;
  ranking->batch.max_queue = 77;
  absl::StatusOr<std::string> text = BatchProfileToJson(*ranking);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<Profile> back = ParseProfileJson(*text);
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << *text;
  EXPECT_EQ(back->name, "ranking");
  EXPECT_DOUBLE_EQ(back->cost_sigma, 0.4);
  EXPECT_EQ(back->batch.max_queue, 77);
  EXPECT_EQ(back->batch.slots, ranking->batch.slots);
  EXPECT_EQ(back->batch.service_time, ranking->batch.service_time);
  EXPECT_EQ(back->batch.perturbations.stall_duration, ranking->batch.perturbations.stall_duration);
  EXPECT_EQ(back->slo.latency_limit, ranking->slo.latency_limit);
  EXPECT_DOUBLE_EQ(SaturationRps(*back), SaturationRps(*ranking));
}

TEST(ProfileJsonTest, GenerativeProfilesAreNotWritten) {
  absl::StatusOr<Profile> llm = LoadProfile("llm");
  ASSERT_TRUE(llm.ok());
  EXPECT_EQ(BatchProfileToJson(*llm).status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace vanguard::sim
