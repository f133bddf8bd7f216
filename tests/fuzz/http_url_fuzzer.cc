// Fuzzes ParseHttpUrl, which reads the URLs a submitter gives the worker (json_url,
// prometheus_url, metrics.url). Input: the URL.
//
// Contract checked: never throws or crashes; an accepted URL splits into a non-empty host
// and target of printable ASCII without spaces (nothing that could end a request line or
// add a header), a port of 1-65535, a target starting with "/"; an error is INVALID_ARGUMENT
// that does not echo the URL (no kSecretMarker). The accepted host then goes through the
// target policy (common/target_policy.h) as the worker and the orchestrator judge it: the
// answer is OK or PERMISSION_DENIED, may name the host but never echoes the path or query
// (kSecretMarker there never comes back), and a host that is a
// link-local address in any spelling is refused even by a policy that allows every address.
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "common/target_policy.h"
#include "tests/fuzz/fuzz_harnesses.h"
#include "worker/http_get.h"

namespace vanguard::fuzz {
namespace {

constexpr char kName[] = "http_url";

bool PrintableWithoutSpaces(const std::string& s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return false;
  }
  return true;
}

// The policy's verdicts on the URL's host (see the file comment).
void CheckTargetPolicy(const HttpUrl& url, int port) {
  static const TargetPolicy* const kEverything = [] {
    absl::StatusOr<TargetPolicy> policy = TargetPolicy::Parse("0.0.0.0/0,::/0,*.com");
    return new TargetPolicy(*std::move(policy));
  }();
  for (const absl::Status& verdict :
       {kEverything->Allows(url.host, port), kEverything->MayResolve(url.host, port),
        TargetPolicy::Default().Allows(url.host, port)}) {
    VANGUARD_FUZZ_CHECK(kName, verdict.ok() || absl::IsPermissionDenied(verdict));
    // The verdict names the host it refused (the submitter's own text), never the path or
    // query: the marker may appear only when the host carries it.
    VANGUARD_FUZZ_CHECK(kName, verdict.message().find(kSecretMarker) == std::string::npos ||
                                   url.host.find(kSecretMarker) != std::string::npos);
  }
  std::optional<IpAddress> ip = IpAddress::Parse(url.host);
  if (ip && !ip->Unmapped().v6 && ip->Unmapped().bytes[0] == 169 &&
      ip->Unmapped().bytes[1] == 254) {
    VANGUARD_FUZZ_CHECK(kName, !kEverything->Allows(url.host, port).ok());
    VANGUARD_FUZZ_CHECK(kName, !kEverything->AllowsAddress(*ip, port).ok());
  }
}

}  // namespace

int FuzzHttpUrl(const uint8_t* data, size_t size) {
  const std::string url(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<HttpUrl> parsed = ParseHttpUrl(url);
  if (!parsed.ok()) {
    VANGUARD_FUZZ_CHECK(kName, parsed.status().code() == absl::StatusCode::kInvalidArgument);
    VANGUARD_FUZZ_CHECK(kName, parsed.status().message().find(kSecretMarker) == std::string::npos);
    return 0;
  }
  VANGUARD_FUZZ_CHECK(kName, !parsed->host.empty() && PrintableWithoutSpaces(parsed->host));
  VANGUARD_FUZZ_CHECK(kName, parsed->host.find_first_of("/?#@[]") == std::string::npos);
  VANGUARD_FUZZ_CHECK(kName, !parsed->target.empty() && parsed->target[0] == '/');
  VANGUARD_FUZZ_CHECK(kName, PrintableWithoutSpaces(parsed->target));
  const int port = parsed->port;
  VANGUARD_FUZZ_CHECK(kName, port >= 1 && port <= 65535 && !parsed->tls);
  // The same URL parses the same way again (HostPort round trip for the host part).
  absl::StatusOr<HttpUrl> again = ParseHttpUrl("http://" + parsed->HostPort() + parsed->target);
  VANGUARD_FUZZ_CHECK(kName, again.ok() && again->host == parsed->host &&
                                 again->port == parsed->port && again->target == parsed->target);
  CheckTargetPolicy(*parsed, port);
  return 0;
}

}  // namespace vanguard::fuzz
