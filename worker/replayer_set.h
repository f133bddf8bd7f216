// The worker's replayers as --replayer names them: a fixed list of addresses
// (`a:50052,b:50052`), or one DNS name resolved to a pool (`dns:NAME:PORT`, e.g. a Kubernetes
// headless Service, whose name resolves to one address per ready pod). A ReplayerSet is the
// ReplayerClient the test runner drives: every step goes to a ReplayerPool over the current
// members (replayer_pool.h).
//
//   ASSIGN_OR_RETURN(ReplayerSource source,
//                    ParseReplayerFlag("dns:vanguard-replayer.vanguard.svc:50052"));
//   ASSIGN_OR_RETURN(std::unique_ptr<ReplayerSet> replayers,
//                    ReplayerSet::Create(source, GrpcReplayerConnector(creds, source, clock)));
//   // The test runner does this for every test, with TestSpec.replayers and the test's token:
//   ASSIGN_OR_RETURN(TestReplayers ready, replayers->BeginTest(/*wanted_replayers=*/4, &cancel));
//   ASSIGN_OR_RETURN(ExecutedStep step, replayers->Execute(request, &cancel, on_window));
//
// A DNS pool is resolved again at the start of every test (BeginTest), so a pool scaled
// between tests is picked up, and during a test only after a step failed on a replayer that
// could not be reached (UNAVAILABLE, DEADLINE_EXCEEDED): the test runner retries such a step,
// and the retry runs on what the name resolves to then, so a replayer that left the pool (its
// pod deleted) is not tried again. Otherwise every step of a test runs on the same shards.
// A test that wants k replayers (TestSpec.replayers) waits up to pool_wait for the name to
// resolve to k addresses, since an autoscaler that has just scaled the pool up for this test
// has pods not ready yet; when the wait ends short the test runs on those that are, and
// BeginTest says so (TestReplayers.shortfall).
// Each address gets one channel (made by the connector), kept while the name keeps resolving
// to it and dropped when it no longer does. Over TLS the channels check each replayer's
// certificate against NAME (GrpcReplayerConnector), since the addresses are bare IPs.
//
// BeginTest and Execute are called from one thread (the test runner's); their `cancel` may
// fire from any thread, as for ReplayerPool.
#ifndef VANGUARD_WORKER_REPLAYER_SET_H_
#define VANGUARD_WORKER_REPLAYER_SET_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "grpcpp/security/credentials.h"
#include "worker/replayer_pool.h"
#include "worker/step_executor.h"

namespace vanguard::worker {

// What --replayer names: either `addresses` (a fixed list) or `dns_name` and `port`.
struct ReplayerSource {
  std::vector<std::string> addresses;
  std::string dns_name;
  int port = 0;

  bool is_dns() const { return !dns_name.empty(); }
  // As written on the flag: "dns:NAME:PORT" or "a:1,b:2".
  std::string ToString() const;
};

// Parses a --replayer value. INVALID_ARGUMENT (the message starts with "--replayer: ") for: no
// address; an empty entry; an address listed twice (a replayer runs one step at a time and
// would refuse the second shard); `dns:` mixed with other entries; a dns: NAME that is not a
// host name (letters, digits, '-', '.'; gRPC URIs such as dns:///host:port included); a PORT
// that is not 1-65535.
absl::StatusOr<ReplayerSource> ParseReplayerFlag(absl::string_view value);

// Every address `host` resolves to, as IP literals without a port, in resolver order.
// Errors: FAILED_PRECONDITION when the name does not exist or has no address; UNAVAILABLE
// when the resolver cannot answer now (EAI_AGAIN, no DNS server...). Both name `host`.
using HostResolver =
    std::function<absl::StatusOr<std::vector<std::string>>(const std::string& host)>;

// The system resolver (getaddrinfo: A and AAAA records, TCP). Every address is taken as one
// replayer, so a name that also resolves to an address where no replayer listens (localhost:
// 127.0.0.1 and ::1) fails every step on that shard. Blocking; thread-safe.
absl::StatusOr<std::vector<std::string>> ResolveHostAddresses(const std::string& host);

// Makes the client for one replayer address ("10.0.0.5:50052", "[fd00::5]:50052"); never
// null. Called on the thread that calls Create/BeginTest.
using ReplayerConnector =
    std::function<std::unique_ptr<ReplayerClient>(const std::string& address)>;

// One gRPC channel and StepExecutor per address, with `credentials`; for a DNS source the
// TLS host name checked is source.dns_name. `clock` must outlive the clients.
ReplayerConnector GrpcReplayerConnector(std::shared_ptr<grpc::ChannelCredentials> credentials,
                                        const ReplayerSource& source, Clock* clock);

struct ReplayerSetOptions {
  // Null: ResolveHostAddresses.
  HostResolver resolver;
  // One line whenever a DNS pool's membership changes, while waiting for a test's replayers
  // too ("2 of 4 replayers ready"), and when a test runs on fewer than it wants; nullable.
  std::function<void(const std::string&)> log;
  // How long BeginTest waits for a DNS pool to resolve to the test's wanted number of
  // replayers before running the test on fewer; zero: does not wait.
  absl::Duration pool_wait = absl::Seconds(120);
  // How often the name is resolved again while waiting.
  absl::Duration pool_poll = absl::Seconds(3);
  // Times and sleeps the wait; null: Clock::Real(). Must outlive the set.
  Clock* clock = nullptr;
  ReplayerPoolOptions pool;
};

class ReplayerSet : public ReplayerClient {
 public:
  // A fixed list is connected at once; a DNS source is resolved by the first BeginTest (or
  // Execute). INVALID_ARGUMENT when `source` names neither or both, `connector` is null,
  // pool_wait is negative or pool_poll not positive.
  static absl::StatusOr<std::unique_ptr<ReplayerSet>> Create(ReplayerSource source,
                                                             ReplayerConnector connector,
                                                             ReplayerSetOptions options = {});

  // A DNS source: resolves the name again, keeps the clients of addresses still there,
  // connects new ones and drops the rest; the members are the addresses sorted. With
  // `wanted_replayers` > 0 and a nonzero pool_wait, blocks, resolving again every pool_poll
  // (sleeping on `clock`), until the name resolves to that many addresses or pool_wait has
  // passed (a failed resolution counts as none ready and is retried); the last resolution is what
  // the test runs on, and `shortfall` says so when it has fewer. A fixed list: nothing to resolve;
  // `shortfall` when it is shorter than `wanted_replayers`. Errors (the set then has no members
  // until a BeginTest succeeds, so no step runs on a stale pool): the last resolution's
  // FAILED_PRECONDITION or UNAVAILABLE, FAILED_PRECONDITION when it returned no address
  // (each message names "dns:NAME:PORT"), and CANCELLED when `cancel` (nullable) fired
  // during the wait.
  absl::StatusOr<TestReplayers> BeginTest(int wanted_replayers, CancellationToken* cancel) override;

  // Runs the step over the current members (ReplayerPool::Execute, its errors). A DNS set
  // that has no members resolves first (BeginTest without waiting, its errors); after a step
  // that failed UNAVAILABLE or DEADLINE_EXCEEDED it resolves again (ResolveAfterFailedStep)
  // and returns the step's error.
  absl::StatusOr<ExecutedStep> Execute(const vanguard::v1::RunStepRequest& request,
                                       CancellationToken* cancel,
                                       const WindowCallback& on_window) override;

  // The current members' addresses, sorted for a DNS source, as listed otherwise.
  std::vector<std::string> addresses() const;
  const ReplayerSource& source() const { return source_; }

 private:
  ReplayerSet(ReplayerSource source, ReplayerConnector connector, ReplayerSetOptions options);
  // The name's addresses with the port, sorted and distinct; errors as BeginTest's.
  absl::StatusOr<std::vector<std::string>> Resolve() const;
  void Log(const std::string& line) const;
  // After a step failed with `failure` on an unreachable replayer: the members become what the
  // name resolves to now (logged when they change); a failed or empty resolution keeps them.
  void ResolveAfterFailedStep(const absl::Status& failure);
  // Makes the pool over `addresses`, connecting those without a client and dropping clients
  // of addresses not among them.
  void UseMembers(const std::vector<std::string>& addresses);

  const ReplayerSource source_;
  const ReplayerConnector connector_;
  const ReplayerSetOptions options_;
  std::map<std::string, std::unique_ptr<ReplayerClient>> clients_;  // by address
  std::vector<std::string> members_;
  std::optional<ReplayerPool> pool_;  // unset: no members (a DNS set before/after a failure)
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_REPLAYER_SET_H_
