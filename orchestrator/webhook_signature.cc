// HMAC-SHA256 webhook signatures; see webhook_signature.h. Any thread may call.
#include "orchestrator/webhook_signature.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace vanguard {

std::string HmacSha256Hex(absl::string_view key, absl::string_view message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  // HMAC() fails only for an unknown digest or an allocation failure: neither can be handled.
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest,
           &length) == nullptr) {
    abort();
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), static_cast<size_t>(length)));
}

std::string WebhookSignature(absl::string_view secret, absl::string_view body) {
  return absl::StrCat("sha256=", HmacSha256Hex(secret, body));
}

}  // namespace vanguard
