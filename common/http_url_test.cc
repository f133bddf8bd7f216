// ParseHttpUrl against hostile URLs: nothing that could add a header or a request or hide the
// host gets through, and errors never echo the URL.
#include "common/http_url.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ParseHttpUrlTest, SplitsHostPortAndTarget) {
  absl::StatusOr<HttpUrl> p = ParseHttpUrl("http://h:81/a?b=c#frag");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->host, "h");
  EXPECT_EQ(p->port, 81);
  EXPECT_EQ(p->target, "/a?b=c");
  EXPECT_EQ(p->HostPort(), "h:81");
  EXPECT_EQ(p->HostHeader(), "h:81");
  EXPECT_FALSE(p->tls);

  p = ParseHttpUrl("http://autoscaler.svc?q=1");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->port, 80);
  EXPECT_EQ(p->target, "/?q=1");
  EXPECT_EQ(p->HostHeader(), "autoscaler.svc");

  p = ParseHttpUrl("http://[::1]:8080/metrics");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->host, "::1");
  EXPECT_EQ(p->port, 8080);
  EXPECT_EQ(p->HostPort(), "[::1]:8080");

  p = ParseHttpUrl("http://[::1]");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->port, 80);
  EXPECT_EQ(p->target, "/");
  EXPECT_EQ(p->HostPort(), "[::1]:80");
  EXPECT_EQ(p->HostHeader(), "[::1]");
}

TEST(ParseHttpUrlTest, HttpsOnlyWhereTheCallerAllowsIt) {
  absl::StatusOr<HttpUrl> p =
      ParseHttpUrl("https://hooks.example.com/services/T0", UrlSchemes::kHttpOrHttps);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->tls);
  EXPECT_EQ(p->port, 443);
  EXPECT_EQ(p->target, "/services/T0");
  EXPECT_EQ(p->HostHeader(), "hooks.example.com");
  p = ParseHttpUrl("https://hooks.example.com:8443/", UrlSchemes::kHttpOrHttps);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->HostHeader(), "hooks.example.com:8443");

  p = ParseHttpUrl("https://hooks.example.com/");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("http://"));
  p = ParseHttpUrl("ftp://h/", UrlSchemes::kHttpOrHttps, "webhook url");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("webhook url must be http(s)://"));
}

TEST(ParseHttpUrlTest, RefusesWhatCouldSplitTheRequestOrHideTheHost) {
  const std::string bad[] = {
      "ftp://h/",
      "http://h/a\r\nX-Injected: 1",
      "http://h/a\nb",
      "http://h/a b",
      std::string("http://h/a\0b", 12),
      "http://h\r\n:80/",
      "http://user:pass@h/",
      "http://h@evil/",
      "http://:80/",
      "http:///x",
      "http://h:0/",
      "http://h:65536/",
      "http://h:8o/",
      "http://h:/",
      "http://h:+80/",
      "http://[::1/",
      "http://[::1]x/",
      "http://[::1]:/",
      "http://[]/",
      "http://h\x7f/",
      "http://h/\xc3\xa9",
  };
  for (const std::string& url : bad) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseHttpUrl(url).status())) << url;
    EXPECT_TRUE(absl::IsInvalidArgument(ParseHttpUrl(url, UrlSchemes::kHttpOrHttps).status()))
        << url;
  }
  EXPECT_TRUE(absl::IsInvalidArgument(
      ParseHttpUrl("https://user:token@h/", UrlSchemes::kHttpOrHttps).status()));
}

TEST(ParseHttpUrlTest, ErrorsDoNotEchoTheUrl) {
  for (const char* url : {"gopher://host/?token=SECRET", "http://user:SECRET@host/",
                          "http://h:SECRET/", "http://h/SECRET\r\n"}) {
    absl::StatusOr<HttpUrl> p = ParseHttpUrl(url, UrlSchemes::kHttpOrHttps);
    ASSERT_FALSE(p.ok()) << url;
    EXPECT_THAT(p.status().message(), Not(HasSubstr("SECRET"))) << url;
  }
}

}  // namespace
}  // namespace vanguard
