#include "orchestrator/webhook_sender.h"

#include <memory>
#include <utility>
#include <vector>

#include "common/testing/test_certificates.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/recording_http_server.h"

namespace vanguard {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The URL rules themselves: common/http_url_test.cc.
TEST(ParseWebhookUrlTest, TakesHttpAndHttpsAndNamesTheWebhookInErrors) {
  absl::StatusOr<HttpUrl> url = ParseWebhookUrl("https://hooks.example.com/services/T0");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_TRUE(url->tls);
  EXPECT_EQ(url->port, 443);
  url = ParseWebhookUrl("http://hooks.internal:8080/a/b?c=d#frag");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_FALSE(url->tls);
  EXPECT_EQ(url->HostPort(), "hooks.internal:8080");
  EXPECT_EQ(url->target, "/a/b?c=d");
  url = ParseWebhookUrl("https://user:token@h/");
  EXPECT_EQ(url.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(url.status().message(), HasSubstr("webhook url"));
  EXPECT_THAT(url.status().message(), Not(HasSubstr("token")));
}

// The policy is applied before anything is looked up or connected: these fail at once.
std::unique_ptr<HttpWebhookSender> Sender(HttpWebhookSender::Options options) {
  absl::StatusOr<std::unique_ptr<HttpWebhookSender>> sender =
      HttpWebhookSender::Create(std::move(options));
  EXPECT_TRUE(sender.ok()) << sender.status();
  return sender.ok() ? *std::move(sender) : nullptr;
}

TEST(HttpWebhookSenderTest, NeverPostsToLinkLocalOrMetadataTargets) {
  std::unique_ptr<HttpWebhookSender> sender = Sender({.timeout = absl::Seconds(5)});
  ASSERT_NE(sender, nullptr);
  for (const char* url :
       {"http://169.254.169.254/latest/meta-data/iam",
        "http://metadata.google.internal/computeMetadata/v1/", "http://[fe80::1]/x",
        "http://[::ffff:169.254.169.254]/x", "https://169.254.169.254/latest/meta-data/iam"}) {
    absl::StatusOr<int> status = sender->Post(url, "{}", {});
    EXPECT_EQ(status.status().code(), absl::StatusCode::kPermissionDenied) << url;
    EXPECT_THAT(status.status().message(), Not(HasSubstr("meta-data"))) << url;
  }
}

TEST(HttpWebhookSenderTest, AppliesTheOperatorsListToTheResolvedAddress) {
  std::unique_ptr<HttpWebhookSender> sender =
      Sender({.timeout = absl::Seconds(5), .policy = *TargetPolicy::Parse("10.0.0.0/8")});
  ASSERT_NE(sender, nullptr);
  absl::StatusOr<int> status = sender->Post("http://127.0.0.1:9/hook?secret=x", "{}", {});
  EXPECT_EQ(status.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(status.status().message(), Not(HasSubstr("secret")));
  // "localhost" is a name no rule lists: it may be looked up, but its address is refused.
  status = sender->Post("http://localhost:9/hook", "{}", {});
  EXPECT_EQ(status.status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(HttpWebhookSenderTest, PostsOverHttpsToAServerWhoseCertificateChainsToTheCa) {
  absl::StatusOr<std::unique_ptr<testing::TestCertificates>> certs =
      testing::TestCertificates::Create("webhook-test-ca");
  ASSERT_TRUE(certs.ok()) << certs.status();
  absl::StatusOr<testing::CertificateFiles> leaf = (*certs)->Issue("localhost");
  ASSERT_TRUE(leaf.ok()) << leaf.status();
  testing::RecordingHttpServer server({}, testing::RecordingHttpServer::Tls{leaf->cert, leaf->key});

  std::unique_ptr<HttpWebhookSender> trusting =
      Sender({.timeout = absl::Seconds(10), .tls_ca_file = (*certs)->ca_cert()});
  ASSERT_NE(trusting, nullptr);
  absl::StatusOr<int> status =
      trusting->Post(server.Url("/hook"), R"({"verdict":"regressed"})", {{"X-Test", "1"}});
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, 204);
  std::vector<testing::RecordingHttpServer::Request> got = server.requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body, R"({"verdict":"regressed"})");
  EXPECT_EQ(got[0].headers["x-test"], "1");

  // The system's CAs do not know the test CA: the handshake fails, nothing is sent.
  std::unique_ptr<HttpWebhookSender> system_cas = Sender({.timeout = absl::Seconds(10)});
  ASSERT_NE(system_cas, nullptr);
  status = system_cas->Post(server.Url("/hook"), "{}", {});
  EXPECT_EQ(status.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(HttpWebhookSenderTest, CreateRefusesACaFileItCannotLoad) {
  EXPECT_EQ(HttpWebhookSender::Create({.tls_ca_file = "/nonexistent/ca.pem"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vanguard
