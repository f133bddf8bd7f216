// HttpGet against hostile answers and refused targets: errors name the target by host:port
// only (the URL's own checks: common/http_url_test.cc).
#include "worker/http_get.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/target_policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/testing/one_shot_http_server.h"

namespace vanguard::worker {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_util::ClosedLoopbackPort;
using testing_util::OneShotHttpServer;

TEST(HttpGetTest, FetchesABody) {
  OneShotHttpServer server(
      "HTTP/1.1 200 OK\r\nContent-Length: 11\r\nConnection: close\r\n\r\nqueue_len 3");
  auto r = HttpGet(absl::StrCat("http://127.0.0.1:", server.port(), "/metrics"), absl::Seconds(5));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "queue_len 3");
}

TEST(HttpGetTest, PostSendsAnEmptyPostAndReturnsTheStatus) {
  OneShotHttpServer server("HTTP/1.1 202 Accepted\r\nContent-Length: 4\r\n\r\ndown");
  auto r = HttpPost(absl::StrCat("http://127.0.0.1:", server.port(), "/admin/down?seconds=3"),
                    absl::Seconds(5));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 202);
  EXPECT_THAT(server.request(), HasSubstr("POST /admin/down?seconds=3 HTTP/1.1"));
  EXPECT_THAT(server.request(), HasSubstr("Content-Length: 0"));
}

TEST(HttpGetTest, PostToARefusedTargetIsNeverConnected) {
  const int port = ClosedLoopbackPort();
  auto policy = TargetPolicy::FromFlag("10.0.0.0/8");
  ASSERT_TRUE(policy.ok()) << policy.status();
  auto r =
      HttpPost(absl::StrCat("http://127.0.0.1:", port, "/admin/down"), absl::Seconds(5), &*policy);
  EXPECT_TRUE(absl::IsPermissionDenied(r.status())) << r.status();
  auto refused = HttpPost(absl::StrCat("http://127.0.0.1:", port, "/admin/down"), absl::Seconds(5));
  ASSERT_TRUE(absl::IsUnavailable(refused.status())) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("POST 127.0.0.1:"));
}

TEST(HttpGetTest, ARefusedConnectionNamesHostPortNotPathOrQuery) {
  const int port = ClosedLoopbackPort();
  auto r = HttpGet(absl::StrCat("http://127.0.0.1:", port, "/secret-path?token=SECRET"),
                   absl::Seconds(5));
  ASSERT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr(absl::StrCat("127.0.0.1:", port)));
  EXPECT_THAT(r.status().message(), Not(HasSubstr("SECRET")));
  EXPECT_THAT(r.status().message(), Not(HasSubstr("secret-path")));
}

TEST(HttpGetTest, AnAddressThePolicyRefusesIsNeverConnected) {
  OneShotHttpServer server("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  const std::string url = absl::StrCat("http://127.0.0.1:", server.port(), "/m?token=SECRET");
  absl::StatusOr<TargetPolicy> policy = TargetPolicy::Parse("10.0.0.0/8");
  ASSERT_TRUE(policy.ok()) << policy.status();
  auto r = HttpGet(url, absl::Seconds(5), kDefaultMaxHttpBodyBytes, &*policy);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr(absl::StrCat("127.0.0.1:", server.port())));
  EXPECT_THAT(r.status().message(), HasSubstr("10.0.0.0/8"));
  EXPECT_THAT(r.status().message(), Not(HasSubstr("SECRET")));
  // The server answers one connection only: the refused GET did not take it.
  r = HttpGet(url, absl::Seconds(5));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "ok");
}

TEST(HttpGetTest, MetadataAndLinkLocalTargetsAreRefusedWhateverThePolicy) {
  absl::StatusOr<TargetPolicy> everything =
      TargetPolicy::Parse("0.0.0.0/0,::/0,*.internal,169.254.0.0/16");
  ASSERT_TRUE(everything.ok()) << everything.status();
  for (const char* url :
       {"http://169.254.169.254/latest/meta-data/iam?token=SECRET",
        "http://[fd00:ec2::254]/latest/meta-data/", "http://[fe80::1]:8080/", "http://2852039166/",
        "http://metadata.google.internal/computeMetadata/v1/?recursive=true"}) {
    auto r = HttpGet(url, absl::Seconds(5), kDefaultMaxHttpBodyBytes, &*everything);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied) << url << ": " << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr("never allowed")) << url;
    EXPECT_THAT(r.status().message(), Not(HasSubstr("meta-data"))) << url;
    EXPECT_THAT(r.status().message(), Not(HasSubstr("SECRET"))) << url;
  }
}

TEST(HttpGetTest, WithoutAPolicyOnlyLoopbackIsAllowed) {
  auto r = HttpGet("http://10.1.2.3:9/metrics", absl::Seconds(5));
  ASSERT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("10.1.2.3:9"));
  EXPECT_THAT(r.status().message(), HasSubstr("loopback only"));
}

TEST(HttpGetTest, ABodyOverTheLimitIsResourceExhausted) {
  OneShotHttpServer server(
      "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n0123456789");
  auto r = HttpGet(absl::StrCat("http://127.0.0.1:", server.port(), "/"), absl::Seconds(5),
                   /*max_body_bytes=*/50);
  EXPECT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
}

TEST(HttpGetTest, AnEnormousDeclaredBodyIsRefusedNotAllocated) {
  // Body bytes in the same packet as the header: Beast alone would reserve the declared size.
  OneShotHttpServer declared(
      "HTTP/1.1 200 OK\r\nContent-Length: 4000000000000000000\r\n\r\n0123456789");
  auto r = HttpGet(absl::StrCat("http://127.0.0.1:", declared.port(), "/"), absl::Seconds(5));
  EXPECT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
  OneShotHttpServer chunked(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "fffffffffffffff\r\n0123456789");
  r = HttpGet(absl::StrCat("http://127.0.0.1:", chunked.port(), "/"), absl::Seconds(5));
  EXPECT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
}

TEST(HttpGetTest, AnAnswerThatIsNotHttpIsUnavailableWithoutItsText) {
  OneShotHttpServer server("SECRET-BANNER not http at all\r\n\r\n");
  auto r = HttpGet(absl::StrCat("http://127.0.0.1:", server.port(), "/"), absl::Seconds(5));
  ASSERT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), Not(HasSubstr("SECRET")));
}

}  // namespace
}  // namespace vanguard::worker
