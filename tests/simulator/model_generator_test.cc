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
  o.min_judged_requests = 0;
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

// A model of 4 slots of 10 ms (400 req/s flat out) judged on p99 <= 60 ms, and its truth
// from a short quick bisection.
Profile FourSlots() {
  Profile p;
  p.batch.slots = 4;
  p.batch.service_time = absl::Milliseconds(10);
  p.slo.latency_percentile = 99;
  p.slo.latency_limit = absl::Milliseconds(60);
  p.slo.max_error_rate = 0.01;
  return p;
}

TEST(ModelGeneratorTest, AQueueNearSaturationIsSteepAndRateIndependentErrorsAreFlat) {
  // The p99 of a queue near saturation rises steeply with the rate; a model whose 0.9% of
  // served errors (against 1% allowed) is all that binds below saturation hardly changes
  // with the rate around the rate where its errors reach 1%.
  GeneratorOptions o = Quick();
  o.horizon = absl::Seconds(60);
  Profile queue = FourSlots();
  ASSERT_TRUE(FinalizeProfile(queue).ok());
  GroundTruthOptions bisect;
  bisect.settle = o.settle;
  bisect.measure = o.horizon;
  bisect.replications = 1;
  absl::StatusOr<GroundTruth> truth = ComputeGroundTruth(queue, queue.slo, bisect);
  ASSERT_TRUE(truth.ok()) << truth.status();
  absl::StatusOr<double> steep = TruthElasticity(queue, truth->max_sustainable_rps, o);
  ASSERT_TRUE(steep.ok()) << steep.status();
  EXPECT_GT(*steep, 3 * kFlatTailElasticity);

  Profile errors = FourSlots();
  errors.slo.latency_limit = absl::Seconds(10);
  errors.batch.perturbations.error_rate = 0.0098;
  ASSERT_TRUE(FinalizeProfile(errors).ok());
  // Any rate well below saturation: the share of errors is the same at 0.8x and 1.25x.
  absl::StatusOr<double> flat = TruthElasticity(errors, 100, o);
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_LT(*flat, kFlatTailElasticity);
  EXPECT_GT(*flat, -kFlatTailElasticity);
}

TEST(ModelGeneratorTest, RejectsBadOptions) {
  GeneratorOptions o;
  o.horizon = absl::ZeroDuration();
  EXPECT_EQ(GenerateModel(1, o).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vanguard::sim
