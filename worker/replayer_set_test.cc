// ReplayerSet and --replayer parsing with a scripted resolver and fake replayer clients (no DNS,
// no gRPC): what a pool resolved per test runs on, which channels it keeps, how it fails.
#include "worker/replayer_set.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

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
    ExecutedStep step;
    step.request = request;
    return step;
  }

  std::vector<vanguard::v1::RunStepRequest> requests;

 private:
  const std::string address_;
  const std::function<void(const std::string&)> on_gone_;
};

// A DNS pool whose name resolves to `answer`, with the clients it connected by address.
class ReplayerSetTest : public ::testing::Test {
 protected:
  std::unique_ptr<ReplayerSet> DnsSet() {
    ReplayerSource source;
    source.dns_name = "replayers.test";
    source.port = 50052;
    ReplayerSetOptions options;
    options.resolver = [this](const std::string& host) -> absl::StatusOr<std::vector<std::string>> {
      ++resolutions_;
      EXPECT_EQ(host, "replayers.test");
      return answer_;
    };
    absl::StatusOr<std::unique_ptr<ReplayerSet>> set =
        ReplayerSet::Create(source, Connector(), options);
    EXPECT_TRUE(set.ok()) << set.status();
    return *std::move(set);
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

  absl::StatusOr<std::vector<std::string>> answer_;
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
  ASSERT_TRUE(set->BeginTest().ok());
  EXPECT_THAT(set->addresses(), ElementsAre("10.0.0.1:50052", "10.0.0.2:50052"));
  EXPECT_EQ(RunStep(*set),
            (std::map<std::string, int>{{"10.0.0.1:50052", 2}, {"10.0.0.2:50052", 2}}));

  // Scaled between tests: the next step of the same test still runs on the same two...
  answer_ = std::vector<std::string>{"10.0.0.2", "10.0.0.3", "fd00::3"};
  EXPECT_EQ(RunStep(*set).size(), 2u);
  EXPECT_EQ(resolutions_, 1);
  // ...and the next test on the new three.
  ASSERT_TRUE(set->BeginTest().ok());
  EXPECT_EQ(resolutions_, 2);
  EXPECT_THAT(set->addresses(), ElementsAre("10.0.0.2:50052", "10.0.0.3:50052", "[fd00::3]:50052"));
  EXPECT_EQ(RunStep(*set),
            (std::map<std::string, int>{
                {"10.0.0.2:50052", 3}, {"10.0.0.3:50052", 3}, {"[fd00::3]:50052", 3}}));
}

TEST_F(ReplayerSetTest, KeepsTheChannelsOfAddressesStillThereAndDropsTheOthers) {
  std::unique_ptr<ReplayerSet> set = DnsSet();
  answer_ = std::vector<std::string>{"10.0.0.1", "10.0.0.2"};
  ASSERT_TRUE(set->BeginTest().ok());
  answer_ = std::vector<std::string>{"10.0.0.2", "10.0.0.3"};
  ASSERT_TRUE(set->BeginTest().ok());
  ASSERT_TRUE(set->BeginTest().ok());

  EXPECT_EQ(connects_, (std::map<std::string, int>{
                           {"10.0.0.1:50052", 1}, {"10.0.0.2:50052", 1}, {"10.0.0.3:50052", 1}}));
  EXPECT_THAT(gone_, ElementsAre("10.0.0.1:50052"));
}

TEST_F(ReplayerSetTest, ANameResolvingToNothingFailsNamingItAndRunsNoStep) {
  std::unique_ptr<ReplayerSet> set = DnsSet();
  answer_ = std::vector<std::string>{"10.0.0.1"};
  ASSERT_TRUE(set->BeginTest().ok());
  FakeReplayer* before = live_["10.0.0.1:50052"];

  answer_ = std::vector<std::string>{};
  absl::Status empty = set->BeginTest();
  EXPECT_EQ(empty.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(empty.message()), HasSubstr("--replayer=dns:replayers.test:50052"));
  EXPECT_THAT(std::string(empty.message()), HasSubstr("replayers.test resolves to no address"));
  EXPECT_TRUE(set->addresses().empty());

  // The test's step, if one is asked for anyway, resolves again instead of using the old pool.
  absl::StatusOr<ExecutedStep> step = set->Execute({}, nullptr, nullptr);
  EXPECT_EQ(step.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(before->requests.empty());

  answer_ = absl::UnavailableError("cannot resolve replayers.test: Temporary failure");
  absl::Status down = set->BeginTest();
  EXPECT_EQ(down.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(down.message()),
              HasSubstr("--replayer=dns:replayers.test:50052: cannot resolve replayers.test"));
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
  ASSERT_TRUE((*set)->BeginTest().ok());
  ASSERT_TRUE((*set)->BeginTest().ok());
  EXPECT_THAT((*set)->addresses(), ElementsAre("a:1", "b:2"));
  EXPECT_EQ(RunStep(**set), (std::map<std::string, int>{{"a:1", 2}, {"b:2", 2}}));
  EXPECT_EQ(connects_, (std::map<std::string, int>{{"a:1", 1}, {"b:2", 1}}));
  EXPECT_EQ(resolutions_, 0);
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

TEST(ResolveHostAddressesTest, AnIpLiteralResolvesToItselfWithoutDns) {
  absl::StatusOr<std::vector<std::string>> ips = ResolveHostAddresses("127.0.0.1");
  ASSERT_TRUE(ips.ok()) << ips.status();
  EXPECT_THAT(*ips, ElementsAre("127.0.0.1"));
}

}  // namespace
}  // namespace vanguard::worker
