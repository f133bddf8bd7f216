// ReplayerSet and --replayer parsing with a scripted resolver and fake replayer clients (no DNS,
// no gRPC): what a pool resolved per test runs on, which channels it keeps, how it fails.
#include "worker/replayer_set.h"

#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::StartsWith;

std::vector<std::string> Ips(int n) {
  std::vector<std::string> ips;
  for (int i = 1; i <= n; ++i) ips.push_back(absl::StrCat("10.0.0.", i));
  return ips;
}

// A replayer that records the shards it was sent and answers with an empty result; it calls
// `on_gone` when destroyed (its channel dropped).
class FakeReplayer : public ReplayerClient {
 public:
  FakeReplayer(std::string address, std::function<void(const std::string&)> on_gone)
      : address_(std::move(address)), on_gone_(std::move(on_gone)) {}
  ~FakeReplayer() override { on_gone_(address_); }

  absl::StatusOr<ExecutedStep> Execute(const vanguard::v1::RunStepRequest& request,
                                       CancellationToken*, const WindowCallback&) override {
    requests.push_back(request);
    if (!fail_with.ok()) return fail_with;
    ExecutedStep step;
    step.request = request;
    return step;
  }

  std::vector<vanguard::v1::RunStepRequest> requests;
  absl::Status fail_with;  // not OK: every step fails with it

 private:
  const std::string address_;
  const std::function<void(const std::string&)> on_gone_;
};

// A DNS pool whose name resolves to `answer_` or, when `timeline_` is set, to its latest entry
// at or before the fake clock's monotonic time (a pool that grows while a test waits), with
// the clients it connected by address and the lines it logged.
class ReplayerSetTest : public ::testing::Test {
 protected:
  using Answer = absl::StatusOr<std::vector<std::string>>;

  std::unique_ptr<ReplayerSet> DnsSet(absl::Duration pool_wait = absl::Seconds(120)) {
    ReplayerSource source;
    source.dns_name = "replayers.test";
    source.port = 50052;
    ReplayerSetOptions options;
    options.resolver = [this](const std::string& host) -> Answer {
      ++resolutions_;
      EXPECT_EQ(host, "replayers.test");
      if (on_resolve_) on_resolve_();
      if (timeline_.empty()) return answer_;
      auto at = timeline_.upper_bound(clock_.Monotonic());
      EXPECT_NE(at, timeline_.begin()) << "the timeline starts after 0";
      return std::prev(at)->second;
    };
    options.log = [this](const std::string& line) { logs_.push_back(line); };
    options.clock = &clock_;
    options.pool_wait = pool_wait;
    options.pool_poll = absl::Seconds(3);
    absl::StatusOr<std::unique_ptr<ReplayerSet>> set =
        ReplayerSet::Create(source, Connector(), options);
    EXPECT_TRUE(set.ok()) << set.status();
    return *std::move(set);
  }

  // The logged lines containing `part`.
  std::vector<std::string> LogsWith(absl::string_view part) const {
    std::vector<std::string> found;
    for (const std::string& line : logs_) {
      if (absl::StrContains(line, part)) found.push_back(line);
    }
    return found;
  }

  ReplayerConnector Connector() {
    return [this](const std::string& address) {
      ++connects_[address];
      auto client = std::make_unique<FakeReplayer>(address, [this](const std::string& gone) {
        live_.erase(gone);
        gone_.push_back(gone);
      });
      live_[address] = client.get();
      return client;
    };
  }

  // Runs one step on `set`; the shard count each live replayer saw for it.
  std::map<std::string, int> RunStep(ReplayerSet& set) {
    for (auto& [address, fake] : live_) fake->requests.clear();
    vanguard::v1::RunStepRequest request;
    request.set_rate_qps(300);
    request.set_schedule(vanguard::v1::SCHEDULE_POISSON);
    absl::StatusOr<ExecutedStep> step = set.Execute(request, nullptr, nullptr);
    EXPECT_TRUE(step.ok()) << step.status();
    std::map<std::string, int> shards;
    for (auto& [address, fake] : live_) {
      for (const auto& r : fake->requests) shards[address] = r.shard_count();
    }
    return shards;
  }

  FakeClock clock_;
  Answer answer_;
  std::map<absl::Duration, Answer> timeline_;  // by fake monotonic time, from 0
  std::function<void()> on_resolve_;           // nullable
  std::vector<std::string> logs_;
  int resolutions_ = 0;
  std::map<std::string, int> connects_;
  std::map<std::string, FakeReplayer*> live_;  // the clients alive, by address
  std::vector<std::string> gone_;
};

TEST(ParseReplayerFlagTest, TakesAListOrOneDnsName) {
  absl::StatusOr<ReplayerSource> list = ParseReplayerFlag("a:1, b:2");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_FALSE(list->is_dns());
  EXPECT_THAT(list->addresses, ElementsAre("a:1", "b:2"));
  EXPECT_EQ(list->ToString(), "a:1,b:2");

  absl::StatusOr<ReplayerSource> dns =
      ParseReplayerFlag("dns:vanguard-replayer.vanguard.svc:50052");
  ASSERT_TRUE(dns.ok()) << dns.status();
  EXPECT_TRUE(dns->is_dns());
  EXPECT_EQ(dns->dns_name, "vanguard-replayer.vanguard.svc");
  EXPECT_EQ(dns->port, 50052);
  EXPECT_TRUE(dns->addresses.empty());
  EXPECT_EQ(dns->ToString(), "dns:vanguard-replayer.vanguard.svc:50052");
}

TEST(ParseReplayerFlagTest, RefusesBadValuesNamingTheFlagAndTheRule) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "empty entry"},
      {"a:1,,b:2", "empty entry"},
      {"a:1,b:2,a:1", "lists a:1 twice"},
      {"dns:pool.test:50052,a:1", "cannot be mixed"},
      {"a:1,dns:pool.test:50052", "cannot be mixed"},
      {"dns:pool.test", "is not dns:NAME:PORT"},
      {"dns::50052", "is not dns:NAME:PORT"},
      {"dns:///pool.test:50052", "is not dns:NAME:PORT"},
      {"dns:pool.test:0", "1 to 65535"},
      {"dns:pool.test:65536", "1 to 65535"},
      {"dns:pool.test:grpc", "1 to 65535"},
  };
  for (const auto& [value, rule] : cases) {
    absl::StatusOr<ReplayerSource> source = ParseReplayerFlag(value);
    ASSERT_FALSE(source.ok()) << value;
    EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument) << value;
    EXPECT_THAT(std::string(source.status().message()), StartsWith("--replayer: ")) << value;
    EXPECT_THAT(std::string(source.status().message()), HasSubstr(rule)) << value;
  }
}

TEST_F(ReplayerSetTest, EachTestRunsOnWhatTheNameResolvesToAtItsStart) {
  std::unique_ptr<ReplayerSet> set = DnsSet();
  answer_ = std::vector<std::string>{"10.0.0.2", "10.0.0.1", "10.0.0.1"};
  ASSERT_TRUE(set->BeginTest(0, nullptr).ok());
  EXPECT_THAT(set->addresses(), ElementsAre("10.0.0.1:50052", "10.0.0.2:50052"));
  EXPECT_EQ(RunStep(*set),
            (std::map<std::string, int>{{"10.0.0.1:50052", 2}, {"10.0.0.2:50052", 2}}));

  // Scaled between tests: the next step of the same test still runs on the same two...
  answer_ = std::vector<std::string>{"10.0.0.2", "10.0.0.3", "fd00::3"};
  EXPECT_EQ(RunStep(*set).size(), 2u);
  EXPECT_EQ(resolutions_, 1);
  // ...and the next test on the new three.
  ASSERT_TRUE(set->BeginTest(0, nullptr).ok());
  EXPECT_EQ(resolutions_, 2);
  EXPECT_THAT(set->addresses(), ElementsAre("10.0.0.2:50052", "10.0.0.3:50052", "[fd00::3]:50052"));
  EXPECT_EQ(RunStep(*set),
            (std::map<std::string, int>{
                {"10.0.0.2:50052", 3}, {"10.0.0.3:50052", 3}, {"[fd00::3]:50052", 3}}));
}

TEST_F(ReplayerSetTest, AStepFailedOnAnUnreachableReplayerResolvesTheNameAgain) {
  std::unique_ptr<ReplayerSet> set = DnsSet();
  answer_ = Ips(2);
  ASSERT_TRUE(set->BeginTest(0, nullptr).ok());
  vanguard::v1::RunStepRequest request;
  request.set_rate_qps(300);
  request.set_schedule(vanguard::v1::SCHEDULE_POISSON);

  // A failure that is not about reaching a replayer leaves the pool as it is.
  live_.at("10.0.0.2:50052")->fail_with = absl::DataLossError("bad histogram");
  answer_ = std::vector<std::string>{"10.0.0.1", "10.0.0.3"};
  EXPECT_EQ(set->Execute(request, nullptr, nullptr).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(resolutions_, 1);
  EXPECT_THAT(set->addresses(), ElementsAre("10.0.0.1:50052", "10.0.0.2:50052"));

  // Its pod is gone: the step fails, and the retry runs on what the name resolves to now.
  live_.at("10.0.0.2:50052")->fail_with = absl::UnavailableError("connection refused");
  EXPECT_EQ(set->Execute(request, nullptr, nullptr).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(resolutions_, 2);
  EXPECT_THAT(set->addresses(), ElementsAre("10.0.0.1:50052", "10.0.0.3:50052"));
  EXPECT_THAT(gone_, ElementsAre("10.0.0.2:50052"));
  EXPECT_THAT(LogsWith("now resolves to 2 replayer(s): 10.0.0.1:50052, 10.0.0.3:50052"), SizeIs(1));
  EXPECT_EQ(RunStep(*set),
            (std::map<std::string, int>{{"10.0.0.1:50052", 2}, {"10.0.0.3:50052", 2}}));

  // A resolver out for a moment keeps the members; so does a name that resolves to none.
  for (Answer answer :
       {Answer(absl::UnavailableError("no DNS server")), Answer(std::vector<std::string>{})}) {
    live_.at("10.0.0.3:50052")->fail_with = absl::DeadlineExceededError("no answer");
    answer_ = answer;
    EXPECT_FALSE(set->Execute(request, nullptr, nullptr).ok());
    EXPECT_THAT(set->addresses(), ElementsAre("10.0.0.1:50052", "10.0.0.3:50052"));
  }
  EXPECT_EQ(resolutions_, 4);
  EXPECT_THAT(LogsWith("the step is retried on the same 2"), SizeIs(2));
}

TEST_F(ReplayerSetTest, KeepsTheChannelsOfAddressesStillThereAndDropsTheOthers) {
  std::unique_ptr<ReplayerSet> set = DnsSet();
  answer_ = std::vector<std::string>{"10.0.0.1", "10.0.0.2"};
  ASSERT_TRUE(set->BeginTest(0, nullptr).ok());
  answer_ = std::vector<std::string>{"10.0.0.2", "10.0.0.3"};
  ASSERT_TRUE(set->BeginTest(0, nullptr).ok());
  ASSERT_TRUE(set->BeginTest(0, nullptr).ok());

  EXPECT_EQ(connects_, (std::map<std::string, int>{
                           {"10.0.0.1:50052", 1}, {"10.0.0.2:50052", 1}, {"10.0.0.3:50052", 1}}));
  EXPECT_THAT(gone_, ElementsAre("10.0.0.1:50052"));
}

TEST_F(ReplayerSetTest, ANameResolvingToNothingFailsNamingItAndRunsNoStep) {
  std::unique_ptr<ReplayerSet> set = DnsSet();
  answer_ = std::vector<std::string>{"10.0.0.1"};
  ASSERT_TRUE(set->BeginTest(0, nullptr).ok());
  FakeReplayer* before = live_["10.0.0.1:50052"];

  answer_ = std::vector<std::string>{};
  absl::Status empty = set->BeginTest(0, nullptr).status();
  EXPECT_EQ(empty.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(empty.message()), HasSubstr("--replayer=dns:replayers.test:50052"));
  EXPECT_THAT(std::string(empty.message()), HasSubstr("replayers.test resolves to no address"));
  EXPECT_TRUE(set->addresses().empty());

  // The test's step, if one is asked for anyway, resolves again instead of using the old pool.
  absl::StatusOr<ExecutedStep> step = set->Execute({}, nullptr, nullptr);
  EXPECT_EQ(step.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(before->requests.empty());

  answer_ = absl::UnavailableError("cannot resolve replayers.test: Temporary failure");
  absl::Status down = set->BeginTest(0, nullptr).status();
  EXPECT_EQ(down.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(down.message()),
              HasSubstr("--replayer=dns:replayers.test:50052: cannot resolve replayers.test"));
}

TEST_F(ReplayerSetTest, WaitsUntilThePoolHasTheReplayersTheTestWants) {
  std::unique_ptr<ReplayerSet> set = DnsSet();
  timeline_ = {
      {absl::ZeroDuration(), Ips(1)}, {absl::Seconds(5), Ips(2)}, {absl::Seconds(10), Ips(3)}};
  absl::StatusOr<TestReplayers> ready = set->BeginTest(/*wanted_replayers=*/3, nullptr);
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_THAT(ready->shortfall, IsEmpty());
  // Resolved at 0, 3, 6, 9 and 12 s: the second pod was seen at 6 s, the third at 12 s.
  EXPECT_EQ(clock_.Monotonic(), absl::Seconds(12));
  EXPECT_EQ(resolutions_, 5);
  EXPECT_THAT(set->addresses(), SizeIs(3));
  EXPECT_EQ(RunStep(*set).size(), 3u);
  // One line per membership while short, not per resolution.
  EXPECT_THAT(LogsWith("of 3 replayers ready"),
              ElementsAre(HasSubstr("1 of 3 replayers ready; waiting up to 2m"),
                          HasSubstr("2 of 3 replayers ready; waiting up to 1m54s"),
                          HasSubstr("3 of 3 replayers ready after 12s")));

  // The next test finds them all at once: no wait, no waiting line.
  logs_.clear();
  ASSERT_TRUE(set->BeginTest(/*wanted_replayers=*/3, nullptr).ok());
  EXPECT_EQ(clock_.Monotonic(), absl::Seconds(12));
  EXPECT_THAT(LogsWith("replayers ready"), IsEmpty());
}

TEST_F(ReplayerSetTest, AWaitThatEndsShortRunsOnWhatIsReadyAndSaysSo) {
  std::unique_ptr<ReplayerSet> set = DnsSet(/*pool_wait=*/absl::Seconds(30));
  timeline_ = {{absl::ZeroDuration(), Ips(1)}, {absl::Seconds(5), Ips(2)}};
  absl::StatusOr<TestReplayers> ready = set->BeginTest(/*wanted_replayers=*/4, nullptr);
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(clock_.Monotonic(), absl::Seconds(30));
  EXPECT_THAT(ready->shortfall, HasSubstr("ran on 2 of the 4 replayers the test wants"));
  EXPECT_THAT(ready->shortfall,
              HasSubstr("dns:replayers.test:50052 had 2 ready after waiting 30s"));
  EXPECT_THAT(LogsWith(ready->shortfall), SizeIs(1));
  EXPECT_EQ(RunStep(*set),
            (std::map<std::string, int>{{"10.0.0.1:50052", 2}, {"10.0.0.2:50052", 2}}));
}

TEST_F(ReplayerSetTest, AResolveErrorWhileWaitingIsRetriedUntilTheLimit) {
  std::unique_ptr<ReplayerSet> set = DnsSet();
  // Scaled from zero: the headless Service has no ready pod, so the name does not exist yet.
  timeline_ = {{absl::ZeroDuration(), absl::FailedPreconditionError("replayers.test resolves to "
                                                                    "no address")},
               {absl::Seconds(7), Ips(2)}};
  absl::StatusOr<TestReplayers> ready = set->BeginTest(/*wanted_replayers=*/2, nullptr);
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_THAT(ready->shortfall, IsEmpty());
  EXPECT_EQ(clock_.Monotonic(), absl::Seconds(9));
  EXPECT_THAT(set->addresses(), SizeIs(2));
  EXPECT_THAT(LogsWith("0 of 2 replayers ready"),
              ElementsAre(HasSubstr("(replayer pool --replayer=dns:replayers.test:50052: "
                                    "replayers.test resolves to no address)")));
}

TEST_F(ReplayerSetTest, AResolveErrorThatLastsTheWholeWaitIsReturned) {
  std::unique_ptr<ReplayerSet> set = DnsSet(/*pool_wait=*/absl::Seconds(10));
  answer_ = absl::UnavailableError("cannot resolve replayers.test: Temporary failure");
  absl::StatusOr<TestReplayers> ready = set->BeginTest(/*wanted_replayers=*/2, nullptr);
  EXPECT_EQ(ready.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(ready.status().message()),
              HasSubstr("--replayer=dns:replayers.test:50052: cannot resolve replayers.test"));
  EXPECT_EQ(clock_.Monotonic(), absl::Seconds(10));
  EXPECT_EQ(resolutions_, 5);  // 0, 3, 6, 9 and at the limit
  EXPECT_TRUE(set->addresses().empty());
}

TEST_F(ReplayerSetTest, ATestThatWantsNoCountDoesNotWait) {
  std::unique_ptr<ReplayerSet> set = DnsSet();
  timeline_ = {{absl::ZeroDuration(), Ips(1)}, {absl::Seconds(1), Ips(3)}};
  absl::StatusOr<TestReplayers> ready = set->BeginTest(/*wanted_replayers=*/0, nullptr);
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_THAT(ready->shortfall, IsEmpty());
  EXPECT_EQ(clock_.Monotonic(), absl::ZeroDuration());
  EXPECT_EQ(resolutions_, 1);
  EXPECT_THAT(set->addresses(), SizeIs(1));
}

TEST_F(ReplayerSetTest, APoolWaitOfZeroDoesNotWaitButSaysTheTestRunsShort) {
  std::unique_ptr<ReplayerSet> set = DnsSet(/*pool_wait=*/absl::ZeroDuration());
  timeline_ = {{absl::ZeroDuration(), Ips(1)}, {absl::Seconds(1), Ips(3)}};
  absl::StatusOr<TestReplayers> ready = set->BeginTest(/*wanted_replayers=*/3, nullptr);
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(clock_.Monotonic(), absl::ZeroDuration());
  EXPECT_EQ(resolutions_, 1);
  EXPECT_THAT(set->addresses(), SizeIs(1));
  EXPECT_THAT(ready->shortfall, HasSubstr("ran on 1 of the 3 replayers the test wants"));
}

TEST_F(ReplayerSetTest, ACancelledTestStopsWaitingAtOnce) {
  std::unique_ptr<ReplayerSet> set = DnsSet();
  answer_ = Ips(1);
  CancellationToken cancel;
  on_resolve_ = [&] {
    if (resolutions_ == 2) cancel.Cancel();  // the user cancels during the wait
  };
  absl::StatusOr<TestReplayers> ready = set->BeginTest(/*wanted_replayers=*/3, &cancel);
  EXPECT_EQ(ready.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(std::string(ready.status().message()), HasSubstr("waiting for 3 replayers"));
  EXPECT_EQ(clock_.Monotonic(), absl::Seconds(3));
  EXPECT_EQ(resolutions_, 2);
  EXPECT_TRUE(set->addresses().empty());
}

TEST_F(ReplayerSetTest, AFixedListIsConnectedOnceAndNeverResolved) {
  absl::StatusOr<ReplayerSource> source = ParseReplayerFlag("a:1,b:2");
  ASSERT_TRUE(source.ok());
  ReplayerSetOptions options;
  options.resolver = [this](const std::string&) -> absl::StatusOr<std::vector<std::string>> {
    ++resolutions_;
    return absl::InternalError("a list is not resolved");
  };
  absl::StatusOr<std::unique_ptr<ReplayerSet>> set =
      ReplayerSet::Create(*source, Connector(), options);
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_TRUE((*set)->BeginTest(0, nullptr).ok());
  ASSERT_TRUE((*set)->BeginTest(0, nullptr).ok());
  EXPECT_THAT((*set)->addresses(), ElementsAre("a:1", "b:2"));
  EXPECT_EQ(RunStep(**set), (std::map<std::string, int>{{"a:1", 2}, {"b:2", 2}}));
  EXPECT_EQ(connects_, (std::map<std::string, int>{{"a:1", 1}, {"b:2", 1}}));
  EXPECT_EQ(resolutions_, 0);
}

TEST_F(ReplayerSetTest, AFixedListShorterThanTheTestWantsRunsAtOnceAndSaysSo) {
  absl::StatusOr<ReplayerSource> source = ParseReplayerFlag("a:1,b:2");
  ASSERT_TRUE(source.ok());
  ReplayerSetOptions options;
  options.clock = &clock_;
  options.log = [this](const std::string& line) { logs_.push_back(line); };
  absl::StatusOr<std::unique_ptr<ReplayerSet>> set =
      ReplayerSet::Create(*source, Connector(), options);
  ASSERT_TRUE(set.ok()) << set.status();

  absl::StatusOr<TestReplayers> ready = (*set)->BeginTest(/*wanted_replayers=*/3, nullptr);
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(ready->shortfall, "ran on 2 of the 3 replayers the test wants: --replayer lists 2");
  EXPECT_THAT(logs_, ElementsAre(HasSubstr(ready->shortfall)));
  EXPECT_EQ(clock_.Monotonic(), absl::ZeroDuration());

  absl::StatusOr<TestReplayers> enough = (*set)->BeginTest(/*wanted_replayers=*/2, nullptr);
  ASSERT_TRUE(enough.ok()) << enough.status();
  EXPECT_THAT(enough->shortfall, IsEmpty());
}

TEST_F(ReplayerSetTest, CreateRefusesASourceWithoutReplayersOrWithBoth) {
  EXPECT_EQ(ReplayerSet::Create({}, Connector()).status().code(),
            absl::StatusCode::kInvalidArgument);
  ReplayerSource both;
  both.addresses = {"a:1"};
  both.dns_name = "replayers.test";
  both.port = 1;
  EXPECT_EQ(ReplayerSet::Create(both, Connector()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ReplayerSetTest, CreateRefusesAPollThatWouldResolveWithoutPause) {
  ReplayerSource source;
  source.dns_name = "replayers.test";
  source.port = 50052;
  ReplayerSetOptions no_poll;
  no_poll.pool_poll = absl::ZeroDuration();
  absl::Status refused = ReplayerSet::Create(source, Connector(), no_poll).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("pool_poll > 0"));
  ReplayerSetOptions negative_wait;
  negative_wait.pool_wait = absl::Seconds(-1);
  EXPECT_EQ(ReplayerSet::Create(source, Connector(), negative_wait).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ResolveHostAddressesTest, AnIpLiteralResolvesToItselfWithoutDns) {
  absl::StatusOr<std::vector<std::string>> ips = ResolveHostAddresses("127.0.0.1");
  ASSERT_TRUE(ips.ok()) << ips.status();
  EXPECT_THAT(*ips, ElementsAre("127.0.0.1"));
}

}  // namespace
}  // namespace vanguard::worker
