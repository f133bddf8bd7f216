#include "orchestrator/webhook_signature.h"

#include "gtest/gtest.h"

namespace vanguard {
namespace {

// RFC 4231, test case 2: a key shorter than the block, printable data.
TEST(WebhookSignatureTest, HmacSha256MatchesRfc4231Case2) {
  EXPECT_EQ(HmacSha256Hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

// RFC 4231, test case 6: a key longer than the block (hashed first).
TEST(WebhookSignatureTest, HmacSha256MatchesRfc4231Case6) {
  EXPECT_EQ(HmacSha256Hex(std::string(131, '\xaa'),
                          "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(WebhookSignatureTest, HeaderValueIsSha256PrefixedHex) {
  EXPECT_EQ(WebhookSignature("Jefe", "what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(WebhookSignatureTest, AnyChangeToTheBodyOrSecretChangesTheSignature) {
  const std::string body = R"({"test_id":3,"verdict":"regressed"})";
  const std::string signature = WebhookSignature("s3cret-s3cret-16", body);
  EXPECT_NE(WebhookSignature("s3cret-s3cret-16", R"({"test_id":4,"verdict":"regressed"})"),
            signature);
  EXPECT_NE(WebhookSignature("s3cret-s3cret-17", body), signature);
  EXPECT_EQ(WebhookSignature("s3cret-s3cret-16", body), signature);
}

}  // namespace
}  // namespace vanguard
