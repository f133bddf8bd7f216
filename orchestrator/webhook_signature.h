// The signature of a webhook's body: HMAC-SHA256 of the exact bytes sent, keyed with the
// webhook's shared secret, as the receiver recomputes it (docs/planning.md has a Python
// check). The orchestrator sends it as `X-Vanguard-Signature: sha256=<hex>`.
//
//   request.set(kWebhookSignatureHeader, WebhookSignature(secret, body));
//   // "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
//
// Pure functions; any thread may call.
#ifndef VANGUARD_ORCHESTRATOR_WEBHOOK_SIGNATURE_H_
#define VANGUARD_ORCHESTRATOR_WEBHOOK_SIGNATURE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace vanguard {

inline constexpr char kWebhookSignatureHeader[] = "X-Vanguard-Signature";

// HMAC-SHA256(key, message) as 64 lowercase hex digits.
std::string HmacSha256Hex(absl::string_view key, absl::string_view message);

// The header's value: "sha256=" + HmacSha256Hex(secret, body).
std::string WebhookSignature(absl::string_view secret, absl::string_view body);

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_WEBHOOK_SIGNATURE_H_
