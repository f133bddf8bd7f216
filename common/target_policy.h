// TargetPolicy: the operator's allow-list of where load, scrapes and controller fetches may
// go (`--allowed_targets`). The process that makes a connection checks it after name
// resolution, on the address it is about to connect to; the orchestrator checks the names
// it is given at registration and submission, so a mistake is refused before it is queued.
//
//   ASSIGN_OR_RETURN(TargetPolicy policy,
//                    TargetPolicy::Parse("127.0.0.0/8,10.0.0.0/8,*.svc.cluster.local:8000-9000"));
//   RETURN_IF_ERROR(policy.AllowsResolved("pred.ns.svc.cluster.local", "10.1.2.3", 8000));
//
// The list is comma-separated; each rule is one of
//   an IPv4 CIDR or address    10.0.0.0/8, 127.0.0.1, 10.0.0.0/8:8000, 10.1.2.3:80-90
//   an IPv6 CIDR or address    fd00::/8, ::1 (no port), [fd00::/8]:8000, [::1]:8000-9000
//   a host name                predictor.default, predictor.default:8000
//   a host pattern             *.svc.cluster.local (one or more labels, then the suffix)
// with an optional port or inclusive port range (no port: any port). Names compare without
// case and without a trailing dot. An address rule admits the addresses a name resolves to;
// a name rule admits the name whatever it resolves to (the operator trusts that DNS zone),
// except for the addresses that are never allowed.
//
// Never allowed, whatever the list says: link-local addresses (169.254.0.0/16, fe80::/10,
// which hold the cloud metadata services 169.254.169.254 and fd00:ec2::254 among others),
// fd00:ec2::254 itself, and the names metadata.google.internal and metadata. IPv4 addresses
// mapped into IPv6 (::ffff:a.b.c.d, 64:ff9b::a.b.c.d) are checked as the IPv4 address.
//
// Default (Default(), what a binary uses when the operator gives no list): loopback only,
// 127.0.0.0/8 and ::1 on any port — what local runs and tests use. An operator opens private
// ranges or cluster names by listing them; "0.0.0.0/0,::/0" allows every address but the
// never-allowed ones.
//
// Errors are PERMISSION_DENIED naming the target (host:port, and the address when it differs
// from the host) and the rule that refused it; never a URL's path, query or credentials.
// Parse returns INVALID_ARGUMENT naming the rule it cannot read. Immutable once built:
// any thread may call the const methods concurrently.
#ifndef VANGUARD_COMMON_TARGET_POLICY_H_
#define VANGUARD_COMMON_TARGET_POLICY_H_

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vanguard {

// An IPv4 or IPv6 address in network byte order (IPv4 in the first 4 bytes).
struct IpAddress {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};

  // A literal address: dotted IPv4 (also the legacy forms getaddrinfo accepts, such as
  // "2130706433" or "0x7f.1", so a name that is really an address is judged as one) or
  // IPv6 without brackets. nullopt for anything else.
  static std::optional<IpAddress> Parse(std::string_view text);
  // From a resolved socket address (AF_INET or AF_INET6); nullopt for another family.
  static std::optional<IpAddress> FromSockaddr(const sockaddr* address, socklen_t length);

  // The IPv4 address an IPv4-mapped (::ffff:0:0/96) or NAT64 (64:ff9b::/96) IPv6 address
  // carries; the address itself otherwise.
  IpAddress Unmapped() const;
  std::string ToString() const;
};

class TargetPolicy {
 public:
  // The rules of `spec` (see above). An empty spec is INVALID_ARGUMENT: a binary without a
  // list uses Default(), and an empty list that refused everything would be a typo's trap.
  static absl::StatusOr<TargetPolicy> Parse(std::string_view spec);
  // Loopback only: 127.0.0.0/8 and ::1, any port.
  static TargetPolicy Default();
  // `spec` when it is not empty, else Default(): what a binary's --allowed_targets means.
  // Unlike Parse, also INVALID_ARGUMENT for a rule that names only never-allowed targets
  // (169.254.169.254/32, 169.254.0.0/16, fe80::/10, [fd00:ec2::254], metadata), so an
  // operator's mistake stops the binary at start; a wider rule (0.0.0.0/0) is accepted and
  // its never-allowed part refused at check time. Parse is the grammar alone: a policy it
  // builds may list such rules, and the checks below still refuse them.
  static absl::StatusOr<TargetPolicy> FromFlag(std::string_view spec);

  // Without resolving (the orchestrator's check at registration): OK when a name rule
  // matches `host`, or `host` is an address literal an address rule admits; a name passes
  // only through a name rule (what it will resolve to is unknown here). PERMISSION_DENIED
  // otherwise, and always for a never-allowed target.
  absl::Status Allows(std::string_view host, int port) const;

  // Before a connect-time lookup: PERMISSION_DENIED for a never-allowed name or an address
  // literal the policy refuses, so neither is looked up; OK for any other name (its
  // addresses decide, through AllowsResolved).
  absl::Status MayResolve(std::string_view host, int port) const;

  // An address about to be connected to (`ip` a literal, see IpAddress::Parse).
  // PERMISSION_DENIED unless an address rule admits it and it is not never-allowed.
  absl::Status AllowsAddress(std::string_view ip, int port) const;
  absl::Status AllowsAddress(const IpAddress& ip, int port) const;

  // The connect-time check: `host` (as the user wrote it) resolved to `ip`. OK when
  // neither is never-allowed and a name rule matches `host` or an address rule admits
  // `ip`. PERMISSION_DENIED otherwise.
  absl::Status AllowsResolved(std::string_view host, const IpAddress& ip, int port) const;
  absl::Status AllowsResolved(std::string_view host, std::string_view ip, int port) const;

  // The rules as the operator would write them ("127.0.0.0/8,[::1]"), for logs and errors.
  std::string ToString() const;
  bool is_default() const { return is_default_; }

 private:
  struct Rule {
    enum class Kind { kNetwork, kName, kNameSuffix };
    Kind kind = Kind::kNetwork;
    IpAddress network;    // kNetwork
    int prefix_bits = 0;  // kNetwork
    std::string name;     // kName: the name; kNameSuffix: ".suffix"
    int port_min = 1;
    int port_max = 65535;
    std::string text;  // as written, for errors
  };

  static absl::StatusOr<Rule> ParseRule(std::string_view text);
  // The two kinds of rule after SplitRule: into *r, or INVALID_ARGUMENT naming `rule`.
  static absl::Status ParseNetwork(std::string_view rule, std::string_view address, bool v6,
                                   Rule* r);
  static absl::Status ParseName(std::string_view rule, std::string_view name, Rule* r);
  // INVALID_ARGUMENT when every target `r` admits is never allowed.
  static absl::Status RefuseNeverAllowedRule(const Rule& r);
  bool NameRuleMatches(std::string_view normalized_host, int port) const;
  bool AddressRuleMatches(const IpAddress& ip, int port) const;
  absl::Status NotAllowed(std::string_view host, const IpAddress* ip, int port) const;

  std::vector<Rule> rules_;
  bool is_default_ = false;
};

}  // namespace vanguard

#endif  // VANGUARD_COMMON_TARGET_POLICY_H_
