// The autoscaler-rate readers against hostile answers: wrong types, missing fields, huge,
// non-finite or negative rates, deep or enormous documents — each a clear INVALID_ARGUMENT,
// never a throw or an abort — and errors that never carry what the answer held.
#include "worker/controller_rate_source.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/target_policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/testing/one_shot_http_server.h"

namespace vanguard::worker {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_util::OneShotHttpServer;

constexpr char kSecret[] = "AKIAsecret-token-0123456789";

std::string Vector(const std::string& sample_value) {
  return absl::StrCat(R"({"status":"success","data":{"resultType":"vector","result":[)",
                      R"({"metric":{},"value":[1712.5,)", sample_value, "]}]}}");
}

TEST(ControllerRateSourceTest, ReadsNumbersAndNumericStrings) {
  EXPECT_DOUBLE_EQ(*RateFromJson(R"({"target_qps": 420})", ""), 420);
  EXPECT_DOUBLE_EQ(*RateFromJson(R"({"spec":{"target":"12.5"}})", "spec.target"), 12.5);
  EXPECT_DOUBLE_EQ(*RateFromJson(R"({"a":{"b":{"c":7}}, "c": 1})", "a.b.c"), 7);
  EXPECT_DOUBLE_EQ(*RateFromPrometheus(Vector(R"("333.3")")), 333.3);
  EXPECT_DOUBLE_EQ(*RateFromPrometheus(
                       R"({"status":"success","data":{"resultType":"scalar","result":[1.0,"7"]}})"),
                   7);
}

TEST(ControllerRateSourceTest, JsonFieldsOfTheWrongTypeAreInvalidArgument) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"target_qps": true})", ""},
      {R"({"target_qps": null})", ""},
      {R"({"target_qps": [5]})", ""},
      {R"({"target_qps": {"value": 5}})", ""},
      {R"({"spec": 5})", "spec.target"},
      {R"({"spec": [{"target": 5}]})", "spec.target"},
      {R"({"spec": "target"})", "spec.target"},
      {R"([{"target_qps": 5}])", ""},
      {R"("5")", ""},
      {"5", ""},
      {"null", ""},
      {"", ""},
  };
  for (const auto& [body, path] : cases) {
    absl::StatusOr<double> rate = RateFromJson(body, path);
    EXPECT_TRUE(absl::IsInvalidArgument(rate.status())) << body << " -> " << rate.status();
  }
}

TEST(ControllerRateSourceTest, PrometheusFieldsOfTheWrongTypeAreInvalidArgument) {
  const std::vector<std::string> cases = {
      R"({"status": 1})",
      R"({"status": null, "data": {}})",
      R"({"status": ["success"]})",
      R"({"status": "success"})",
      R"({"status": "success", "data": []})",
      R"({"status": "success", "data": {"resultType": 5, "result": []}})",
      R"({"status": "success", "data": {"resultType": "vector"}})",
      R"({"status": "success", "data": {"resultType": "vector", "result": {"value": [1, "2"]}}})",
      R"({"status": "success", "data": {"resultType": "vector", "result": [5]}})",
      R"({"status": "success", "data": {"resultType": "vector", "result": [["value"]]}})",
      R"({"status": "success", "data": {"resultType": "vector", "result": [{"value": "2"}]}})",
      R"({"status": "success", "data": {"resultType": "vector", "result": [{"value": [1]}]}})",
      Vector("true"),
      Vector("null"),
      Vector(R"({"v": 2})"),
      R"({"status": "success", "data": {"resultType": "scalar", "result": "2"}})",
      R"({"status": "success", "data": {"resultType": "scalar", "result": [1]}})",
      R"({"status": "success", "data": {"resultType": "matrix", "result": []}})",
      R"(["status", "success"])",
      R"("success")",
  };
  for (const std::string& body : cases) {
    absl::StatusOr<double> rate = RateFromPrometheus(body);
    EXPECT_TRUE(absl::IsInvalidArgument(rate.status())) << body << " -> " << rate.status();
  }
}

TEST(ControllerRateSourceTest, NonFiniteNegativeZeroAndHugeRatesAreRefused) {
  const std::vector<std::string> values = {
      "-3",       "0",         "-0.0",      "1e300",   "18446744073709551615",
      "1e999",    "\"NaN\"",   "\"nan\"",   "\"inf\"", "\"-Infinity\"",
      "\"+Inf\"", "\"1e400\"", "\"\"",      "\" \"",   "\"12abc\"",
      "\"0x10\"", "\"-5\"",    "\"1e300\"",
  };
  for (const std::string& v : values) {
    absl::StatusOr<double> json = RateFromJson(absl::StrCat(R"({"target_qps": )", v, "}"), "");
    EXPECT_TRUE(absl::IsInvalidArgument(json.status())) << v << " -> " << json.status();
    absl::StatusOr<double> prometheus = RateFromPrometheus(Vector(v));
    EXPECT_TRUE(absl::IsInvalidArgument(prometheus.status())) << v << " -> " << prometheus.status();
  }
  EXPECT_THAT(RateFromJson(R"({"target_qps": 2e7})", "").status().message(),
              HasSubstr("above the limit"));
  EXPECT_DOUBLE_EQ(*RateFromJson(R"({"target_qps": 1e7})", ""), 1e7);
  EXPECT_DOUBLE_EQ(*RateFromPrometheus(Vector("\"0.5\"")), 0.5);
}

TEST(ControllerRateSourceTest, DeepAndEnormousAnswersAreRefused) {
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  EXPECT_THAT(RateFromJson(deep, "").status().message(), HasSubstr("nests deeper than"));
  EXPECT_THAT(RateFromPrometheus(deep).status().message(), HasSubstr("nests deeper than"));
  const std::string deep_field = absl::StrCat(R"({"target_qps": 5, "x": )", std::string(1000, '['),
                                              std::string(1000, ']'), "}");
  EXPECT_THAT(RateFromJson(deep_field, "").status().message(), HasSubstr("nests deeper than"));
  // Just within the limit is fine.
  std::string nested = "5";
  for (int i = 1; i < kMaxControllerAnswerDepth; ++i)
    nested = absl::StrCat(R"({"a":)", nested, "}");
  std::string path = "a";
  for (int i = 2; i < kMaxControllerAnswerDepth; ++i) absl::StrAppend(&path, ".a");
  EXPECT_DOUBLE_EQ(*RateFromJson(nested, path), 5);

  const std::string huge = absl::StrCat(R"({"target_qps": 5, "pad": ")",
                                        std::string(kMaxControllerAnswerBytes, 'x'), "\"}");
  EXPECT_THAT(RateFromJson(huge, "").status().message(), HasSubstr("larger than"));
  EXPECT_THAT(RateFromPrometheus(huge).status().message(), HasSubstr("larger than"));
}

TEST(ControllerRateSourceTest, ErrorsNeverCarryTheAnswer) {
  const std::string secret_string = absl::StrCat("\"", kSecret, "\"");
  const std::vector<std::string> json_answers = {
      absl::StrCat(R"({"target_qps": )", secret_string, "}"),
      absl::StrCat(R"({"target_qps": {"key": )", secret_string, "}}"),
      absl::StrCat(R"({"target_qps": [)", secret_string, "]}"),
      absl::StrCat(R"({"other": )", secret_string, "}"),
      absl::StrCat("not json ", kSecret),
      absl::StrCat(R"({"target_qps": "-1", "x": )", secret_string, "}"),
  };
  for (const std::string& body : json_answers) {
    absl::StatusOr<double> rate = RateFromJson(body, "");
    ASSERT_FALSE(rate.ok()) << body;
    EXPECT_THAT(rate.status().message(), Not(HasSubstr(kSecret))) << body;
  }
  const std::vector<std::string> prometheus_answers = {
      absl::StrCat(R"({"status": "error", "errorType": "bad_data", "error": )", secret_string, "}"),
      absl::StrCat(R"({"status": )", secret_string, "}"),
      Vector(secret_string),
      absl::StrCat(R"({"status": "success", "data": {"resultType": )", secret_string,
                   R"(, "result": []}})"),
  };
  for (const std::string& body : prometheus_answers) {
    absl::StatusOr<double> rate = RateFromPrometheus(body);
    ASSERT_FALSE(rate.ok()) << body;
    EXPECT_THAT(rate.status().message(), Not(HasSubstr(kSecret))) << body;
  }
}

TEST(ControllerRateSourceTest, FetchErrorsNameTheSourceAndHostPortOnly) {
  vanguard::v1::DirectControllerStrategy c;
  c.set_json_url("http://autoscaler.internal:9090/api/target?token=abc");
  c.set_json_field("qps");
  absl::StatusOr<double> bad =
      FetchControllerTarget(c, [](const std::string&) -> absl::StatusOr<std::string> {
        return absl::StrCat(R"({"qps": ")", kSecret, "\"}");
      });
  ASSERT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  EXPECT_THAT(bad.status().message(), HasSubstr("json_url"));
  EXPECT_THAT(bad.status().message(), HasSubstr("autoscaler.internal:9090"));
  EXPECT_THAT(bad.status().message(), HasSubstr("'qps'"));
  EXPECT_THAT(bad.status().message(), Not(HasSubstr("token=abc")));
  EXPECT_THAT(bad.status().message(), Not(HasSubstr(kSecret)));

  vanguard::v1::DirectControllerStrategy p;
  p.set_prometheus_url("http://prom:9090/api/v1/query?query=sum(rate(x[1m]))");
  absl::StatusOr<double> failed =
      FetchControllerTarget(p, [](const std::string&) -> absl::StatusOr<std::string> {
        return absl::StrCat(R"({"status":"error","error":")", kSecret, "\"}");
      });
  ASSERT_TRUE(absl::IsInvalidArgument(failed.status())) << failed.status();
  EXPECT_THAT(failed.status().message(), HasSubstr("prometheus_url: GET prom:9090: "));
  EXPECT_THAT(failed.status().message(), Not(HasSubstr(kSecret)));

  c.set_json_url("http://autoscaler/\r\nX-Injected: 1");
  bool fetched = false;
  absl::StatusOr<double> injected =
      FetchControllerTarget(c, [&](const std::string&) -> absl::StatusOr<std::string> {
        fetched = true;
        return std::string(R"({"qps": 1})");
      });
  EXPECT_TRUE(absl::IsInvalidArgument(injected.status())) << injected.status();
  EXPECT_FALSE(fetched);
}

TEST(ControllerRateSourceTest, HttpFetchShowsTheStatusButNotTheBodyOfAFailedAnswer) {
  const std::string body = absl::StrCat(R"({"error": ")", kSecret, "\"}");
  OneShotHttpServer server(absl::StrCat("HTTP/1.1 500 Internal Server Error\r\nContent-Length: ",
                                        body.size(), "\r\nConnection: close\r\n\r\n", body));
  absl::StatusOr<std::string> got =
      HttpFetch(absl::StrCat("http://127.0.0.1:", server.port(), "/target?token=abc"));
  ASSERT_TRUE(absl::IsUnavailable(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr(absl::StrCat("127.0.0.1:", server.port())));
  EXPECT_THAT(got.status().message(), HasSubstr("HTTP 500"));
  EXPECT_THAT(got.status().message(), Not(HasSubstr(kSecret)));
  EXPECT_THAT(got.status().message(), Not(HasSubstr("token=abc")));
}

TEST(ControllerRateSourceTest, AFetchedFieldValueNeverReachesTheError) {
  const std::string body = absl::StrCat(R"({"target_qps": ")", kSecret, "\"}");
  OneShotHttpServer server(absl::StrCat("HTTP/1.1 200 OK\r\nContent-Length: ", body.size(),
                                        "\r\nConnection: close\r\n\r\n", body));
  vanguard::v1::DirectControllerStrategy c;
  c.set_json_url(absl::StrCat("http://127.0.0.1:", server.port(), "/target"));
  absl::StatusOr<double> rate = FetchControllerTarget(c, HttpFetch);
  ASSERT_TRUE(absl::IsInvalidArgument(rate.status())) << rate.status();
  EXPECT_THAT(rate.status().message(), HasSubstr(absl::StrCat("127.0.0.1:", server.port())));
  EXPECT_THAT(rate.status().message(), Not(HasSubstr(kSecret)));
}

TEST(ControllerRateSourceTest, HttpFetchRefusesAnAnswerOverTheLimit) {
  OneShotHttpServer server(
      absl::StrCat("HTTP/1.1 200 OK\r\nContent-Length: ", kMaxControllerAnswerBytes + 1,
                   "\r\nConnection: close\r\n\r\n{\"target_qps\": 5"));
  absl::StatusOr<std::string> got =
      HttpFetch(absl::StrCat("http://127.0.0.1:", server.port(), "/"));
  EXPECT_TRUE(absl::IsResourceExhausted(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("larger than"));
}

TEST(ControllerRateSourceTest, AControllerUrlThePolicyRefusesIsNotFetched) {
  const std::string body = R"({"target_qps": 5})";
  OneShotHttpServer server(
      absl::StrCat("HTTP/1.1 200 OK\r\nContent-Length: ", body.size(), "\r\n\r\n", body));
  absl::StatusOr<TargetPolicy> policy = TargetPolicy::Parse("10.0.0.0/8,0.0.0.0/0:1");
  ASSERT_TRUE(policy.ok()) << policy.status();
  vanguard::v1::DirectControllerStrategy c;
  c.set_json_url(absl::StrCat("http://127.0.0.1:", server.port(), "/target?token=abc"));
  absl::StatusOr<double> rate = FetchControllerTarget(c, PolicyHttpFetcher(*policy));
  ASSERT_EQ(rate.status().code(), absl::StatusCode::kPermissionDenied) << rate.status();
  EXPECT_THAT(rate.status().message(), HasSubstr("json_url: "));
  EXPECT_THAT(rate.status().message(), HasSubstr(absl::StrCat("127.0.0.1:", server.port())));
  EXPECT_THAT(rate.status().message(), Not(HasSubstr("token=abc")));
  c.set_prometheus_url("http://169.254.169.254/api/v1/query?query=x");
  rate = FetchControllerTarget(c, PolicyHttpFetcher(*policy));
  ASSERT_EQ(rate.status().code(), absl::StatusCode::kPermissionDenied) << rate.status();
  EXPECT_THAT(rate.status().message(), HasSubstr("prometheus_url: "));
  EXPECT_THAT(rate.status().message(), HasSubstr("never allowed"));
  // An allowed policy reaches the (one-shot) server, which the refusals left untouched.
  absl::StatusOr<TargetPolicy> loopback = TargetPolicy::Parse("127.0.0.0/8");
  c.set_json_url(absl::StrCat("http://127.0.0.1:", server.port(), "/target"));
  rate = FetchControllerTarget(c, PolicyHttpFetcher(*loopback));
  ASSERT_TRUE(rate.ok()) << rate.status();
  EXPECT_EQ(*rate, 5);
}

}  // namespace
}  // namespace vanguard::worker
