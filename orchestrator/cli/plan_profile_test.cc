// Replicas over a day, checked against hand-computed examples.
#include "orchestrator/cli/plan_profile.h"

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::cli {
namespace {

using ::testing::HasSubstr;

// nvidia-l4 x2: 100 req/s per replica, priced at 2.50 an accelerator-hour, so a million
// requests cost 2.5 * 2 / (100 * 3600) * 1e6 = 13.8889 and a replica-hour 5.00; a100 x1:
// 250 req/s, no price; cpu: not measured.
v1::PlanCapacityResponse Plan() {
  v1::PlanCapacityResponse plan;
  plan.set_model("resnet50");
  plan.set_peak_qps(300);
  plan.set_headroom(0.3);
  plan.set_survive_loss(1);
  v1::ReplicaPlan* l4 = plan.add_plans();
  l4->mutable_hardware()->set_accelerator("nvidia-l4");
  l4->mutable_hardware()->set_accelerator_count(2);
  l4->set_test_id(7);
  l4->set_capacity_qps(100);
  l4->set_cost_per_million_requests(2.5 * 2 / (100 * 3600.0) * 1e6);
  v1::ReplicaPlan* a100 = plan.add_plans();
  a100->mutable_hardware()->set_accelerator("a100");
  a100->mutable_hardware()->set_accelerator_count(1);
  a100->set_test_id(8);
  a100->set_capacity_qps(250);
  v1::ReplicaPlan* cpu = plan.add_plans();
  cpu->mutable_hardware()->set_accelerator("cpu");
  return plan;
}

constexpr char kDay[] = "time,qps\n00:00,100\n06:00,300\n\n# evening\n18:00,150\n";

TEST(PlanProfileTest, ParsesADailyProfile) {
  absl::StatusOr<std::vector<ProfilePoint>> day = ParseDailyProfile(kDay);
  ASSERT_TRUE(day.ok()) << day.status();
  ASSERT_EQ(day->size(), 3u);
  EXPECT_EQ((*day)[1].second_of_day, 6 * 3600);
  EXPECT_EQ((*day)[2].qps, 150);
  EXPECT_EQ(ProfilePeak(*day), 300);
  EXPECT_EQ((*ParseDailyProfile("3600,5\n01:30:30,7"))[1].second_of_day, 5430);
}

TEST(PlanProfileTest, EachRateHoldsUntilTheNextTimeAndTheLastWrapsToTheFirst) {
  EXPECT_THAT(PointHours(*ParseDailyProfile(kDay)), ::testing::ElementsAre(6, 12, 6));
  EXPECT_THAT(PointHours(*ParseDailyProfile("02:00,1\n20:00,2")), ::testing::ElementsAre(18, 6));
}

TEST(PlanProfileTest, RefusesBadLinesNamingTheLine) {
  for (const char* bad : {"", "00:00,1\n00:00,2", "25:00,1", "00:61,1", "00:00,-1",
                          "00:00,1\n01:00,x", "00:00;1", "86400,1"}) {
    absl::StatusOr<std::vector<ProfilePoint>> day = ParseDailyProfile(bad);
    ASSERT_FALSE(day.ok()) << bad;
    EXPECT_THAT(day.status().message(), HasSubstr("--profile")) << bad;
  }
  EXPECT_THAT(ParseDailyProfile("00:00,1\n01:00,x").status().message(), HasSubstr("line 2"));
}

TEST(PlanProfileTest, ReplicasAreTheCeilingOfTheRateWithHeadroomPlusTheSpares) {
  EXPECT_EQ(ReplicasAt(100, 0.3, 1, 100), 3);  // ceil(1.3) + 1
  EXPECT_EQ(ReplicasAt(300, 0.3, 1, 100), 5);  // ceil(3.9) + 1
  EXPECT_EQ(ReplicasAt(120, 0.3, 0, 52), 3);   // exactly 3, not 3.0000000000000004
  EXPECT_EQ(ReplicasAt(0, 0.3, 1, 100), 1);    // nothing to carry: the spares
}

TEST(PlanProfileTest, TableShowsReplicasPerTimeAndTheDaysHoursAndCost) {
  const std::string table = RenderProfileTable(Plan(), *ParseDailyProfile(kDay));
  // nvidia-l4: 3, 5, 3 replicas for 6, 12, 6 hours = 96 replica-hours, 192 accelerator-hours,
  // 96 * 5.00 = 480.00 a day. a100: ceil(0.52)+1 = 2, ceil(1.56)+1 = 3, ceil(0.78)+1 = 2:
  // 2*6 + 3*12 + 2*6 = 60 replica-hours = 60 accelerator-hours, no price.
  EXPECT_THAT(table, HasSubstr("TIME                 QPS  nvidia-l4x2  a100x1\n"
                               "00:00              100.0            3       2\n"
                               "06:00              300.0            5       3\n"
                               "18:00              150.0            3       2\n"
                               "replica-hours                   96.00   60.00\n"
                               "accelerator-hours              192.00   60.00\n"
                               "cost per day                   480.00       -\n"));
  EXPECT_THAT(table, ::testing::Not(HasSubstr("cpu")));  // not measured: no column
}

TEST(PlanProfileTest, CsvCarriesTheSameNumbers) {
  const std::string csv = RenderProfileCsv(Plan(), *ParseDailyProfile(kDay));
  EXPECT_THAT(csv, ::testing::StartsWith("time_s,qps,nvidia-l4x2,a100x1\n"
                                         "0,100,3,2\n"
                                         "21600,300,5,3\n"
                                         "64800,150,3,2\n"
                                         "replica_hours,,96,60\n"
                                         "accelerator_hours,,192,60\n"
                                         "cost_per_day,,"));
  const size_t cost_at = csv.rfind(",,") + 2;
  EXPECT_NEAR(std::stod(csv.substr(cost_at)), 480, 1e-9);
  EXPECT_TRUE(absl::EndsWith(csv, ",\n"));  // the a100 has no price
}

}  // namespace
}  // namespace vanguard::cli
