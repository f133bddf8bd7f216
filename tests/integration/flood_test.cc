// A flood against the real orchestrator binary on a real PostgreSQL ($VANGUARD_TEST_PG):
// WatchTest streams opened well past --max_watch_streams and --max_watch_streams_per_token,
// and thousands of calls with unknown, repeated and malformed bearer tokens, while a worker
// token heartbeats the test it leased every second under a 3 s lease. The worker's
// heartbeats all succeed and its lease (attempt, holder) is unchanged, so it completes the
// test afterwards; the floods are refused (RESOURCE_EXHAUSTED, UNAUTHENTICATED, UNAVAILABLE
// once the lookup budget is spent) and the orchestrator serves as before once they stop.
// docs/security.md ("What one caller can cost the orchestrator") lists the caps.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "database_test_base.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/integration/watch_stream.h"
#include "tests/testing/health_check.h"
#include "tests/testing/subprocess.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace vanguard {
namespace {

using ::vanguard::testing::Subprocess;
using Stub = v1::Orchestrator::Stub;

constexpr char kAdmin[] = "flood-test-admin-secret";
constexpr char kWorkerId[] = "flood-worker";
// Small caps, so that the flood passes them many times over.
constexpr int kMaxWatchStreams = 8;
constexpr int kMaxWatchStreamsPerToken = 3;
constexpr int kReaderTokens = 4;  // 4 x 3 > 8: the replica's cap bites, not only the token's
constexpr double kLookupsPerSecond = 20;
constexpr double kLookupBurst = 20;
// The worker's lease and beat: a third of the lease, as the real worker (worker/lease_keeper).
constexpr absl::Duration kLease = absl::Seconds(3);
constexpr absl::Duration kBeatEvery = absl::Seconds(1);
// How long the flood lasts: several leases, so a starved heartbeat would lose the lease.
constexpr absl::Duration kFlood = absl::Seconds(8);
constexpr int kWatchThreads = 3;
constexpr int kBadTokenThreads = 3;
// Deadline of every call: generous, so a slow machine does not fail the test; a heartbeat
// answered after its lease ran out would show as the lease lost, which the test checks.
constexpr absl::Duration kCallDeadline = absl::Seconds(20);

std::unique_ptr<grpc::ClientContext> Context(const std::string& authorization,
                                             absl::Duration deadline = kCallDeadline) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  if (!authorization.empty()) ctx->AddMetadata("authorization", authorization);
  return ctx;
}

std::string Bearer(const std::string& secret) { return "Bearer " + secret; }

// A channel with a connection of its own (gRPC shares one between channels with the same
// target and arguments): the worker and each flooding thread are separate clients.
std::unique_ptr<Stub> OwnConnection(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return v1::Orchestrator::NewStub(
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
}

Watch OpenWatch(Stub& stub, const std::string& authorization, int64_t test_id) {
  v1::WatchTestRequest request;
  request.set_id(test_id);
  request.set_progress(true);  // one more database read per poll
  // The deadline outlives the flood, even slowed.
  return ::vanguard::OpenWatch(stub, Context(authorization, absl::Seconds(60)), request);
}

// Cancels an admitted stream; its status (CANCELLED when it was still open).
grpc::StatusCode EndWatch(Watch& w) {
  w.context->TryCancel();
  v1::WatchTestResponse update;
  while (w.reader->Read(&update)) {
  }
  return w.reader->Finish().error_code();
}

// What the WatchTest flood saw. Admitted streams are held open until the flood ends.
struct WatchFlood {
  std::mutex mu;
  std::vector<Watch> held;                // guarded by mu
  std::map<std::string, int> admitted;    // by token; guarded by mu
  std::atomic<int> refused_per_token{0};  // RESOURCE_EXHAUSTED naming the per-token cap
  std::atomic<int> refused_replica{0};    // RESOURCE_EXHAUSTED naming the replica's cap
  std::atomic<int> unexpected{0};
  std::mutex unexpected_mu;
  std::string first_unexpected;  // guarded by unexpected_mu

  void Record(Watch w, const std::string& secret) {
    if (w.reader != nullptr) {
      std::lock_guard<std::mutex> lock(mu);
      ++admitted[secret];
      held.push_back(std::move(w));
      return;
    }
    const std::string& message = w.refused.error_message();
    if (w.refused.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
        absl::StrContains(
            message, absl::StrCat("--max_watch_streams_per_token=", kMaxWatchStreamsPerToken))) {
      ++refused_per_token;
    } else if (w.refused.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
               absl::StrContains(message, absl::StrCat("--max_watch_streams=", kMaxWatchStreams))) {
      ++refused_replica;
    } else {
      ++unexpected;
      std::lock_guard<std::mutex> lock(unexpected_mu);
      if (first_unexpected.empty()) {
        first_unexpected = absl::StrCat(w.refused.error_code(), " ", message);
      }
    }
  }
};

// What the bad-token flood saw.
struct BadTokenFlood {
  std::atomic<int> calls{0};
  std::atomic<int> unauthenticated{0};
  std::atomic<int> over_budget{0};              // UNAVAILABLE: the lookup budget was spent
  std::atomic<int> fresh_secrets_looked_up{0};  // UNAUTHENTICATED answers to new secrets
  std::atomic<int> unexpected{0};
  std::mutex unexpected_mu;
  std::string first_unexpected;  // guarded by unexpected_mu

  // Counts one answer to a bad token; `fresh_secret`: a secret never sent before.
  void Record(const grpc::Status& status, bool fresh_secret) {
    ++calls;
    if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      ++unauthenticated;
      if (fresh_secret) ++fresh_secrets_looked_up;
    } else if (status.error_code() == grpc::StatusCode::UNAVAILABLE &&
               absl::StrContains(status.error_message(), "too many lookups")) {
      ++over_budget;
    } else {
      ++unexpected;
      std::lock_guard<std::mutex> lock(unexpected_mu);
      if (first_unexpected.empty()) {
        first_unexpected = absl::StrCat(status.error_code(), " ", status.error_message());
      }
    }
  }
};

class FloodTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    StartOrchestrator();
    if (HasFatalFailure()) return;
    CreateTokensAndATest();
  }

  // The binary with small caps; leases are reaped every second and never given a grace.
  void StartOrchestrator() {
    auto orch = Subprocess::StartServer(
        "vanguard-orchestrator",
        {"--listen=127.0.0.1:0", "--database_url=" + db_->conninfo(), "--reaper_interval=1s",
         "--reaper_outage_grace=0s", "--db_pool_size=4",
         absl::StrCat("--max_watch_streams=", kMaxWatchStreams),
         absl::StrCat("--max_watch_streams_per_token=", kMaxWatchStreamsPerToken),
         absl::StrCat("--auth_unknown_lookups_per_second=", kLookupsPerSecond),
         absl::StrCat("--auth_unknown_lookup_burst=", kLookupBurst),
         // Shorter than a beat: every heartbeat checks its token again, during the flood.
         "--auth_cache_ttl=500ms"},
        {absl::StrCat("VANGUARD_BOOTSTRAP_ADMIN_TOKEN=", kAdmin)});
    ASSERT_TRUE(orch.ok()) << orch.status();
    orch_ = *std::move(orch);
    admin_ = OwnConnection(orch_->address());
  }

  std::string CreateToken(const std::string& name, v1::Role role) {
    v1::CreateTokenRequest create;
    create.set_name(name);
    create.set_role(role);
    v1::CreateTokenResponse created;
    grpc::Status status = admin_->CreateToken(Context(Bearer(kAdmin)).get(), create, &created);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return created.secret();
  }

  // A worker token and reader tokens, each used once so the replica knows them as valid
  // before the flood spends the lookup budget; a model and a test the worker leases.
  void CreateTokensAndATest() {
    worker_secret_ = CreateToken("flood-worker", v1::ROLE_WORKER);
    for (int i = 0; i < kReaderTokens; ++i) {
      reader_secrets_.push_back(CreateToken(absl::StrCat("flood-reader-", i), v1::ROLE_READER));
    }
    v1::RegisterModelRequest reg;
    *reg.mutable_model() = ValidModel();
    v1::RegisterModelResponse registered;
    grpc::Status status = admin_->RegisterModel(Context(Bearer(kAdmin)).get(), reg, &registered);
    ASSERT_TRUE(status.ok()) << status.error_message();
    v1::SubmitTestRequest submit;
    *submit.mutable_spec() = ValidSpec();
    v1::SubmitTestResponse submitted;
    status = admin_->SubmitTest(Context(Bearer(kAdmin)).get(), submit, &submitted);
    ASSERT_TRUE(status.ok()) << status.error_message();
    for (const std::string& reader : reader_secrets_) {
      v1::GetTestRequest get;
      get.set_id(submitted.test().id());
      v1::GetTestResponse got;
      status = admin_->GetTest(Context(Bearer(reader)).get(), get, &got);
      ASSERT_TRUE(status.ok()) << status.error_message();
    }
  }

  // The worker's side: leases the test with a kLease lease.
  void Lease() {
    worker_ = OwnConnection(orch_->address());
    v1::LeaseTestRequest lease;
    lease.set_worker_id(kWorkerId);
    *lease.mutable_lease_duration() = ToDuration(kLease);
    grpc::Status status =
        worker_->LeaseTest(Context(Bearer(worker_secret_)).get(), lease, &leased_);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_TRUE(leased_.has_test());
  }

  static google::protobuf::Duration ToDuration(absl::Duration d) {
    google::protobuf::Duration out;
    out.set_seconds(absl::ToInt64Seconds(d));
    return out;
  }

  grpc::Status Heartbeat() {
    v1::HeartbeatRequest beat;
    beat.set_test_id(leased_.test().id());
    beat.set_attempt(leased_.attempt());
    beat.set_worker_id(kWorkerId);
    *beat.mutable_lease_duration() = ToDuration(kLease);
    v1::HeartbeatResponse response;
    return worker_->Heartbeat(Context(Bearer(worker_secret_)).get(), beat, &response);
  }

  // One thread of the WatchTest flood until `end`: streams opened with the reader tokens in
  // turn, each admitted one held open.
  void FloodWatches(int thread, absl::Time end, WatchFlood* flood) {
    std::unique_ptr<Stub> stub = OwnConnection(orch_->address());
    for (int i = thread; absl::Now() < end; ++i) {
      const std::string& secret = reader_secrets_[i % kReaderTokens];
      flood->Record(OpenWatch(*stub, Bearer(secret), leased_.test().id()), secret);
    }
  }

  // One thread of the bad-token flood until `end`: heartbeats of the leased test and watches
  // of it with a new random secret each time, one bad secret over and over, a malformed
  // header and none at all.
  void FloodBadTokens(int thread, absl::Time end, BadTokenFlood* flood) {
    std::unique_ptr<Stub> stub = OwnConnection(orch_->address());
    v1::HeartbeatRequest beat;
    beat.set_test_id(leased_.test().id());
    beat.set_attempt(leased_.attempt());
    beat.set_worker_id(kWorkerId);  // anyone can read it; it must not help
    *beat.mutable_lease_duration() = ToDuration(kLease);
    for (int i = 0; absl::Now() < end; ++i) {
      std::string authorization;
      bool fresh = false;
      switch (i % 5) {
        case 0:
        case 1:
        case 2:
          authorization =
              Bearer(absl::StrCat("flood-", thread, "-", i, "-", absl::ToUnixNanos(absl::Now())));
          fresh = true;
          break;
        case 3:
          authorization = Bearer("the-same-bad-secret");
          break;
        case 4:
          authorization = i % 2 == 0 ? "Basic Zmxvb2Q6Zmxvb2Q=" : "";
          break;
      }
      if (i % 7 == 0) {  // some as WatchTest: refused before any stream slot is taken
        Watch w = OpenWatch(*stub, authorization, leased_.test().id());
        if (w.reader != nullptr) {
          flood->Record(grpc::Status::OK, fresh);
          EndWatch(w);
        } else {
          flood->Record(w.refused, fresh);
        }
        continue;
      }
      v1::HeartbeatResponse response;
      flood->Record(stub->Heartbeat(Context(authorization).get(), beat, &response), fresh);
    }
  }

  std::unique_ptr<Subprocess> orch_;
  std::unique_ptr<Stub> admin_;
  std::unique_ptr<Stub> worker_;
  std::string worker_secret_;
  std::vector<std::string> reader_secrets_;
  v1::LeaseTestResponse leased_;
};

TEST_F(FloodTest, HeartbeatsKeepTheirLeaseThroughAFloodOfWatchStreamsAndBadTokens) {
  ASSERT_NO_FATAL_FAILURE(Lease());
  ASSERT_TRUE(Heartbeat().ok());

  // One greedy token first: its streams past the per-token cap are refused while the
  // replica still has room. Then the flood, all tokens at once, from several threads.
  WatchFlood watches;
  const std::string& greedy = reader_secrets_[0];
  for (int i = 0; i < kMaxWatchStreamsPerToken + 5; ++i) {
    watches.Record(OpenWatch(*admin_, Bearer(greedy), leased_.test().id()), greedy);
  }
  EXPECT_EQ(watches.refused_per_token.load(), 5) << watches.first_unexpected;

  BadTokenFlood bad;
  const absl::Time flood_start = absl::Now();
  const absl::Time flood_end = flood_start + kFlood;
  std::vector<std::thread> threads;
  for (int t = 0; t < kWatchThreads; ++t) {
    threads.emplace_back([&, t] { FloodWatches(t, flood_end, &watches); });
  }
  for (int t = 0; t < kBadTokenThreads; ++t) {
    threads.emplace_back([&, t] { FloodBadTokens(t, flood_end, &bad); });
  }

  // The worker beats every second through the flood and for two beats after it.
  std::vector<grpc::Status> beats;
  for (absl::Time next = flood_start; next < flood_end + 2 * kBeatEvery; next += kBeatEvery) {
    absl::SleepFor(next - absl::Now());
    beats.push_back(Heartbeat());
  }
  for (std::thread& t : threads) t.join();
  const absl::Duration bad_token_span = absl::Now() - flood_start;

  std::cout << "flood: " << beats.size() << " heartbeats; WatchTest: " << watches.held.size()
            << " admitted, " << watches.refused_per_token.load()
            << " refused by the per-token cap, " << watches.refused_replica.load()
            << " by the replica's cap; bad tokens: " << bad.calls.load() << " calls, "
            << bad.unauthenticated.load() << " UNAUTHENTICATED ("
            << bad.fresh_secrets_looked_up.load() << " new secrets looked up), "
            << bad.over_budget.load() << " UNAVAILABLE over the lookup budget" << std::endl;

  // Every heartbeat kept the lease.
  for (size_t i = 0; i < beats.size(); ++i) {
    EXPECT_TRUE(beats[i].ok()) << "heartbeat " << i << ": " << beats[i].error_code() << " "
                               << beats[i].error_message();
  }
  EXPECT_GE(beats.size(), static_cast<size_t>(kFlood / kBeatEvery));

  // The caps bit: never more streams than the replica's cap, nor per token; the rest refused.
  EXPECT_EQ(watches.unexpected.load(), 0) << watches.first_unexpected;
  EXPECT_EQ(watches.held.size(), static_cast<size_t>(kMaxWatchStreams));
  for (const auto& [secret, admitted] : watches.admitted) {
    EXPECT_LE(admitted, kMaxWatchStreamsPerToken);
  }
  EXPECT_GT(watches.refused_replica.load(), 0);
  // Every held stream was still open (none ended and gave its place to another).
  for (Watch& w : watches.held) EXPECT_EQ(EndWatch(w), grpc::StatusCode::CANCELLED);

  // No bad token got through; the lookup budget bounded what the new secrets cost the
  // database (at most the burst plus the rate over the flood) and refused the rest.
  EXPECT_EQ(bad.unexpected.load(), 0) << bad.first_unexpected;
  EXPECT_GT(bad.unauthenticated.load(), 0);
  EXPECT_GT(bad.over_budget.load(), 0);
  EXPECT_LE(bad.fresh_secrets_looked_up.load(),
            kLookupBurst + kLookupsPerSecond * absl::ToDoubleSeconds(bad_token_span) + 1);

  // The lease is the one the worker took: same attempt and holder, never requeued.
  v1::GetTestRequest get;
  get.set_id(leased_.test().id());
  v1::GetTestResponse got;
  ASSERT_TRUE(admin_->GetTest(Context(Bearer(kAdmin)).get(), get, &got).ok());
  EXPECT_EQ(got.test().state(), v1::TEST_STATE_RUNNING);
  EXPECT_EQ(got.test().attempt(), leased_.attempt());
  EXPECT_EQ(got.test().lease_owner(), kWorkerId);
  EXPECT_TRUE(got.test().requeue_reason().empty()) << got.test().requeue_reason();

  // The orchestrator serves as before: healthy, and a watch is admitted again once the
  // flood's streams have given their places back (at their next poll).
  std::string health;
  auto channel = grpc::CreateChannel(orch_->address(), grpc::InsecureChannelCredentials());
  ASSERT_TRUE(testing::HealthCheck(channel, "", &health).ok());
  EXPECT_EQ(health, std::string("\x08\x01", 2));  // SERVING
  Watch after = OpenWatch(*admin_, Bearer(greedy), leased_.test().id());
  for (int i = 0; i < 100 && after.reader == nullptr; ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    after = OpenWatch(*admin_, Bearer(greedy), leased_.test().id());
  }
  ASSERT_NE(after.reader, nullptr) << after.refused.error_message();

  // The holder completes the test, and the watcher sees it succeed.
  v1::CompleteTestRequest complete;
  complete.set_test_id(leased_.test().id());
  complete.set_attempt(leased_.attempt());
  complete.mutable_result()->set_max_sustainable_qps(100);
  v1::CompleteTestResponse done;
  grpc::Status status =
      worker_->CompleteTest(Context(Bearer(worker_secret_)).get(), complete, &done);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(done.test().state(), v1::TEST_STATE_SUCCEEDED);
  v1::WatchTestResponse update;
  v1::TestState last = v1::TEST_STATE_UNSPECIFIED;
  while (after.reader->Read(&update)) last = update.test().state();
  EXPECT_TRUE(after.reader->Finish().ok());
  EXPECT_EQ(last, v1::TEST_STATE_SUCCEEDED);
  EXPECT_TRUE(orch_->Running()) << orch_->Stderr();
}

}  // namespace
}  // namespace vanguard
