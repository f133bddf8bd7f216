#include "orchestrator/webhook_sender.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ParseWebhookUrlTest, SplitsHostPortAndTarget) {
  absl::StatusOr<WebhookUrl> url = ParseWebhookUrl("http://hooks.internal:8080/a/b?c=d#frag");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->host, "hooks.internal");
  EXPECT_EQ(url->port, 8080);
  EXPECT_EQ(url->target, "/a/b?c=d");
  url = ParseWebhookUrl("http://[::1]");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, 80);
  EXPECT_EQ(url->target, "/");
  EXPECT_EQ(url->HostPort(), "[::1]:80");
}

TEST(ParseWebhookUrlTest, RefusesWhatItCannotSendToWithoutEchoingTheUrl) {
  for (const char* url :
       {"https://hooks.internal/x", "ftp://h/", "http://user:token@h/", "http://h:0/",
        "http://h:65536/", "http:///path", "http://h/a b", "http://h/\r\nX-Injected: 1"}) {
    absl::StatusOr<WebhookUrl> parsed = ParseWebhookUrl(url);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << url;
    EXPECT_THAT(parsed.status().message(), Not(HasSubstr("token"))) << url;
  }
}

// The policy is applied before anything is looked up or connected: these fail at once.
TEST(HttpWebhookSenderTest, NeverPostsToLinkLocalOrMetadataTargets) {
  HttpWebhookSender sender({.timeout = absl::Seconds(5)});
  for (const char* url : {"http://169.254.169.254/latest/meta-data/iam",
                          "http://metadata.google.internal/computeMetadata/v1/",
                          "http://[fe80::1]/x", "http://[::ffff:169.254.169.254]/x"}) {
    absl::StatusOr<int> status = sender.Post(url, "{}", {});
    EXPECT_EQ(status.status().code(), absl::StatusCode::kPermissionDenied) << url;
    EXPECT_THAT(status.status().message(), Not(HasSubstr("meta-data"))) << url;
  }
}

TEST(HttpWebhookSenderTest, AppliesTheOperatorsListToTheResolvedAddress) {
  HttpWebhookSender sender(
      {.timeout = absl::Seconds(5), .policy = *TargetPolicy::Parse("10.0.0.0/8")});
  absl::StatusOr<int> status = sender.Post("http://127.0.0.1:9/hook?secret=x", "{}", {});
  EXPECT_EQ(status.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(status.status().message(), Not(HasSubstr("secret")));
  // "localhost" is a name no rule lists: it may be looked up, but its address is refused.
  status = sender.Post("http://localhost:9/hook", "{}", {});
  EXPECT_EQ(status.status().code(), absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace vanguard
