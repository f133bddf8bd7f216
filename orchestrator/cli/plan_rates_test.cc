// Tests of `vanguard plan --rates`'s arithmetic and parsing against hand-computed figures.
#include "orchestrator/cli/plan_rates.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::cli {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

// L4 x2 at 100 req/s per replica, $2.50 an accelerator-hour (13.89 per million requests),
// and cpu at 77 req/s, no count, unpriced; 30% headroom, one spare.
v1::PlanCapacityResponse Plan() {
  v1::PlanCapacityResponse plan;
  plan.set_model("resnet50");
  plan.set_peak_qps(300);
  plan.set_headroom(0.3);
  plan.set_survive_loss(1);
  plan.set_required_qps(390);
  v1::ReplicaPlan& cpu = *plan.add_plans();
  cpu.mutable_hardware()->set_accelerator("cpu");
  cpu.set_model_version("v1-cpu");
  cpu.set_test_id(4);
  cpu.set_capacity_qps(77);
  v1::ReplicaPlan& l4 = *plan.add_plans();
  l4.mutable_hardware()->set_accelerator("nvidia-l4");
  l4.mutable_hardware()->set_accelerator_count(2);
  l4.set_model_version("v2");
  l4.set_test_id(7);
  l4.set_capacity_qps(100);
  l4.set_cost_per_million_requests(2.5 * 2 / (100 * 3600.0) * 1e6);
  v1::ReplicaPlan& tpu = *plan.add_plans();  // not measured: no column
  tpu.mutable_hardware()->set_accelerator("tpu");
  tpu.set_model_version("v1");
  return plan;
}

// An hour at 100 req/s, an hour at 300, half an hour at 150 (as `vanguard-replayer rates`
// prints them, with its header).
constexpr char kRates[] = "start_s,duration_s,qps\n0,3600,100\n3600,3600,300\n7200,1800,150\n";

TEST(PlanRatesTest, ReplicasPerBucketAndTheirHoursOverTheTrace) {
  absl::StatusOr<std::vector<RatePoint>> rates = ParseRates(kRates);
  ASSERT_TRUE(rates.ok()) << rates.status();
  ASSERT_EQ(rates->size(), 3u);
  EXPECT_EQ(RatesPeak(*rates), 300);
  // L4: ceil(130/100) + 1 = 3, ceil(390/100) + 1 = 5, ceil(195/100) + 1 = 3 replicas for 1, 1
  // and 0.5 h = 9.5 replica-hours, 19 accelerator-hours, at $5 a replica-hour $47.50.
  // cpu: ceil(130/77) + 1 = 3, ceil(390/77) + 1 = 7, ceil(195/77) + 1 = 4: 3 + 7 + 2 = 12.
  const std::string table = RenderRatesTable(Plan(), *rates);
  EXPECT_THAT(table, HasSubstr("3 buckets covering 2.50 h (peak 300.0 qps)"));
  EXPECT_THAT(table, ContainsRegex("cpu +3 +7 +12\\.00 +- +-\n"));
  EXPECT_THAT(table, ContainsRegex("nvidia-l4x2 +3 +5 +9\\.50 +19\\.00 +47\\.50\n"));
  EXPECT_THAT(table, Not(HasSubstr("\ntpu")));  // not measured: no row
  EXPECT_EQ(RenderRatesCsv(Plan(), *rates),
            "start_s,duration_s,qps,cpu,nvidia-l4x2\n"
            "0,3600,100,3,3\n"
            "3600,3600,300,7,5\n"
            "7200,1800,150,4,3\n"
            "replica_hours,,,12,9.5\n"
            "accelerator_hours,,,,19\n"
            "cost,,,,47.5\n");
}

TEST(PlanRatesTest, BadRatesNameTheLine) {
  struct Case {
    const char* csv;
    const char* message;
  };
  const Case cases[] = {
      {"", "no START_S,DURATION_S,QPS line"},
      {"# only a comment\n", "no START_S,DURATION_S,QPS line"},
      {"0,60\n", "line 1: expected START_S,DURATION_S,QPS"},
      {"0,60,10\n60,60,x\n", "line 2: START_S, DURATION_S and QPS must be numbers"},
      {"0,60,-1\n", "line 1: QPS must be a finite rate >= 0"},
      {"0,60,nan\n", "line 1: QPS must be a finite rate >= 0"},
      {"0,0,10\n", "line 1: DURATION_S must be a finite number of seconds > 0"},
      {"-5,60,10\n", "line 1: START_S must be a finite number of seconds >= 0"},
      {"0,60,10\n30,60,10\n", "line 2: a bucket starts before the previous one ended"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<RatePoint>> rates = ParseRates(c.csv);
    ASSERT_FALSE(rates.ok()) << c.csv;
    EXPECT_EQ(rates.status().code(), absl::StatusCode::kInvalidArgument) << c.csv;
    EXPECT_THAT(rates.status().message(), HasSubstr(absl::StrCat("--rates: ", c.message))) << c.csv;
  }
  // Gaps between buckets are allowed (no traffic recorded there is no bucket to size).
  EXPECT_TRUE(ParseRates("0,60,10\n120,60,10\n").ok());
}

}  // namespace
}  // namespace vanguard::cli
