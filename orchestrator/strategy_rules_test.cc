// The orchestrator's strategy table: every strategy the spec can name has an entry, and the
// entries' checks are what ValidateTestSpec and the quotas apply.
#include "orchestrator/strategy_rules.h"

#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"

namespace vanguard {
namespace {

TEST(StrategyRulesTest, EveryStrategyOfTheSpecHasAnEntry) {
  const google::protobuf::OneofDescriptor* strategy =
      v1::TestSpec::descriptor()->FindOneofByName("strategy");
  ASSERT_NE(strategy, nullptr);
  ASSERT_GT(strategy->field_count(), 0);
  for (int i = 0; i < strategy->field_count(); ++i) {
    const auto which = static_cast<v1::TestSpec::StrategyCase>(strategy->field(i)->number());
    const StrategyRules* rules = StrategyRulesFor(which);
    ASSERT_NE(rules, nullptr) << strategy->field(i)->name() << " has no entry in kRules";
    EXPECT_EQ(rules->strategy, which);
    EXPECT_NE(rules->bounds, nullptr) << strategy->field(i)->name();
    EXPECT_NE(rules->highest_rate_qps, nullptr) << strategy->field(i)->name();
    EXPECT_NE(rules->most_steps, nullptr) << strategy->field(i)->name();
  }
  EXPECT_EQ(StrategyRulesFor(v1::TestSpec::STRATEGY_NOT_SET), nullptr);
}

TEST(StrategyRulesTest, TargetsNameTheirFields) {
  v1::TestSpec spec;
  spec.mutable_replica_loss()->set_remove_url("http://10.0.0.1:9/remove");
  spec.mutable_replica_loss()->set_restore_url("http://10.0.0.1:9/restore");
  std::vector<StrategyTarget> targets = StrategyRulesFor(spec.strategy_case())->targets(spec);
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[0].field, "spec.replica_loss.remove_url");
  EXPECT_EQ(targets[1].url, "http://10.0.0.1:9/restore");
  spec.mutable_version_transition()->add_restart_urls("http://10.0.0.1:9/a");
  spec.mutable_version_transition()->add_restart_urls("http://10.0.0.2:9/b");
  targets = StrategyRulesFor(spec.strategy_case())->targets(spec);
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[1].field, "spec.version_transition.restart_urls[1]");
  spec.mutable_adaptive()->set_max_qps(100);
  EXPECT_EQ(StrategyRulesFor(spec.strategy_case())->targets, nullptr);
}

}  // namespace
}  // namespace vanguard
