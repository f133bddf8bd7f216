#include "tests/simulator/model_generator.h"

#include <set>

#include "gtest/gtest.h"
#include "tests/simulator/ground_truth.h"

namespace vanguard::sim {
namespace {

GeneratorOptions Quick() {
  GeneratorOptions o;
  o.horizon = absl::Seconds(20);
  o.settle = absl::Seconds(2);
  o.replications = 1;  // the truths here are checked for their properties, not their noise
  return o;
}

TEST(ModelGeneratorTest, SameSeedSameModel) {
  absl::StatusOr<GeneratedModel> a = GenerateModel(7, Quick());
  absl::StatusOr<GeneratedModel> b = GenerateModel(7, Quick());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->description, b->description);
  EXPECT_DOUBLE_EQ(a->truth_rps, b->truth_rps);
  EXPECT_DOUBLE_EQ(a->min_qps, b->min_qps);
}

TEST(ModelGeneratorTest, DrawsVariedModelsWithTruthAndUserRangesInBounds) {
  std::set<std::string> bindings;
  std::set<int> slots;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    absl::StatusOr<GeneratedModel> m = GenerateModel(seed, Quick());
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_GE(m->truth_rps, 2) << m->description;
    EXPECT_LE(m->truth_rps, 20000) << m->description;
    EXPECT_GE(m->min_qps, m->truth_rps / 200 * 0.999);
    EXPECT_LE(m->min_qps, m->truth_rps / 2 * 1.001);
    EXPECT_GE(m->max_qps, m->truth_rps * 1.2 * 0.999);
    EXPECT_LE(m->max_qps, m->truth_rps * 20 * 1.001);
    bindings.insert(m->binding);
    slots.insert(m->profile.batch.slots);
  }
  EXPECT_GE(bindings.size(), 2u);
  EXPECT_GE(slots.size(), 4u);
}

TEST(ModelGeneratorTest, TruthHoldsAndTenPercentAboveFails) {
  absl::StatusOr<GeneratedModel> m = GenerateModel(3, Quick());
  ASSERT_TRUE(m.ok()) << m.status();
  GroundTruthOptions o;
  o.settle = absl::Seconds(2);
  o.measure = absl::Seconds(20);
  absl::StatusOr<RateEvaluation> above =
      EvaluateRate(m->profile, m->profile.slo, m->truth_rps * 1.3, o);
  ASSERT_TRUE(above.ok());
  EXPECT_FALSE(above->meets_slo) << m->description;
}

TEST(ModelGeneratorTest, RejectsBadOptions) {
  GeneratorOptions o;
  o.horizon = absl::ZeroDuration();
  EXPECT_EQ(GenerateModel(1, o).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vanguard::sim
