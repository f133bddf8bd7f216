// TargetPolicy: parsing the operator's list, CIDR edges for IPv4 and IPv6, host patterns,
// ports, the default, and the targets no list can allow.
#include "common/target_policy.h"

#include <netinet/in.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

TargetPolicy MustParse(const std::string& spec) {
  absl::StatusOr<TargetPolicy> policy = TargetPolicy::Parse(spec);
  EXPECT_TRUE(policy.ok()) << spec << ": " << policy.status();
  return policy.ok() ? *policy : TargetPolicy::Default();
}

bool AllowsIp(const TargetPolicy& p, const std::string& ip, int port) {
  return p.AllowsAddress(ip, port).ok();
}

TEST(TargetPolicyTest, Ipv4CidrEdges) {
  TargetPolicy p = MustParse("10.0.0.0/8,192.168.1.0/24,203.0.113.7");
  EXPECT_TRUE(AllowsIp(p, "10.0.0.0", 80));
  EXPECT_TRUE(AllowsIp(p, "10.255.255.255", 80));
  EXPECT_FALSE(AllowsIp(p, "11.0.0.0", 80));
  EXPECT_FALSE(AllowsIp(p, "9.255.255.255", 80));
  EXPECT_TRUE(AllowsIp(p, "192.168.1.255", 80));
  EXPECT_FALSE(AllowsIp(p, "192.168.2.0", 80));
  EXPECT_TRUE(AllowsIp(p, "203.0.113.7", 443));
  EXPECT_FALSE(AllowsIp(p, "203.0.113.8", 443));
  EXPECT_FALSE(AllowsIp(p, "127.0.0.1", 80));  // a list replaces the default
}

TEST(TargetPolicyTest, OddPrefixLengthsAndTheWholeSpace) {
  TargetPolicy p = MustParse("172.16.0.0/12,0.0.0.0/0:9000");
  EXPECT_TRUE(AllowsIp(p, "172.31.255.255", 80));
  EXPECT_FALSE(AllowsIp(p, "172.32.0.0", 80));
  EXPECT_FALSE(AllowsIp(p, "172.15.255.255", 80));
  EXPECT_TRUE(AllowsIp(p, "8.8.8.8", 9000));
  EXPECT_FALSE(AllowsIp(p, "8.8.8.8", 9001));
}

TEST(TargetPolicyTest, Ipv6CidrsAndBrackets) {
  TargetPolicy p = MustParse("[::1],fd00::/8,[2001:db8::/32]:8000-8001");
  EXPECT_TRUE(AllowsIp(p, "::1", 1));
  EXPECT_FALSE(AllowsIp(p, "::2", 1));
  EXPECT_TRUE(AllowsIp(p, "fdff:ffff::1", 80));
  EXPECT_FALSE(AllowsIp(p, "fe00::1", 80));
  EXPECT_TRUE(AllowsIp(p, "2001:db8:ffff::1", 8001));
  EXPECT_FALSE(AllowsIp(p, "2001:db8:ffff::1", 8002));
  EXPECT_FALSE(AllowsIp(p, "2001:db9::1", 8000));
  EXPECT_FALSE(AllowsIp(p, "127.0.0.1", 80));  // an IPv4 rule is not an IPv6 rule
}

TEST(TargetPolicyTest, MappedIpv6IsJudgedAsItsIpv4Address) {
  TargetPolicy p = MustParse("10.0.0.0/8");
  EXPECT_TRUE(AllowsIp(p, "::ffff:10.1.2.3", 80));
  EXPECT_FALSE(AllowsIp(p, "::ffff:11.1.2.3", 80));
  TargetPolicy all = MustParse("0.0.0.0/0,::/0");
  EXPECT_FALSE(AllowsIp(all, "::ffff:169.254.169.254", 80));
  EXPECT_FALSE(AllowsIp(all, "64:ff9b::a9fe:a9fe", 80));  // NAT64 of 169.254.169.254
}

TEST(TargetPolicyTest, HostPatternsMatchSubdomainsOnly) {
  TargetPolicy p = MustParse("*.svc.cluster.local:8000-9000,predictor.internal");
  EXPECT_TRUE(p.Allows("pred.ns.svc.cluster.local", 8000).ok());
  EXPECT_TRUE(p.Allows("PRED.NS.SVC.CLUSTER.LOCAL.", 9000).ok());
  EXPECT_FALSE(p.Allows("svc.cluster.local", 8000).ok());
  EXPECT_FALSE(p.Allows("evilsvc.cluster.local", 8000).ok());
  EXPECT_FALSE(p.Allows("pred.ns.svc.cluster.local.evil.com", 8000).ok());
  EXPECT_FALSE(p.Allows("pred.ns.svc.cluster.local", 7999).ok());
  EXPECT_FALSE(p.Allows("pred.ns.svc.cluster.local", 9001).ok());
  EXPECT_TRUE(p.Allows("predictor.internal", 1).ok());
  EXPECT_FALSE(p.Allows("x.predictor.internal", 1).ok());
}

TEST(TargetPolicyTest, ANameRuleAdmitsWhatTheNameResolvesToButNotAnotherName) {
  TargetPolicy p = MustParse("*.svc.cluster.local");
  EXPECT_TRUE(p.AllowsResolved("pred.ns.svc.cluster.local", "10.1.2.3", 80).ok());
  EXPECT_FALSE(p.AllowsResolved("evil.example.com", "10.1.2.3", 80).ok());
  // A name rule does not admit an address by itself.
  EXPECT_FALSE(p.AllowsAddress("10.1.2.3", 80).ok());
}

TEST(TargetPolicyTest, AnAddressRuleAdmitsAnyNameThatResolvesIntoIt) {
  TargetPolicy p = MustParse("10.0.0.0/8");
  EXPECT_TRUE(p.AllowsResolved("predictor.example.com", "10.9.9.9", 80).ok());
  absl::Status refused = p.AllowsResolved("predictor.example.com", "93.184.216.34", 80);
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(refused.message(), AllOf(HasSubstr("predictor.example.com:80"),
                                       HasSubstr("93.184.216.34"), HasSubstr("10.0.0.0/8")));
  // Without resolving, a name passes only through a name rule; a lookup is left to the
  // address unless the name or literal is refused already.
  EXPECT_FALSE(p.Allows("predictor.example.com", 80).ok());
  EXPECT_TRUE(p.Allows("10.2.3.4", 80).ok());
  EXPECT_TRUE(p.MayResolve("predictor.example.com", 80).ok());
  EXPECT_FALSE(p.MayResolve("metadata.google.internal", 80).ok());
  EXPECT_FALSE(p.MayResolve("11.0.0.1", 80).ok());
  EXPECT_TRUE(p.MayResolve("10.0.0.1", 80).ok());
}

TEST(TargetPolicyTest, MetadataAndLinkLocalAreNeverAllowed) {
  TargetPolicy p = MustParse("0.0.0.0/0,::/0,169.254.0.0/16,fe80::/10,*.internal,metadata");
  for (const char* ip : {"169.254.169.254", "169.254.0.1", "169.254.255.255", "fe80::1",
                         "febf:ffff::1", "fd00:ec2::254", "::ffff:169.254.169.254"}) {
    absl::Status s = p.AllowsAddress(ip, 80);
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << ip;
    EXPECT_THAT(s.message(), HasSubstr("never allowed")) << ip;
    EXPECT_FALSE(p.Allows(ip, 80).ok()) << ip;
  }
  EXPECT_TRUE(AllowsIp(p, "169.253.255.255", 80));
  EXPECT_TRUE(AllowsIp(p, "169.255.0.0", 80));
  EXPECT_TRUE(AllowsIp(p, "fec0::1", 80));
  EXPECT_TRUE(AllowsIp(p, "fd00:ec2::253", 80));
  for (const char* name : {"metadata.google.internal", "METADATA.google.internal.", "metadata"}) {
    EXPECT_FALSE(p.Allows(name, 80).ok()) << name;
    EXPECT_FALSE(p.AllowsResolved(name, "10.0.0.1", 80).ok()) << name;
  }
  // A name that resolves to the metadata address is refused after resolution.
  absl::Status rebound = p.AllowsResolved("innocent.internal", "169.254.169.254", 80);
  EXPECT_THAT(rebound.message(),
              AllOf(HasSubstr("innocent.internal:80"), HasSubstr("169.254.169.254")));
}

TEST(TargetPolicyTest, TheFlagRefusesRulesThatNameOnlyNeverAllowedTargets) {
  for (const char* rule :
       {"169.254.169.254/32", "169.254.169.254", "169.254.0.0/16", "169.254.169.0/24:80",
        "fe80::/10", "fe80::1", "[fe80::/64]:8000", "fd00:ec2::254", "[fd00:ec2::254/128]",
        "::ffff:169.254.169.254", "::ffff:169.254.0.0/112", "metadata.google.internal",
        "METADATA.google.internal.:80", "metadata"}) {
    absl::StatusOr<TargetPolicy> p = TargetPolicy::FromFlag(absl::StrCat("10.0.0.0/8,", rule));
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << rule;
    EXPECT_THAT(p.status().message(), AllOf(HasSubstr("never allowed"), HasSubstr("remove it")))
        << rule;
  }
  // A rule wider than a never-allowed range is accepted, and the range is still refused at
  // check time.
  for (const char* rules : {"0.0.0.0/0,::/0", "169.0.0.0/8", "169.254.0.0/15", "fe80::/9",
                            "fd00::/8", "*.google.internal", "*.internal"}) {
    absl::StatusOr<TargetPolicy> p = TargetPolicy::FromFlag(rules);
    ASSERT_TRUE(p.ok()) << rules << ": " << p.status();
    EXPECT_FALSE(p->Allows("169.254.169.254", 80).ok()) << rules;
    EXPECT_FALSE(p->Allows("fe80::1", 80).ok()) << rules;
    EXPECT_FALSE(p->Allows("fd00:ec2::254", 80).ok()) << rules;
    EXPECT_FALSE(p->Allows("metadata.google.internal", 80).ok()) << rules;
  }
  EXPECT_TRUE(AllowsIp(*TargetPolicy::FromFlag("169.254.0.0/15"), "169.255.0.1", 80));
  EXPECT_TRUE(AllowsIp(*TargetPolicy::FromFlag("fd00::/8"), "fd00:ec2::253", 80));
}

TEST(TargetPolicyTest, LegacyIpv4FormsAreJudgedAsTheAddressTheyName) {
  TargetPolicy p = MustParse("0.0.0.0/0");
  EXPECT_FALSE(p.Allows("2852039166", 80).ok());  // 169.254.169.254
  EXPECT_FALSE(p.Allows("0xa9.0xfe.0xa9.0xfe", 80).ok());
  EXPECT_FALSE(p.Allows("169.254.43518", 80).ok());
  EXPECT_FALSE(TargetPolicy::Default().Allows("0x0a000001", 80).ok());  // 10.0.0.1
  EXPECT_TRUE(TargetPolicy::Default().Allows("127.1", 80).ok());
}

TEST(TargetPolicyTest, TheDefaultIsLoopbackOnly) {
  TargetPolicy p = TargetPolicy::Default();
  EXPECT_TRUE(p.is_default());
  EXPECT_TRUE(AllowsIp(p, "127.0.0.1", 8000));
  EXPECT_TRUE(AllowsIp(p, "127.255.255.254", 1));
  EXPECT_TRUE(AllowsIp(p, "::1", 65535));
  EXPECT_TRUE(p.AllowsResolved("localhost", "127.0.0.1", 8000).ok());
  EXPECT_FALSE(AllowsIp(p, "10.0.0.1", 8000));
  EXPECT_FALSE(AllowsIp(p, "169.254.169.254", 80));
  absl::Status s = p.AllowsResolved("predictor.example.com", "192.168.1.5", 8000);
  EXPECT_THAT(s.message(), AllOf(HasSubstr("predictor.example.com:8000"),
                                 HasSubstr("loopback only"), HasSubstr("--allowed_targets")));
  EXPECT_TRUE(TargetPolicy::FromFlag("")->is_default());
  EXPECT_FALSE(TargetPolicy::FromFlag("10.0.0.0/8")->is_default());
}

TEST(TargetPolicyTest, ParsesTheExampleFromTheFlagHelp) {
  TargetPolicy p = MustParse("127.0.0.0/8,10.0.0.0/8,*.svc.cluster.local:8000-9000,[::1]");
  EXPECT_EQ(p.ToString(), "127.0.0.0/8,10.0.0.0/8,*.svc.cluster.local:8000-9000,[::1]");
  EXPECT_TRUE(MustParse(" 10.0.0.0/8 , ::1 ").AllowsAddress("::1", 1).ok());
}

TEST(TargetPolicyTest, RefusesRulesItCannotRead) {
  for (const char* bad : {"",
                          " ",
                          "10.0.0.0/8,",
                          ",10.0.0.0/8",
                          "10.0.0.0/33",
                          "10.0.0.1/8",
                          "10.0.0.0/",
                          "10.0.0",
                          "300.1.1.1",
                          "::1/129",
                          "[::1",
                          "[::1]x",
                          "[::1]:",
                          "10.0.0.0/8:0",
                          "10.0.0.0/8:65536",
                          "10.0.0.0/8:9000-8000",
                          "10.0.0.0/8:80-",
                          "host:",
                          "*",
                          "a.*.example.com",
                          "*.",
                          "exa mple.com",
                          "ex@mple.com",
                          "[fe80::1%eth0]"}) {
    absl::StatusOr<TargetPolicy> p = TargetPolicy::Parse(bad);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << "\"" << bad << "\"";
  }
  EXPECT_THAT(TargetPolicy::Parse("10.0.0.0/33").status().message(),
              AllOf(HasSubstr("10.0.0.0/33"), HasSubstr("prefix length")));
  EXPECT_THAT(TargetPolicy::Parse("*").status().message(), HasSubstr("0.0.0.0/0"));
}

TEST(TargetPolicyTest, ErrorsShowAHostBoundedAndPrintable) {
  TargetPolicy p = MustParse("10.0.0.0/8:443");
  absl::Status s = p.Allows(std::string("evil\r\nX-Injected: 1.com"), 80);
  EXPECT_THAT(s.message(), Not(HasSubstr("\r\n")));
  s = p.Allows(std::string(5000, 'a'), 80);
  EXPECT_LT(s.message().size(), 700u);
}

TEST(TargetPolicyTest, ReadsResolvedSocketAddresses) {
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  v4.sin_addr.s_addr = htonl(0xA9FEA9FE);  // 169.254.169.254
  std::optional<IpAddress> ip =
      IpAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&v4), sizeof(v4));
  ASSERT_TRUE(ip.has_value());
  EXPECT_EQ(ip->ToString(), "169.254.169.254");
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  v6.sin6_addr = in6addr_loopback;
  ip = IpAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&v6), sizeof(v6));
  ASSERT_TRUE(ip.has_value());
  EXPECT_TRUE(TargetPolicy::Default().AllowsAddress(*ip, 80).ok());
  EXPECT_FALSE(IpAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&v4), 2).has_value());
}

}  // namespace
}  // namespace vanguard
