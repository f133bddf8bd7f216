// End to end: one worker drives a pool of three replayer processes (--replayer=a,b,c), each
// step split over them as shards, against a model served by three simulator replicas, one of
// them slower, spread round robin. The stored step shows every replica's figures and every
// replayer's part, and the step's counts are the sum of its shards'. And a worker finding its
// replayer through --replayer=dns:NAME:PORT.
#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/e2e_stack.h"

namespace vanguard {
namespace {

using ::vanguard::testing::E2eStack;
using ::vanguard::testing::RunResult;
using ::vanguard::testing::Subprocess;

// The proto JSON mapping prints int64 as a string; absent means 0.
int64_t Int(const nlohmann::json& object, const char* field) {
  if (!object.contains(field)) return 0;
  const nlohmann::json& v = object[field];
  return v.is_string() ? std::stoll(v.get<std::string>()) : v.get<int64_t>();
}

class ReplayerPoolTest : public E2eStack {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartStack({.start_worker = false}));
    fast_replica_ = StartSimulator(kServiceMs);
    slow_replica_ = StartSimulator(4 * kServiceMs);
    second_ = StartReplayer();
    third_ = StartReplayer();
    ASSERT_TRUE(fast_replica_ && slow_replica_ && second_ && third_);
    // One measured call per step (no settling), to keep the test short.
    worker_ = StartWorker("pooled", {replayer_.get(), second_.get(), third_.get()},
                          {"--steady_state_detection=false"});
    ASSERT_NE(worker_, nullptr);
  }

  void TearDown() override {
    if (HasFailure()) {
      for (auto* p : {second_.get(), third_.get(), fast_replica_.get(), slow_replica_.get()}) {
        if (p != nullptr) std::cerr << "---- pid " << p->pid() << " stderr:\n" << p->Stderr();
      }
    }
    E2eStack::TearDown();
    second_.reset();
    third_.reset();
    fast_replica_.reset();
    slow_replica_.reset();
  }

  // Model e2e:v1 on the three replicas, the slow one last.
  void RegisterModel() {
    RunResult reg =
        Vanguard({"models", "register", "--name=e2e", "--version=v1",
                  absl::StrCat("--endpoint=http://", sim_->address(), ",http://",
                               fast_replica_->address(), ",http://", slow_replica_->address()),
                  "--protocol=kserve_v2_rest", "--p99_ms=200", "--max_error_rate=0.01",
                  "--warmup=1s", "--output=json"});
    ASSERT_EQ(reg.exit_code, 0) << reg.err;
  }

  // The test as `vanguard get` prints it.
  nlohmann::json Get(const std::string& id) {
    RunResult get = Vanguard({"get", id, "--output=json"});
    EXPECT_EQ(get.exit_code, 0) << get.err;
    return get.exit_code == 0 ? nlohmann::json::parse(get.out) : nlohmann::json::object();
  }

  std::unique_ptr<Subprocess> fast_replica_, slow_replica_, second_, third_;
};

TEST_F(ReplayerPoolTest, OneStepOverThreeReplayersAndThreeReplicas) {
  const std::string slow = absl::StrCat("http://", slow_replica_->address());
  ASSERT_NO_FATAL_FAILURE(RegisterModel());

  // 150 req/s: 50 to each replica, under even the slow one's capacity (100 req/s).
  RunResult sub =
      Vanguard({"submit", "--model=e2e", "--version=v1", "--rates=150", "--step_duration=3s",
                "--step_warmup=1s", "--endpoint_policy=round_robin", "--wait", "--output=json"},
               absl::Seconds(90));
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  nlohmann::json test = nlohmann::json::parse(sub.out);
  ASSERT_EQ(test["state"], "TEST_STATE_SUCCEEDED") << sub.out;
  ASSERT_EQ(test["steps"].size(), 1u) << sub.out;
  const nlohmann::json& step = test["steps"][0];

  // Every replayer ran its shard; the step's counts are the sum of theirs.
  ASSERT_EQ(step["shards"].size(), 3u) << step.dump(2);
  std::set<std::string> replayers;
  int64_t scheduled = 0, completed = 0;
  for (const nlohmann::json& shard : step["shards"]) {
    const std::string replayer = shard["replayer"].get<std::string>();
    replayers.insert(replayer);
    // On a busy machine a replayer may be late; the step's verdict then names it.
    if (!shard["client_valid"].get<bool>()) {
      EXPECT_NE(step["verdict"].get<std::string>().find(absl::StrCat("replayer ", replayer)),
                std::string::npos)
          << step["verdict"];
    }
    // A third of 150 req/s for 3 s each, give or take the Poisson noise.
    EXPECT_GT(Int(shard, "completed"), 100) << shard.dump(2);
    std::cout << "shard " << replayer << ": scheduled " << Int(shard, "scheduled") << ", completed "
              << Int(shard, "completed") << "\n";
    scheduled += Int(shard, "scheduled");
    completed += Int(shard, "completed");
  }
  EXPECT_EQ(replayers,
            (std::set<std::string>{replayer_->address(), second_->address(), third_->address()}));
  EXPECT_EQ(scheduled, Int(step, "scheduled"));
  EXPECT_EQ(completed, Int(step, "completed"));
  EXPECT_NEAR(static_cast<double>(scheduled), 150 * 3, 0.2 * 150 * 3);

  // Every replica's figures; the slow one's latency stands out, and the merged tail is its.
  ASSERT_EQ(step["endpoints"].size(), 3u) << step.dump(2);
  double fastest_slow_ratio = 1e9;
  const nlohmann::json& slow_endpoint = step["endpoints"][2];
  ASSERT_EQ(slow_endpoint["target"], slow);
  int64_t endpoint_completed = 0;
  for (const nlohmann::json& endpoint : step["endpoints"]) {
    EXPECT_NEAR(endpoint["share"].get<double>(), 1.0 / 3, 0.05) << endpoint.dump(2);
    endpoint_completed += Int(endpoint, "completed");
    std::cout << "replica " << endpoint["target"].get<std::string>() << ": completed "
              << Int(endpoint, "completed") << ", p50 " << endpoint["latency"]["p50_ms"]
              << " ms, p99 " << endpoint["latency"]["p99_ms"] << " ms\n";
    if (endpoint["target"] == slow) continue;
    fastest_slow_ratio =
        std::min(fastest_slow_ratio, slow_endpoint["latency"]["p50_ms"].get<double>() /
                                         endpoint["latency"]["p50_ms"].get<double>());
  }
  EXPECT_EQ(endpoint_completed, completed);
  EXPECT_GT(fastest_slow_ratio, 2.0) << step["endpoints"].dump(2);
  EXPECT_GE(step["latency"]["p99_ms"].get<double>(), 4 * kServiceMs) << step.dump(2);

  // Each replica's own /metrics was scraped: the slow one (the same share, four times the
  // service time) is the busiest, and with three replicas the tail utilisation is its.
  const double slow_utilization = slow_endpoint["scraped"]["gpu_utilization"].get<double>();
  for (const nlohmann::json& endpoint : step["endpoints"]) {
    ASSERT_TRUE(endpoint["scraped"].contains("gpu_utilization")) << endpoint.dump(2);
    EXPECT_GE(endpoint["scraped"]["scrapes"].get<int>(), 2) << endpoint.dump(2);
    if (endpoint["target"] == slow) continue;
    EXPECT_GT(slow_utilization, 2 * endpoint["scraped"]["gpu_utilization"].get<double>())
        << step["endpoints"].dump(2);
  }
  EXPECT_DOUBLE_EQ(step["tail_utilization"].get<double>(), slow_utilization) << step.dump(2);
  EXPECT_LT(step["mean_utilization"].get<double>(), slow_utilization);
  // `vanguard get` shows them.
  RunResult table = Vanguard({"get", std::to_string(Int(test, "id"))});
  EXPECT_NE(table.out.find("tail utilisation"), std::string::npos) << table.out;
  std::cout << table.out;
}

TEST_F(ReplayerPoolTest, AReplayerKilledMidStepFailsTheStepWholeNamingIt) {
  ASSERT_NO_FATAL_FAILURE(RegisterModel());
  RunResult sub = Vanguard({"submit", "--model=e2e", "--version=v1", "--rates=150",
                            "--step_duration=8s", "--step_warmup=1s", "--output=json"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  nlohmann::json test = nlohmann::json::parse(sub.out);
  const std::string id = test["id"].is_string() ? test["id"].get<std::string>()
                                                : std::to_string(test["id"].get<int64_t>());
  // Into the step (1 s warmup + 8 s), then the second replayer dies.
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (Get(id)["state"] != "TEST_STATE_RUNNING" && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  absl::SleepFor(absl::Seconds(3));
  ASSERT_EQ(kill(second_->pid(), SIGKILL), 0);

  // The step is retried whole (the dead replayer refuses every retry) and the test fails
  // naming it; no part of the step was stored as measured.
  while (absl::Now() < give_up + absl::Seconds(30)) {
    test = Get(id);
    if (test["state"] != "TEST_STATE_RUNNING" && test["state"] != "TEST_STATE_QUEUED") break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  ASSERT_EQ(test["state"], "TEST_STATE_FAILED") << test.dump(2);
  EXPECT_NE(test["error"].get<std::string>().find(
                absl::StrCat("replayer ", second_->address(), " (shard 2 of 3)")),
            std::string::npos)
      << test["error"];
  for (const nlohmann::json& step : test.value("steps", nlohmann::json::array())) {
    EXPECT_FALSE(step.value("passed", false)) << step.dump(2);
    EXPECT_EQ(step.value("shards", nlohmann::json::array()).size(), 0u) << step.dump(2);
  }
}

// A worker that finds its replayers by name (--replayer=dns:NAME:PORT, the worker's flag given
// last wins): the real resolver and channels. An IP literal as NAME, so no DNS server is
// needed; the pool is resolved when the test starts and logged.
class DnsReplayerPoolTest : public E2eStack {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartStack({.start_worker = false}));
    worker_ = StartWorker(
        "by-name", *replayer_,
        {"--steady_state_detection=false", absl::StrCat("--replayer=dns:", replayer_->address())});
    ASSERT_NE(worker_, nullptr);
  }
};

TEST_F(DnsReplayerPoolTest, ATestRunsOnTheReplayersItsNameResolvesTo) {
  RunResult reg =
      Vanguard({"models", "register", "--name=e2e", "--version=v1",
                absl::StrCat("--endpoint=http://", sim_->address()), "--protocol=kserve_v2_rest",
                "--p99_ms=200", "--max_error_rate=0.01", "--warmup=1s", "--output=json"});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  RunResult sub = Vanguard({"submit", "--model=e2e", "--version=v1", "--rates=50",
                            "--step_duration=2s", "--step_warmup=1s", "--wait", "--output=json"},
                           absl::Seconds(90));
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  nlohmann::json test = nlohmann::json::parse(sub.out);
  ASSERT_EQ(test["state"], "TEST_STATE_SUCCEEDED") << sub.out;
  ASSERT_EQ(test["steps"].size(), 1u) << sub.out;
  EXPECT_GT(Int(test["steps"][0], "completed"), 50) << test["steps"][0].dump(2);
  EXPECT_NE(worker_->Stderr().find(absl::StrCat("replayer pool dns:", replayer_->address(),
                                                ": 1 replayer(s): ", replayer_->address())),
            std::string::npos)
      << worker_->Stderr();
}

}  // namespace
}  // namespace vanguard
