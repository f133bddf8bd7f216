// Target allow-list parsing and matching. See target_policy.h.
#include "common/target_policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace vanguard {
namespace {

constexpr absl::string_view kNeverAllowed =
    "link-local and cloud metadata targets are never allowed (169.254.0.0/16, fe80::/10, "
    "fd00:ec2::254, metadata.google.internal)";
constexpr size_t kMaxNameChars = 253;
constexpr size_t kMaxLabelChars = 63;
// How much of the rule list an error quotes (the operator's list may be long).
constexpr size_t kMaxQuotedRulesChars = 200;

absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Lower case, without brackets around an IPv6 literal and without one trailing dot.
std::string NormalizeHost(std::string_view host) {
  absl::string_view h = Sv(host);
  if (absl::StartsWith(h, "[") && absl::EndsWith(h, "]")) h = h.substr(1, h.size() - 2);
  absl::ConsumeSuffix(&h, ".");
  return absl::AsciiStrToLower(h);
}

// The host as an error may show it: bounded, printable, bracketed when it is IPv6.
std::string QuoteTarget(std::string_view host, int port) {
  std::string shown(host.substr(0, kMaxNameChars));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  if (shown.find(':') != std::string::npos && !absl::StartsWith(shown, "[")) {
    shown = absl::StrCat("[", shown, "]");
  }
  return absl::StrCat(shown, ":", port);
}

bool IsNeverAllowedName(absl::string_view normalized) {
  return normalized == "metadata.google.internal" || normalized == "metadata";
}

bool IsNeverAllowedAddress(const IpAddress& address) {
  const IpAddress ip = address.Unmapped();
  const auto& b = ip.bytes;
  if (!ip.v6) return b[0] == 169 && b[1] == 254;           // 169.254.0.0/16
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return true;  // fe80::/10
  static constexpr std::array<uint8_t, 16> kAwsMetadataV6 = {
      0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54};
  return b == kAwsMetadataV6;
}

// The last address of network/bits: the host bits set.
IpAddress LastInPrefix(const IpAddress& network, int bits) {
  IpAddress last = network;
  const int total = network.v6 ? 128 : 32;
  for (int bit = bits; bit < total; ++bit) last.bytes[bit / 8] |= (0x80 >> (bit % 8));
  return last;
}

bool InPrefix(const IpAddress& ip, const IpAddress& network, int bits) {
  if (ip.v6 != network.v6) return false;
  const int whole = bits / 8;
  if (std::memcmp(ip.bytes.data(), network.bytes.data(), static_cast<size_t>(whole)) != 0) {
    return false;
  }
  const int rest = bits % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (ip.bytes[whole] & mask) == (network.bytes[whole] & mask);
}

bool HasHostBits(const IpAddress& network, int bits) {
  const int total = network.v6 ? 128 : 32;
  for (int bit = bits; bit < total; ++bit) {
    if (network.bytes[bit / 8] & (0x80 >> (bit % 8))) return true;
  }
  return false;
}

absl::Status BadRule(absl::string_view rule, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("rule \"", rule.substr(0, 100), "\": ", why));
}

// "N" or "N-M" into [*min, *max].
bool ParsePorts(absl::string_view text, int* min, int* max) {
  std::pair<absl::string_view, absl::string_view> parts =
      absl::StrSplit(text, absl::MaxSplits('-', 1));
  if (parts.second.empty() && absl::StrContains(text, '-')) return false;
  if (parts.second.empty()) parts.second = parts.first;
  auto port = [](absl::string_view s, int* out) {
    return !s.empty() && s.size() <= 5 &&
           std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(c); }) &&
           absl::SimpleAtoi(s, out) && *out >= 1 && *out <= 65535;
  };
  return port(parts.first, min) && port(parts.second, max) && *min <= *max;
}

// A DNS name: labels of letters, digits, '-' and '_', each 1-63 characters.
bool IsDnsName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxNameChars) return false;
  for (absl::string_view label : absl::StrSplit(name, '.')) {
    if (label.empty() || label.size() > kMaxLabelChars) return false;
    for (char c : label) {
      if (!absl::ascii_isalnum(c) && c != '-' && c != '_') return false;
    }
  }
  return true;
}

// Strict literal parsing for rules (the operator's text): inet_pton, no legacy forms.
std::optional<IpAddress> ParseStrictAddress(absl::string_view text, bool v6) {
  IpAddress ip;
  ip.v6 = v6;
  const std::string s(text);
  if (inet_pton(v6 ? AF_INET6 : AF_INET, s.c_str(), ip.bytes.data()) != 1) return std::nullopt;
  return ip;
}

}  // namespace

std::optional<IpAddress> IpAddress::Parse(std::string_view text) {
  absl::string_view t = Sv(text);
  if (absl::StartsWith(t, "[") && absl::EndsWith(t, "]")) t = t.substr(1, t.size() - 2);
  if (t.empty() || t.size() > 64) return std::nullopt;
  if (absl::StrContains(t, ':')) return ParseStrictAddress(t, /*v6=*/true);
  // inet_aton takes what getaddrinfo takes for IPv4 ("127.1", "0x7f000001", "2130706433").
  const bool numeric = std::all_of(t.begin(), t.end(), [](char c) {
    return absl::ascii_isxdigit(c) || c == '.' || c == 'x' || c == 'X';
  });
  if (!numeric || !absl::ascii_isdigit(t[0])) return std::nullopt;
  in_addr v4{};
  const std::string s(t);
  if (inet_aton(s.c_str(), &v4) == 0) return std::nullopt;
  IpAddress ip;
  std::memcpy(ip.bytes.data(), &v4.s_addr, 4);
  return ip;
}

std::optional<IpAddress> IpAddress::FromSockaddr(const sockaddr* address, socklen_t length) {
  IpAddress ip;
  if (address == nullptr) return std::nullopt;
  if (address->sa_family == AF_INET && length >= sizeof(sockaddr_in)) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    std::memcpy(ip.bytes.data(), &in->sin_addr, 4);
    return ip;
  }
  if (address->sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    ip.v6 = true;
    std::memcpy(ip.bytes.data(), &in6->sin6_addr, 16);
    return ip;
  }
  return std::nullopt;
}

IpAddress IpAddress::Unmapped() const {
  if (!v6) return *this;
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static constexpr uint8_t kNat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::memcmp(bytes.data(), kMapped, 12) != 0 && std::memcmp(bytes.data(), kNat64, 12) != 0) {
    return *this;
  }
  IpAddress v4;
  std::memcpy(v4.bytes.data(), bytes.data() + 12, 4);
  return v4;
}

std::string IpAddress::ToString() const {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), text, sizeof(text));
  return text;
}

namespace {

// Splits "[v6]:ports", "v6", "address:ports" or "name:ports" of `rule` into the address or
// name part and the port part; *v6 when the address part can only be IPv6.
absl::Status SplitRule(absl::string_view rule, absl::string_view* address, absl::string_view* ports,
                       bool* v6) {
  *address = rule;
  *ports = absl::string_view();
  *v6 = false;
  if (absl::StartsWith(rule, "[")) {
    const size_t close = rule.find(']');
    if (close == absl::string_view::npos) return BadRule(rule, "unclosed [");
    *address = rule.substr(1, close - 1);
    absl::string_view rest = rule.substr(close + 1);
    if (!rest.empty() && !absl::ConsumePrefix(&rest, ":")) {
      return BadRule(rule, "expected :port after ]");
    }
    if (rest.empty() && close + 1 < rule.size()) return BadRule(rule, "empty port");
    *ports = rest;
    *v6 = true;
  } else if (std::count(rule.begin(), rule.end(), ':') >= 2) {
    *v6 = true;  // a bare IPv6 address or CIDR: no port (write [addr]:port for one)
  } else if (const size_t colon = rule.find(':'); colon != absl::string_view::npos) {
    *address = rule.substr(0, colon);
    *ports = rule.substr(colon + 1);
    if (ports->empty()) return BadRule(rule, "empty port");
  }
  return absl::OkStatus();
}

// True when `address` (the part before any port) is written as an IPv4 address or CIDR.
bool LooksLikeIpv4(absl::string_view address) {
  return !address.empty() && std::all_of(address.begin(), address.end(), [](char c) {
    return absl::ascii_isdigit(c) || c == '.' || c == '/';
  });
}

}  // namespace

absl::Status TargetPolicy::ParseNetwork(std::string_view rule_text, std::string_view address_text,
                                        bool v6, Rule* r) {
  const absl::string_view rule = Sv(rule_text), address = Sv(address_text);
  std::pair<absl::string_view, absl::string_view> parts =
      absl::StrSplit(address, absl::MaxSplits('/', 1));
  std::optional<IpAddress> network = ParseStrictAddress(parts.first, v6);
  if (!network) {
    return BadRule(rule, v6 ? "not an IPv6 address or CIDR" : "not an IPv4 address or CIDR");
  }
  const int max_bits = v6 ? 128 : 32;
  r->prefix_bits = max_bits;
  if (absl::StrContains(address, '/') &&
      (parts.second.empty() || parts.second.size() > 3 ||
       !std::all_of(parts.second.begin(), parts.second.end(),
                    [](char c) { return absl::ascii_isdigit(c); }) ||
       !absl::SimpleAtoi(parts.second, &r->prefix_bits) || r->prefix_bits > max_bits)) {
    return BadRule(rule, absl::StrCat("the prefix length must be 0 to ", max_bits));
  }
  if (HasHostBits(*network, r->prefix_bits)) {
    return BadRule(rule, "the address has bits set beyond the prefix length");
  }
  r->kind = Rule::Kind::kNetwork;
  r->network = *network;
  return absl::OkStatus();
}

absl::Status TargetPolicy::ParseName(std::string_view rule_text, std::string_view address,
                                     Rule* r) {
  const absl::string_view rule = Sv(rule_text);
  std::string name = NormalizeHost(address);
  if (absl::StartsWith(name, "*.")) {
    r->kind = Rule::Kind::kNameSuffix;
    name.erase(0, 1);  // keep the dot: ".svc.cluster.local"
    if (!IsDnsName(absl::string_view(name).substr(1))) {
      return BadRule(rule, "a host pattern is *. followed by a DNS name");
    }
  } else {
    r->kind = Rule::Kind::kName;
    if (absl::StrContains(name, '*')) {
      return BadRule(rule,
                     "* is allowed only as the first label (*.example.com); to allow every "
                     "address write 0.0.0.0/0,::/0");
    }
    if (!IsDnsName(name)) return BadRule(rule, "not a CIDR, an address or a DNS name");
  }
  r->name = std::move(name);
  return absl::OkStatus();
}

absl::StatusOr<TargetPolicy::Rule> TargetPolicy::ParseRule(std::string_view text) {
  const absl::string_view rule = absl::StripAsciiWhitespace(Sv(text));
  if (rule.empty()) return BadRule(rule, "empty rule (two commas, or a comma at an end)");
  Rule r;
  r.text = std::string(rule);
  absl::string_view address, ports;
  bool v6 = false;
  if (absl::Status s = SplitRule(rule, &address, &ports, &v6); !s.ok()) return s;
  if (!ports.empty() && !ParsePorts(ports, &r.port_min, &r.port_max)) {
    return BadRule(rule, "the port must be N or N-M with 1 <= N <= M <= 65535");
  }
  const std::string_view rule_sv(rule.data(), rule.size());
  const std::string_view address_sv(address.data(), address.size());
  absl::Status parsed = v6 || LooksLikeIpv4(address) || absl::StrContains(address, '/')
                            ? ParseNetwork(rule_sv, address_sv, v6, &r)
                            : ParseName(rule_sv, address_sv, &r);
  if (!parsed.ok()) return parsed;
  return r;
}

absl::StatusOr<TargetPolicy> TargetPolicy::Parse(std::string_view spec) {
  if (absl::StripAsciiWhitespace(Sv(spec)).empty()) {
    return absl::InvalidArgumentError("the list of allowed targets is empty");
  }
  TargetPolicy policy;
  for (absl::string_view text : absl::StrSplit(Sv(spec), ',')) {
    absl::StatusOr<Rule> rule = ParseRule(std::string_view(text.data(), text.size()));
    if (!rule.ok()) return rule.status();
    policy.rules_.push_back(*std::move(rule));
  }
  return policy;
}

TargetPolicy TargetPolicy::Default() {
  absl::StatusOr<TargetPolicy> policy = Parse("127.0.0.0/8,[::1]");
  policy->is_default_ = true;  // the literal above always parses
  return *std::move(policy);
}

absl::StatusOr<TargetPolicy> TargetPolicy::FromFlag(std::string_view spec) {
  if (spec.empty()) return Default();
  absl::StatusOr<TargetPolicy> policy = Parse(spec);
  if (!policy.ok()) return policy.status();
  for (const Rule& r : policy->rules_) {
    if (absl::Status s = RefuseNeverAllowedRule(r); !s.ok()) return s;
  }
  return policy;
}

absl::Status TargetPolicy::RefuseNeverAllowedRule(const Rule& r) {
  bool never = false;
  switch (r.kind) {
    case Rule::Kind::kName:
      never = IsNeverAllowedName(r.name);
      break;
    case Rule::Kind::kNameSuffix:
      break;  // a pattern also names other hosts; its never-allowed ones are refused at check
    case Rule::Kind::kNetwork:
      // The never-allowed ranges are contiguous: the prefix lies inside one when both of
      // its ends do. A wider prefix (0.0.0.0/0) is fine; its never-allowed part is not.
      never = IsNeverAllowedAddress(r.network) &&
              IsNeverAllowedAddress(LastInPrefix(r.network, r.prefix_bits));
      break;
  }
  if (!never) return absl::OkStatus();
  return BadRule(r.text, absl::StrCat(kNeverAllowed,
                                      "; such a rule would be refused at every connect anyway, "
                                      "so it is refused here: remove it"));
}

bool TargetPolicy::NameRuleMatches(std::string_view normalized_host, int port) const {
  const absl::string_view host = Sv(normalized_host);
  for (const Rule& r : rules_) {
    if (port < r.port_min || port > r.port_max) continue;
    if (r.kind == Rule::Kind::kName && host == r.name) return true;
    if (r.kind == Rule::Kind::kNameSuffix && host.size() > r.name.size() &&
        absl::EndsWith(host, r.name)) {
      return true;
    }
  }
  return false;
}

bool TargetPolicy::AddressRuleMatches(const IpAddress& ip, int port) const {
  const IpAddress unmapped = ip.Unmapped();
  for (const Rule& r : rules_) {
    if (r.kind != Rule::Kind::kNetwork || port < r.port_min || port > r.port_max) continue;
    if (InPrefix(ip, r.network, r.prefix_bits) || InPrefix(unmapped, r.network, r.prefix_bits)) {
      return true;
    }
  }
  return false;
}

absl::Status TargetPolicy::NotAllowed(std::string_view host, const IpAddress* ip, int port) const {
  std::string target = QuoteTarget(host, port);
  if (ip != nullptr && IpAddress::Parse(host) == std::nullopt) {
    absl::StrAppend(&target, " (address ", ip->ToString(), ")");
  }
  std::string rules = ToString();
  if (rules.size() > kMaxQuotedRulesChars)
    rules = absl::StrCat(rules.substr(0, kMaxQuotedRulesChars), "...");
  return absl::PermissionDeniedError(
      absl::StrCat("target ", target, " is not in the allowed targets (",
                   is_default_ ? "the default, loopback only: " : "", rules,
                   is_default_ ? "; an operator allows more with --allowed_targets)" : ")"));
}

absl::Status TargetPolicy::Allows(std::string_view host, int port) const {
  const std::string name = NormalizeHost(host);
  if (IsNeverAllowedName(name)) {
    return absl::PermissionDeniedError(
        absl::StrCat("target ", QuoteTarget(host, port), " is refused: ", kNeverAllowed));
  }
  if (std::optional<IpAddress> ip = IpAddress::Parse(name)) {
    if (IsNeverAllowedAddress(*ip)) {
      return absl::PermissionDeniedError(
          absl::StrCat("target ", QuoteTarget(host, port), " is refused: ", kNeverAllowed));
    }
    if (AddressRuleMatches(*ip, port)) return absl::OkStatus();
    return NotAllowed(host, nullptr, port);
  }
  if (NameRuleMatches(name, port)) return absl::OkStatus();
  return NotAllowed(host, nullptr, port);
}

absl::Status TargetPolicy::MayResolve(std::string_view host, int port) const {
  const std::string name = NormalizeHost(host);
  if (IsNeverAllowedName(name) || IpAddress::Parse(name).has_value()) return Allows(host, port);
  return absl::OkStatus();
}

absl::Status TargetPolicy::AllowsAddress(const IpAddress& ip, int port) const {
  return AllowsResolved(ip.ToString(), ip, port);
}

absl::Status TargetPolicy::AllowsAddress(std::string_view ip, int port) const {
  std::optional<IpAddress> address = IpAddress::Parse(ip);
  if (!address) {
    return absl::PermissionDeniedError(
        absl::StrCat("target ", QuoteTarget(ip, port), " is refused: not an IP address"));
  }
  return AllowsAddress(*address, port);
}

absl::Status TargetPolicy::AllowsResolved(std::string_view host, const IpAddress& ip,
                                          int port) const {
  const std::string name = NormalizeHost(host);
  if (IsNeverAllowedName(name) || IsNeverAllowedAddress(ip)) {
    std::string target = QuoteTarget(host, port);
    if (IpAddress::Parse(name) == std::nullopt) {
      absl::StrAppend(&target, " (address ", ip.ToString(), ")");
    }
    return absl::PermissionDeniedError(
        absl::StrCat("target ", target, " is refused: ", kNeverAllowed));
  }
  if (NameRuleMatches(name, port) || AddressRuleMatches(ip, port)) return absl::OkStatus();
  return NotAllowed(host, &ip, port);
}

absl::Status TargetPolicy::AllowsResolved(std::string_view host, std::string_view ip,
                                          int port) const {
  std::optional<IpAddress> address = IpAddress::Parse(ip);
  if (!address) {
    return absl::PermissionDeniedError(absl::StrCat("target ", QuoteTarget(host, port),
                                                    " is refused: it resolved to no IP address"));
  }
  return AllowsResolved(host, *address, port);
}

std::string TargetPolicy::ToString() const {
  return absl::StrJoin(rules_, ",", [](std::string* out, const Rule& r) { out->append(r.text); });
}

}  // namespace vanguard
