#include "worker/replayer_set.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/support/channel_arguments.h"
#include "vanguard/v1/replayer.grpc.pb.h"

namespace vanguard::worker {
namespace {

constexpr absl::string_view kDnsPrefix = "dns:";
// How promptly a wait for the pool notices that the test was cancelled.
constexpr absl::Duration kCancelCheck = absl::Milliseconds(100);

absl::Status FlagError(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("--replayer: ", what));
}

bool IsHostName(absl::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
  });
}

// "dns:NAME:PORT" without its prefix.
absl::StatusOr<ReplayerSource> ParseDnsSource(absl::string_view rest) {
  const size_t colon = rest.rfind(':');
  const absl::string_view name = colon == absl::string_view::npos ? rest : rest.substr(0, colon);
  if (colon == absl::string_view::npos || !IsHostName(name)) {
    return FlagError(absl::StrCat("dns:", rest,
                                  " is not dns:NAME:PORT with NAME a host name (letters, digits, "
                                  "'-', '.'), e.g. dns:vanguard-replayer.vanguard.svc:50052"));
  }
  ReplayerSource source;
  source.dns_name = std::string(name);
  if (!absl::SimpleAtoi(rest.substr(colon + 1), &source.port) || source.port < 1 ||
      source.port > 65535) {
    return FlagError(absl::StrCat("dns:", rest, ": the port must be a number from 1 to 65535"));
  }
  return source;
}

// "10.0.0.5" -> "10.0.0.5:50052", "fd00::5" -> "[fd00::5]:50052".
std::string WithPort(const std::string& ip, int port) {
  return absl::StrContains(ip, ':') ? absl::StrCat("[", ip, "]:", port)
                                    : absl::StrCat(ip, ":", port);
}

// A StepExecutor that owns its channel's stub.
class GrpcReplayer : public ReplayerClient {
 public:
  GrpcReplayer(std::unique_ptr<vanguard::v1::Replayer::Stub> stub, Clock* clock)
      : stub_(std::move(stub)), executor_(stub_.get(), clock) {}

  absl::StatusOr<ExecutedStep> Execute(const vanguard::v1::RunStepRequest& request,
                                       CancellationToken* cancel,
                                       const WindowCallback& on_window) override {
    return executor_.Execute(request, cancel, on_window);
  }

 private:
  const std::unique_ptr<vanguard::v1::Replayer::Stub> stub_;
  StepExecutor executor_;
};

}  // namespace

std::string ReplayerSource::ToString() const {
  return is_dns() ? absl::StrCat(kDnsPrefix, dns_name, ":", port) : absl::StrJoin(addresses, ",");
}

absl::StatusOr<ReplayerSource> ParseReplayerFlag(absl::string_view value) {
  const std::vector<absl::string_view> entries = absl::StrSplit(value, ',');
  std::vector<std::string> addresses;
  for (absl::string_view entry : entries) {
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) {
      return FlagError(absl::StrCat("\"", value,
                                    "\" has an empty entry: give host:port addresses separated "
                                    "by commas, or one dns:NAME:PORT"));
    }
    if (absl::StartsWithIgnoreCase(entry, kDnsPrefix) && entries.size() > 1) {
      return FlagError(absl::StrCat(entry,
                                    " names a whole pool; it cannot be mixed with other "
                                    "replayers in a list (give either dns:NAME:PORT alone or "
                                    "host:port addresses)"));
    }
    if (absl::StartsWithIgnoreCase(entry, kDnsPrefix)) {
      return ParseDnsSource(entry.substr(kDnsPrefix.size()));
    }
    if (std::find(addresses.begin(), addresses.end(), entry) != addresses.end()) {
      return FlagError(absl::StrCat("lists ", entry,
                                    " twice: a replayer runs one step at a time and would "
                                    "refuse the second shard"));
    }
    addresses.emplace_back(entry);
  }
  ReplayerSource source;
  source.addresses = std::move(addresses);
  return source;
}

absl::StatusOr<std::vector<std::string>> ResolveHostAddresses(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc == EAI_NONAME || rc == EAI_NODATA) {
    return absl::FailedPreconditionError(absl::StrCat(host, " resolves to no address"));
  }
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ": ", gai_strerror(rc)));
  }
  std::vector<std::string> ips;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char ip[NI_MAXHOST];
    if (getnameinfo(a->ai_addr, a->ai_addrlen, ip, sizeof(ip), nullptr, 0, NI_NUMERICHOST) == 0) {
      ips.emplace_back(ip);
    }
  }
  freeaddrinfo(found);
  return ips;
}

ReplayerConnector GrpcReplayerConnector(std::shared_ptr<grpc::ChannelCredentials> credentials,
                                        const ReplayerSource& source, Clock* clock) {
  return [credentials = std::move(credentials), tls_name = source.dns_name,
          clock](const std::string& address) -> std::unique_ptr<ReplayerClient> {
    grpc::ChannelArguments args;
    if (!tls_name.empty()) args.SetSslTargetNameOverride(tls_name);
    return std::make_unique<GrpcReplayer>(
        vanguard::v1::Replayer::NewStub(grpc::CreateCustomChannel(address, credentials, args)),
        clock);
  };
}

absl::StatusOr<std::unique_ptr<ReplayerSet>> ReplayerSet::Create(ReplayerSource source,
                                                                 ReplayerConnector connector,
                                                                 ReplayerSetOptions options) {
  if (source.is_dns() == !source.addresses.empty()) {
    return absl::InvalidArgumentError(
        "replayer set: give either addresses or a DNS name, not both or neither");
  }
  if (!connector) return absl::InvalidArgumentError("replayer set: no connector");
  if (options.pool_wait < absl::ZeroDuration() || options.pool_poll <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "replayer set: pool_wait must be >= 0 and pool_poll > 0 (a zero poll would resolve "
        "without pause)");
  }
  if (!options.resolver) options.resolver = ResolveHostAddresses;
  if (options.clock == nullptr) options.clock = Clock::Real();
  std::unique_ptr<ReplayerSet> set(
      new ReplayerSet(std::move(source), std::move(connector), std::move(options)));
  if (!set->source_.is_dns()) set->UseMembers(set->source_.addresses);
  return set;
}

ReplayerSet::ReplayerSet(ReplayerSource source, ReplayerConnector connector,
                         ReplayerSetOptions options)
    : source_(std::move(source)), connector_(std::move(connector)), options_(std::move(options)) {}

absl::StatusOr<TestReplayers> ReplayerSet::BeginTest(int wanted_replayers,
                                                     CancellationToken* cancel) {
  TestReplayers test;
  if (!source_.is_dns()) {
    if (wanted_replayers > static_cast<int>(members_.size())) {
      test.shortfall =
          absl::StrCat("ran on ", members_.size(), " of the ", wanted_replayers,
                       " replayers the test wants: --replayer lists ", members_.size());
      Log(absl::StrCat("replayers ", source_.ToString(), ": ", test.shortfall));
    }
    return test;
  }
  pool_.reset();
  Clock* const clock = options_.clock;
  const std::string name = absl::StrCat("replayer pool ", source_.ToString());
  const bool waits = wanted_replayers > 0 && options_.pool_wait > absl::ZeroDuration();
  const absl::Duration waited_from = clock->Monotonic();
  const absl::Duration deadline = waited_from + options_.pool_wait;
  absl::StatusOr<std::vector<std::string>> addresses = Resolve();
  // One line per membership seen while short (a failed resolution counts as none ready).
  std::optional<std::vector<std::string>> seen;
  auto ready = [&] { return addresses.ok() ? static_cast<int>(addresses->size()) : 0; };
  while (waits && ready() < wanted_replayers) {
    const std::vector<std::string> now = addresses.ok() ? *addresses : std::vector<std::string>();
    const absl::Duration left = deadline - clock->Monotonic();
    if (now != seen) {
      seen = now;
      Log(absl::StrCat(name, ": ", now.size(), " of ", wanted_replayers, " replayers ready",
                       addresses.ok() ? "" : absl::StrCat(" (", addresses.status().message(), ")"),
                       left > absl::ZeroDuration()
                           ? absl::StrCat("; waiting up to ", absl::FormatDuration(left))
                           : ""));
    }
    if (left <= absl::ZeroDuration()) break;
    if (!SleepUnless(clock, std::min(left, options_.pool_poll), kCancelCheck,
                     [cancel] { return cancel != nullptr && cancel->IsCancelled(); })) {
      return absl::CancelledError(absl::StrCat(name, ": cancelled while waiting for ",
                                               wanted_replayers, " replayers (", ready(),
                                               " ready)"));
    }
    addresses = Resolve();
  }
  if (!addresses.ok()) return addresses.status();
  if (seen.has_value() && ready() >= wanted_replayers) {
    Log(absl::StrCat(name, ": ", ready(), " of ", wanted_replayers, " replayers ready after ",
                     absl::FormatDuration(clock->Monotonic() - waited_from)));
  }
  if (*addresses != members_) {
    Log(absl::StrCat(name, ": ", addresses->size(),
                     " replayer(s): ", absl::StrJoin(*addresses, ", ")));
  }
  UseMembers(*addresses);
  if (ready() < wanted_replayers) {
    test.shortfall = absl::StrCat(
        "ran on ", ready(), " of the ", wanted_replayers,
        " replayers the test wants: ", source_.ToString(), " had ", ready(), " ready",
        waits ? absl::StrCat(" after waiting ", absl::FormatDuration(options_.pool_wait))
              : " (no wait for the pool to grow)");
    Log(absl::StrCat(name, ": ", test.shortfall));
  }
  return test;
}

absl::StatusOr<std::vector<std::string>> ReplayerSet::Resolve() const {
  absl::StatusOr<std::vector<std::string>> ips = options_.resolver(source_.dns_name);
  if (!ips.ok()) {
    return absl::Status(ips.status().code(),
                        absl::StrCat("replayer pool --replayer=", source_.ToString(), ": ",
                                     ips.status().message()));
  }
  std::set<std::string> unique;
  for (const std::string& ip : *ips) unique.insert(WithPort(ip, source_.port));
  if (unique.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("replayer pool --replayer=", source_.ToString(), ": ", source_.dns_name,
                     " resolves to no address (no replayer ready?)"));
  }
  return std::vector<std::string>(unique.begin(), unique.end());
}

void ReplayerSet::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

void ReplayerSet::UseMembers(const std::vector<std::string>& addresses) {
  std::map<std::string, std::unique_ptr<ReplayerClient>> kept;
  std::vector<PoolMember> members;
  for (const std::string& address : addresses) {
    auto it = clients_.find(address);
    std::unique_ptr<ReplayerClient> client =
        it != clients_.end() ? std::move(it->second) : connector_(address);
    members.push_back({address, client.get()});
    kept.emplace(address, std::move(client));
  }
  clients_ = std::move(kept);  // drops the clients (channels) of addresses gone
  members_ = addresses;
  pool_.reset();
  pool_.emplace(std::move(members), options_.pool);
}

absl::StatusOr<ExecutedStep> ReplayerSet::Execute(const vanguard::v1::RunStepRequest& request,
                                                  CancellationToken* cancel,
                                                  const WindowCallback& on_window) {
  if (!pool_.has_value()) {
    absl::StatusOr<TestReplayers> resolved = BeginTest(/*wanted_replayers=*/0, nullptr);
    if (!resolved.ok()) return resolved.status();
  }
  absl::StatusOr<ExecutedStep> step = pool_->Execute(request, cancel, on_window);
  if (!step.ok() && source_.is_dns() &&
      (absl::IsUnavailable(step.status()) || absl::IsDeadlineExceeded(step.status()))) {
    ResolveAfterFailedStep(step.status());
  }
  return step;
}

void ReplayerSet::ResolveAfterFailedStep(const absl::Status& failure) {
  const std::string name = absl::StrCat("replayer pool ", source_.ToString());
  absl::StatusOr<std::vector<std::string>> addresses = Resolve();
  if (!addresses.ok()) {  // a resolver out for a moment does not empty a pool mid-test
    Log(absl::StrCat(name, ": a step failed (", failure.message(), "); resolving again failed (",
                     addresses.status().message(), "): the step is retried on the same ",
                     members_.size()));
    return;
  }
  if (*addresses == members_) return;
  Log(absl::StrCat(name, ": a step failed (", failure.message(), "); the name now resolves to ",
                   addresses->size(), " replayer(s): ", absl::StrJoin(*addresses, ", ")));
  UseMembers(*addresses);
}

std::vector<std::string> ReplayerSet::addresses() const {
  return pool_.has_value() ? members_ : std::vector<std::string>();
}

}  // namespace vanguard::worker
