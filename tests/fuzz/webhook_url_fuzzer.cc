// Fuzzes ParseWebhookUrl and ValidateWebhook, which read the webhook URL a submitter gives
// AddWebhook (the orchestrator later POSTs to it). Input: the URL.
//
// Contract checked: never throws or crashes; an accepted URL splits into a non-empty host
// and target of printable ASCII without spaces (nothing that could end a request line or add
// a header), a port of 1-65535 and a target starting with "/"; an error is INVALID_ARGUMENT
// that does not echo the URL (no kSecretMarker). ValidateWebhook answers OK or
// INVALID_ARGUMENT without echoing the path, query or secret, and refuses a host that is a
// link-local address in any spelling.
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "common/target_policy.h"
#include "orchestrator/validation.h"
#include "orchestrator/webhook_sender.h"
#include "tests/fuzz/fuzz_harnesses.h"

namespace vanguard::fuzz {
namespace {

constexpr char kName[] = "webhook_url";

bool PrintableWithoutSpaces(const std::string& s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return false;
  }
  return true;
}

bool IsLinkLocalV4(const std::string& host) {
  std::optional<IpAddress> ip = IpAddress::Parse(host);
  return ip && !ip->Unmapped().v6 && ip->Unmapped().bytes[0] == 169 &&
         ip->Unmapped().bytes[1] == 254;
}

}  // namespace

int FuzzWebhookUrl(const uint8_t* data, size_t size) {
  const std::string url(reinterpret_cast<const char*>(data), size);
  v1::Webhook webhook;
  webhook.set_url(url);
  webhook.set_secret(std::string("secret-") + kSecretMarker + "-0123456789");
  const absl::Status valid = ValidateWebhook(webhook, nullptr);
  VANGUARD_FUZZ_CHECK(kName, valid.ok() || absl::IsInvalidArgument(valid));
  VANGUARD_FUZZ_CHECK(kName, valid.message().find(kSecretMarker) == std::string::npos);

  absl::StatusOr<HttpUrl> parsed = ParseWebhookUrl(url);
  if (!parsed.ok()) {
    VANGUARD_FUZZ_CHECK(kName, parsed.status().code() == absl::StatusCode::kInvalidArgument);
    VANGUARD_FUZZ_CHECK(kName, parsed.status().message().find(kSecretMarker) == std::string::npos);
    VANGUARD_FUZZ_CHECK(kName, !valid.ok());
    return 0;
  }
  VANGUARD_FUZZ_CHECK(kName, !parsed->host.empty() && PrintableWithoutSpaces(parsed->host));
  VANGUARD_FUZZ_CHECK(kName, parsed->host.find_first_of("/?#@[]") == std::string::npos);
  VANGUARD_FUZZ_CHECK(kName, !parsed->target.empty() && parsed->target[0] == '/');
  VANGUARD_FUZZ_CHECK(kName, PrintableWithoutSpaces(parsed->target));
  VANGUARD_FUZZ_CHECK(kName, parsed->port >= 1 && parsed->port <= 65535);
  absl::StatusOr<HttpUrl> again =
      ParseWebhookUrl((parsed->tls ? "https://" : "http://") + parsed->HostPort() + parsed->target);
  VANGUARD_FUZZ_CHECK(kName, again.ok() && again->host == parsed->host &&
                                 again->port == parsed->port && again->target == parsed->target &&
                                 again->tls == parsed->tls);
  if (IsLinkLocalV4(parsed->host)) VANGUARD_FUZZ_CHECK(kName, !valid.ok());
  return 0;
}

}  // namespace vanguard::fuzz
