// Unit tests for the validation rules that need no database: duration and URL edge cases.
// Every rule is also exercised through OrchestratorService in
// tests/integration/orchestrator_service_test.cc.
#include "orchestrator/validation.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard {
namespace {

using ::testing::HasSubstr;

google::protobuf::Duration Dur(int64_t seconds, int32_t nanos) {
  google::protobuf::Duration d;
  d.set_seconds(seconds);
  d.set_nanos(nanos);
  return d;
}

v1::Model ValidModel() {
  v1::Model m;
  m.set_name("resnet50");
  m.set_version("v1");
  m.add_endpoints("http://127.0.0.1:8000");
  m.mutable_slo()->mutable_p99_latency()->set_seconds(1);
  return m;
}

TEST(ValidateDurationTest, RejectsMalformedAndNegative) {
  EXPECT_TRUE(ValidateDuration(Dur(1, 0), "d", DurationRule::kPositive).ok());
  EXPECT_TRUE(ValidateDuration(Dur(0, 0), "d", DurationRule::kNonNegative).ok());
  EXPECT_THAT(ValidateDuration(Dur(0, 0), "x.d", DurationRule::kPositive).message(),
              HasSubstr("x.d: must be > 0"));
  EXPECT_THAT(ValidateDuration(Dur(-1, 0), "x.d", DurationRule::kNonNegative).message(),
              HasSubstr("x.d: must be >= 0"));
  EXPECT_THAT(ValidateDuration(Dur(1, -5), "x.d", DurationRule::kNonNegative).message(),
              HasSubstr("x.d: must be a valid duration"));
  EXPECT_THAT(ValidateDuration(Dur(0, 1'000'000'000), "x.d", DurationRule::kNonNegative).message(),
              HasSubstr("must be a valid duration"));
}

TEST(ValidateModelTest, AcceptsHttpAndHttpsEndpoints) {
  v1::Model m = ValidModel();
  m.add_endpoints("https://predictor.example.com/base");
  EXPECT_TRUE(ValidateModel(m).ok()) << ValidateModel(m);
}

TEST(ValidateModelTest, NamesTheBadEndpointByIndex) {
  for (const char* bad : {"127.0.0.1:8000", "ftp://x", "http://", "http://:80", "http://a b"}) {
    v1::Model m = ValidModel();
    m.add_endpoints(bad);
    absl::Status s = ValidateModel(m);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr("model.endpoints[1]: must be an http(s) URL")) << bad;
  }
}

TEST(ValidateModelTest, GrpcProtocolAcceptsHostPort) {
  v1::Model m = ValidModel();
  m.set_protocol(v1::PROTOCOL_KSERVE_V2_GRPC);
  m.add_endpoints("10.0.0.5:8001");
  EXPECT_TRUE(ValidateModel(m).ok());
  m.add_endpoints("10.0.0.5");
  EXPECT_THAT(ValidateModel(m).message(), HasSubstr("model.endpoints[2]: must be host:port"));
}

TEST(ValidateModelTest, RejectsUnknownProtocolValue) {
  v1::Model m = ValidModel();
  m.set_protocol(static_cast<v1::Protocol>(99));
  EXPECT_THAT(ValidateModel(m).message(), HasSubstr("model.protocol"));
}

TEST(ValidateTestSpecTest, RejectsNonFiniteRates) {
  v1::TestSpec spec;
  spec.set_model("m");
  spec.mutable_step_duration()->set_seconds(1);
  spec.mutable_sweep()->add_rates_qps(10);
  spec.mutable_sweep()->add_rates_qps(std::numeric_limits<double>::infinity());
  EXPECT_THAT(ValidateTestSpec(spec).message(), HasSubstr("spec.sweep.rates_qps[1]: must be > 0"));
  spec.mutable_sweep()->clear_rates_qps();
  spec.mutable_sweep()->set_min_qps(std::numeric_limits<double>::quiet_NaN());
  spec.mutable_sweep()->set_max_qps(10);
  spec.mutable_sweep()->set_steps(3);
  EXPECT_THAT(ValidateTestSpec(spec).message(),
              HasSubstr("spec.sweep: min_qps must be > 0 and < max_qps"));
}

v1::TestSpec BoundedSpec() {
  v1::TestSpec spec;
  spec.set_model("m");
  spec.mutable_step_duration()->set_seconds(1);
  spec.mutable_sweep()->add_rates_qps(10);
  return spec;
}

// A spec or model broken one way must be refused with INVALID_ARGUMENT naming the field.
template <typename Message>
struct Bound {
  std::string expected;
  std::function<void(Message&)> breaks;
};

void ExpectRefused(const absl::Status& status, const std::string& expected) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << expected << ": " << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(expected));
}

TEST(ValidateTestSpecTest, GlobalBoundsNameTheField) {
  ASSERT_TRUE(ValidateTestSpec(BoundedSpec()).ok()) << ValidateTestSpec(BoundedSpec());
  const std::vector<Bound<v1::TestSpec>> bounds = {
      {"spec.sweep.rates_qps[1]: must be a rate from 0 to",
       [](v1::TestSpec& s) { s.mutable_sweep()->add_rates_qps(2e7); }},
      {"spec.sweep.rates_qps: must list at most 1000",
       [](v1::TestSpec& s) {
         for (int i = 0; i < 1000; ++i) s.mutable_sweep()->add_rates_qps(1 + i);
       }},
      {"spec.step_duration: must be at most 24h",
       [](v1::TestSpec& s) { s.mutable_step_duration()->set_seconds(315'576'000'000); }},
      {"spec.step_warmup: must be at most 24h",
       [](v1::TestSpec& s) { s.mutable_step_warmup()->set_seconds(86401); }},
      {"spec.request_timeout: must be at most 10m",
       [](v1::TestSpec& s) { s.mutable_request_timeout()->set_seconds(601); }},
      {"spec.priority: must be from -1000 to 1000",
       [](v1::TestSpec& s) { s.set_priority(std::numeric_limits<int32_t>::max()); }},
      {"spec.replayers: must be between 0 (the worker chooses) and 1024",
       [](v1::TestSpec& s) { s.set_replayers(-1); }},
      {"spec.replayers: must be between 0 (the worker chooses) and 1024",
       [](v1::TestSpec& s) { s.set_replayers(1025); }},
      {"spec.priority: must be from -1000 to 1000",
       [](v1::TestSpec& s) { s.set_priority(std::numeric_limits<int32_t>::min()); }},
      {"spec.labels: must hold at most 64 labels",
       [](v1::TestSpec& s) {
         for (int i = 0; i < 65; ++i) (*s.mutable_labels())[absl::StrCat("k", i)] = "v";
       }},
      {"spec.labels: keys must be at most 128 bytes",
       [](v1::TestSpec& s) { (*s.mutable_labels())[std::string(129, 'k')] = "v"; }},
      {"spec.labels[\"k\"]: must be at most 1024 bytes",
       [](v1::TestSpec& s) { (*s.mutable_labels())["k"] = std::string(1025, 'v'); }},
      {"spec.binary_search.max_qps: must be a rate from 0 to",
       [](v1::TestSpec& s) {
         s.mutable_binary_search()->set_min_qps(1);
         s.mutable_binary_search()->set_max_qps(std::numeric_limits<double>::infinity());
       }},
      {"spec.binary_search.max_steps: must be from 0 to 1000",
       [](v1::TestSpec& s) { s.mutable_binary_search()->set_max_steps(1001); }},
      {"spec.adaptive.max_qps: must be a rate from 0 to",
       [](v1::TestSpec& s) { s.mutable_adaptive()->set_max_qps(1e300); }},
      {"spec.adaptive.convergence_cv: must be a number from 0 to",
       [](v1::TestSpec& s) {
         s.mutable_adaptive()->set_convergence_cv(std::numeric_limits<double>::quiet_NaN());
       }},
      {"spec.ladder.start_qps: must be a rate from 0 to",
       [](v1::TestSpec& s) { s.mutable_ladder()->set_start_qps(-1); }},
      {"spec.ladder.fine_step_fraction: must be a number from 0 to",
       [](v1::TestSpec& s) { s.mutable_ladder()->set_fine_step_fraction(-0.1); }},
      {"spec.direct_controller.target_qps: must be a rate from 0 to",
       [](v1::TestSpec& s) { s.mutable_direct_controller()->set_target_qps(1e8); }},
      {"spec.stability.rate_qps: must be a rate from 0 to",
       [](v1::TestSpec& s) { s.mutable_stability()->set_rate_qps(1e8); }},
      {"spec.stability.segments: must be from 0 to 1000",
       [](v1::TestSpec& s) {
         s.mutable_stability()->set_rate_qps(10);
         s.mutable_stability()->set_segments(std::numeric_limits<int32_t>::max());
       }},
      {"spec.autoscale.trace_rates[1].qps: must be a rate from 0 to",
       [](v1::TestSpec& s) {
         s.mutable_autoscale()->set_shape(v1::LOAD_SHAPE_TRACE);
         s.mutable_autoscale()->add_trace_rates()->mutable_duration()->set_seconds(60);
         s.mutable_autoscale()->add_trace_rates()->set_qps(-1);
       }},
      {"spec.autoscale.trace_rates[0].duration: must be > 0",
       [](v1::TestSpec& s) {
         s.mutable_autoscale()->set_shape(v1::LOAD_SHAPE_TRACE);
         s.mutable_autoscale()->add_trace_rates()->set_qps(1);
       }},
      {"spec.autoscale.trace_rates: must list at most 1000 buckets",
       [](v1::TestSpec& s) {
         s.mutable_autoscale()->set_shape(v1::LOAD_SHAPE_TRACE);
         for (int i = 0; i < 1001; ++i) s.mutable_autoscale()->add_trace_rates();
       }},
      {"spec.autoscale.trace_rates: must list the trace's buckets",
       [](v1::TestSpec& s) { s.mutable_autoscale()->set_shape(v1::LOAD_SHAPE_TRACE); }},
      {"spec.autoscale.trace_rates: is for LOAD_SHAPE_TRACE only",
       [](v1::TestSpec& s) { s.mutable_autoscale()->add_trace_rates()->set_qps(1); }},
  };
  for (const Bound<v1::TestSpec>& bound : bounds) {
    v1::TestSpec spec = BoundedSpec();
    bound.breaks(spec);
    ExpectRefused(ValidateTestSpec(spec), bound.expected);
  }
}

TEST(ValidateTestSpecTest, TheBoundsThemselvesAreAccepted) {
  v1::TestSpec spec = BoundedSpec();
  spec.mutable_sweep()->add_rates_qps(kMaxRateQps);
  spec.mutable_step_duration()->set_seconds(24 * 3600);
  spec.mutable_request_timeout()->set_seconds(600);
  spec.set_priority(kMaxPriority);
  spec.set_replayers(1024);
  for (int i = 0; i < kMaxLabels; ++i) (*spec.mutable_labels())[absl::StrCat("k", i)] = "v";
  EXPECT_TRUE(ValidateTestSpec(spec).ok()) << ValidateTestSpec(spec);
  spec.set_priority(kMinPriority);
  EXPECT_TRUE(ValidateTestSpec(spec).ok()) << ValidateTestSpec(spec);
}

TEST(ValidateModelTest, GlobalBoundsNameTheField) {
  const std::vector<Bound<v1::Model>> bounds = {
      {"model.request_template: must be at most 1048576 bytes",
       [](v1::Model& m) { m.set_request_template(std::string((1 << 20) + 1, 'x')); }},
      {"model.labels: must hold at most 64 labels",
       [](v1::Model& m) {
         for (int i = 0; i < 65; ++i) (*m.mutable_labels())[absl::StrCat("k", i)] = "v";
       }},
      {"model.labels[\"k\"]: must be at most 1024 bytes",
       [](v1::Model& m) { (*m.mutable_labels())["k"] = std::string(1025, 'v'); }},
      {"model.default_warmup: must be at most 24h",
       [](v1::Model& m) { m.mutable_default_warmup()->set_seconds(315'576'000'000); }},
      {"model.slo.p99_latency: must be at most 1h",
       [](v1::Model& m) { m.mutable_slo()->mutable_p99_latency()->set_seconds(3601); }},
      {"model.endpoints: must list at most 256 endpoints",
       [](v1::Model& m) {
         for (int i = 0; i < 256; ++i) m.add_endpoints("http://127.0.0.1:8000");
       }},
      {"model.endpoints[1]: must be at most 2048 bytes",
       [](v1::Model& m) { m.add_endpoints("http://h/" + std::string(2048, 'p')); }},
      {"model.framework: must be at most 200 characters",
       [](v1::Model& m) { m.set_framework(std::string(201, 'f')); }},
  };
  for (const Bound<v1::Model>& bound : bounds) {
    v1::Model model = ValidModel();
    bound.breaks(model);
    ExpectRefused(ValidateModel(model), bound.expected);
  }
}

TEST(ValidateProgressTest, AcceptsAStepInFlightAndRefusesNonFiniteOrNegativeFields) {
  v1::TestProgress p;
  p.set_step_index(3);
  p.set_offered_qps(400);
  p.set_health_state(v1::HEALTH_STATE_WARN);
  p.mutable_elapsed()->set_seconds(90);
  v1::StepWindow* w = p.add_windows();
  w->set_achieved_qps(399);
  w->mutable_latency()->set_p99_ms(45);
  w->mutable_duration()->set_nanos(500'000'000);
  EXPECT_TRUE(ValidateProgress(p).ok()) << ValidateProgress(p);

  v1::TestProgress bad = p;
  bad.set_offered_qps(std::numeric_limits<double>::quiet_NaN());
  EXPECT_THAT(ValidateProgress(bad).message(), HasSubstr("progress.offered_qps: must be >= 0"));
  bad = p;
  bad.set_step_errors(-1);
  EXPECT_THAT(ValidateProgress(bad).message(), HasSubstr("progress.step_errors"));
  bad = p;
  bad.mutable_windows(0)->mutable_latency()->set_p99_ms(std::numeric_limits<double>::infinity());
  EXPECT_THAT(ValidateProgress(bad).message(),
              HasSubstr("progress.windows[0].latency: percentiles must be >= 0"));
  bad = p;
  bad.mutable_windows(0)->set_censored(-2);
  EXPECT_THAT(ValidateProgress(bad).message(), HasSubstr("progress.windows[0].censored"));
  bad = p;
  bad.mutable_windows(0)->mutable_duration()->set_seconds(-1);
  EXPECT_THAT(ValidateProgress(bad).message(), HasSubstr("progress.windows[0].duration"));
  bad = p;
  bad.set_health_state(static_cast<v1::HealthState>(-4));
  EXPECT_THAT(ValidateProgress(bad).message(), HasSubstr("progress.health_state"));
}

v1::PlanCapacityRequest Plan(double peak_qps) {
  v1::PlanCapacityRequest request;
  request.set_model("resnet50");
  request.set_peak_qps(peak_qps);
  return request;
}

TEST(ValidatePlanCapacityRequestTest, AcceptsThePlannersUsualQuestions) {
  EXPECT_TRUE(ValidatePlanCapacityRequest(Plan(1000)).ok());
  v1::PlanCapacityRequest r = Plan(0.5);
  r.set_headroom(0);  // explicitly none
  r.set_survive_loss(0);
  EXPECT_TRUE(ValidatePlanCapacityRequest(r).ok());
  r.set_headroom(kMaxPlanHeadroom);
  r.set_survive_loss(kMaxPlanSurviveLoss);
  EXPECT_TRUE(ValidatePlanCapacityRequest(r).ok());
}

TEST(ValidatePlanCapacityRequestTest, NamesTheFieldAndRule) {
  v1::PlanCapacityRequest no_model = Plan(10);
  no_model.clear_model();
  EXPECT_THAT(ValidatePlanCapacityRequest(no_model).message(),
              HasSubstr("model: must not be empty"));
  EXPECT_THAT(ValidatePlanCapacityRequest(Plan(std::nan(""))).message(),
              HasSubstr("peak_qps: must be a number (got NaN)"));
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(), 2e9}) {
    absl::Status s = ValidatePlanCapacityRequest(Plan(bad));
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << bad;
    EXPECT_THAT(s.message(), HasSubstr("peak_qps: must be > 0")) << bad;
  }
  v1::PlanCapacityRequest r = Plan(10);
  r.set_headroom(std::nan(""));
  EXPECT_THAT(ValidatePlanCapacityRequest(r).message(),
              HasSubstr("headroom: must be a number (got NaN)"));
  for (double bad : {-0.1, std::numeric_limits<double>::infinity(), 101.0}) {
    r.set_headroom(bad);
    EXPECT_THAT(ValidatePlanCapacityRequest(r).message(),
                HasSubstr("headroom: must be a fraction >= 0"))
        << bad;
  }
  r.clear_headroom();
  r.set_survive_loss(-1);
  EXPECT_THAT(ValidatePlanCapacityRequest(r).message(), HasSubstr("survive_loss: must be >= 0"));
}

}  // namespace
}  // namespace vanguard

namespace vanguard {
namespace {

TargetPolicy Policy(const std::string& spec) {
  absl::StatusOr<TargetPolicy> policy = TargetPolicy::Parse(spec);
  EXPECT_TRUE(policy.ok()) << policy.status();
  return policy.ok() ? *policy : TargetPolicy::Default();
}

TEST(ValidateModelTargetsTest, MetadataEndpointsAreRefusedEvenWithoutAPolicy) {
  for (const char* bad :
       {"http://169.254.169.254/latest/meta-data/", "http://user:pw@169.254.169.254:80/x?y=z",
        "http://[fd00:ec2::254]/", "https://metadata.google.internal/computeMetadata/v1/",
        "http://[fe80::1]:8000", "http://2852039166/"}) {
    v1::Model m = ValidModel();
    m.add_endpoints(bad);
    absl::Status s = ValidateModelTargets(m, nullptr);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr("model.endpoints[1]: target ")) << bad;
    EXPECT_THAT(s.message(), HasSubstr("never allowed")) << bad;
    EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("meta-data"))) << bad;
    EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("pw"))) << bad;
  }
  EXPECT_TRUE(ValidateModelTargets(ValidModel(), nullptr).ok());
  v1::Model cluster = ValidModel();
  cluster.add_endpoints("http://predictor.default.svc.cluster.local:8080");
  EXPECT_TRUE(ValidateModelTargets(cluster, nullptr).ok());
}

TEST(ValidateModelTargetsTest, EndpointsAndTheMetricsUrlFollowThePolicy) {
  const TargetPolicy policy = Policy("127.0.0.0/8,*.svc.cluster.local:8000-9000");
  v1::Model m = ValidModel();
  m.add_endpoints("http://pred.ns.svc.cluster.local:8080/v2");
  m.set_protocol(v1::PROTOCOL_KSERVE_V2_GRPC);
  m.add_endpoints("pred.ns.svc.cluster.local:8001");
  EXPECT_TRUE(ValidateModelTargets(m, &policy).ok()) << ValidateModelTargets(m, &policy);

  m.add_endpoints("http://10.0.0.5:8080/v2?token=SECRET");
  absl::Status s = ValidateModelTargets(m, &policy);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("model.endpoints[3]: target 10.0.0.5:8080"));
  EXPECT_THAT(s.message(), HasSubstr("*.svc.cluster.local:8000-9000"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("SECRET")));

  v1::Model port = ValidModel();
  port.add_endpoints("http://pred.ns.svc.cluster.local/");  // port 80: outside 8000-9000
  EXPECT_THAT(ValidateModelTargets(port, &policy).message(),
              HasSubstr("model.endpoints[1]: target pred.ns.svc.cluster.local:80"));

  v1::Model metrics = ValidModel();
  (*metrics.mutable_labels())["metrics.url"] = "http://evil.example.com:8002/metrics";
  EXPECT_THAT(ValidateModelTargets(metrics, &policy).message(),
              HasSubstr("model.labels[\"metrics.url\"]: target evil.example.com:8002"));
  (*metrics.mutable_labels())["metrics.url"] = "http://127.0.0.1:8002/metrics";
  EXPECT_TRUE(ValidateModelTargets(metrics, &policy).ok());
}

TEST(ValidateTestTargetsTest, ControllerUrlsFollowThePolicy) {
  const TargetPolicy policy = Policy("10.0.0.0/8:9090");
  v1::TestSpec spec;
  spec.mutable_direct_controller()->set_json_url("http://169.254.169.254/latest/?field=x");
  absl::Status s = ValidateTestTargets(spec, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("spec.direct_controller.json_url: target 169.254.169.254:80"));
  EXPECT_THAT(s.message(), HasSubstr("never allowed"));

  spec.mutable_direct_controller()->set_prometheus_url(
      "http://prometheus.monitoring:9091/api/v1/query?query=x");
  s = ValidateTestTargets(spec, &policy);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      s.message(),
      HasSubstr("spec.direct_controller.prometheus_url: target prometheus.monitoring:9091"));
  EXPECT_THAT(s.message(), HasSubstr("10.0.0.0/8:9090"));
  spec.mutable_direct_controller()->set_prometheus_url("http://10.1.2.3:9090/api/v1/query?q=x");
  EXPECT_TRUE(ValidateTestTargets(spec, &policy).ok());
  spec.mutable_direct_controller()->set_target_qps(10);
  EXPECT_TRUE(ValidateTestTargets(spec, &policy).ok());
  spec.mutable_direct_controller()->set_json_url("http://[::1/");
  EXPECT_THAT(ValidateTestTargets(spec, &policy).message(),
              HasSubstr("spec.direct_controller.json_url: must name a host and a port"));
}

TEST(ValidateTestSpecTest, AReplicaLossSpecNeedsRatesAndARemovalUrl) {
  v1::TestSpec spec = BoundedSpec();
  v1::ReplicaLossStrategy* loss = spec.mutable_replica_loss();
  loss->set_min_qps(10);
  loss->set_max_qps(100);
  loss->set_remove_url("http://10.1.2.3:8000/admin/down?seconds=30");
  EXPECT_TRUE(ValidateTestSpec(spec).ok()) << ValidateTestSpec(spec);
  const std::vector<Bound<v1::ReplicaLossStrategy>> broken = {
      {"spec.replica_loss.min_qps: must be > 0", [](auto& r) { r.set_min_qps(0); }},
      {"spec.replica_loss.max_qps: must be > min_qps", [](auto& r) { r.set_max_qps(10); }},
      {"spec.replica_loss.max_qps: must be > min_qps",
       [](auto& r) { r.set_max_qps(std::nan("")); }},
      {"spec.replica_loss.remove_url: is required", [](auto& r) { r.clear_remove_url(); }},
      {"spec.replica_loss.after_loss", [](auto& r) { r.mutable_after_loss()->set_seconds(-1); }},
      {"spec.replica_loss.max_trials", [](auto& r) { r.set_max_trials(-1); }},
  };
  for (const auto& b : broken) {
    v1::TestSpec copy = spec;
    b.breaks(*copy.mutable_replica_loss());
    ExpectRefused(ValidateTestSpec(copy), b.expected);
  }
}

TEST(ValidateTestTargetsTest, ReplicaLossHooksFollowThePolicy) {
  const TargetPolicy policy = Policy("10.0.0.0/8:8000");
  v1::TestSpec spec;
  spec.mutable_replica_loss()->set_remove_url("http://10.1.2.3:8000/admin/down?seconds=30");
  EXPECT_TRUE(ValidateTestTargets(spec, &policy).ok());
  spec.mutable_replica_loss()->set_restore_url("http://192.168.1.1:8000/admin/up");
  ExpectRefused(ValidateTestTargets(spec, &policy), "spec.replica_loss.restore_url: target");
  spec.mutable_replica_loss()->set_remove_url("http://169.254.169.254/latest");
  ExpectRefused(ValidateTestTargets(spec, nullptr), "spec.replica_loss.remove_url: target");
}

TEST(ValidateTestSpecTest, AVersionTransitionSpecNeedsRatesAndRestartUrls) {
  v1::TestSpec spec = BoundedSpec();
  v1::VersionTransitionStrategy* transition = spec.mutable_version_transition();
  transition->set_min_qps(10);
  transition->set_max_qps(100);
  transition->add_restart_urls("http://10.1.2.3:8000/admin/restart?factor=4");
  transition->add_restart_urls("http://10.1.2.4:8000/admin/restart?factor=4");
  EXPECT_TRUE(ValidateTestSpec(spec).ok()) << ValidateTestSpec(spec);
  const std::vector<Bound<v1::VersionTransitionStrategy>> broken = {
      {"spec.version_transition.min_qps: must be > 0", [](auto& v) { v.set_min_qps(0); }},
      {"spec.version_transition.max_qps: must be > min_qps", [](auto& v) { v.set_max_qps(10); }},
      {"spec.version_transition.restart_urls: is required",
       [](auto& v) { v.clear_restart_urls(); }},
      {"spec.version_transition.restart_urls[1]: must be 1 to",
       [](auto& v) { v.set_restart_urls(1, ""); }},
      {"spec.version_transition.restart_urls: must list at most",
       [](auto& v) {
         for (int i = 0; i < kMaxEndpoints; ++i) v.add_restart_urls("http://10.1.2.3:8000/");
       }},
      {"spec.version_transition.per_replica",
       [](auto& v) { v.mutable_per_replica()->set_seconds(-1); }},
      {"spec.version_transition.max_recovery",
       [](auto& v) { v.mutable_max_recovery()->set_seconds(-1); }},
      {"spec.version_transition.max_trials", [](auto& v) { v.set_max_trials(-1); }},
  };
  for (const auto& b : broken) {
    v1::TestSpec copy = spec;
    b.breaks(*copy.mutable_version_transition());
    ExpectRefused(ValidateTestSpec(copy), b.expected);
  }
}

TEST(ValidateTestTargetsTest, VersionTransitionRestartUrlsFollowThePolicy) {
  const TargetPolicy policy = Policy("10.0.0.0/8:8000");
  v1::TestSpec spec;
  spec.mutable_version_transition()->add_restart_urls("http://10.1.2.3:8000/admin/restart");
  EXPECT_TRUE(ValidateTestTargets(spec, &policy).ok());
  spec.mutable_version_transition()->add_restart_urls("http://192.168.1.1:8000/admin/restart");
  ExpectRefused(ValidateTestTargets(spec, &policy),
                "spec.version_transition.restart_urls[1]: target");
}

}  // namespace
}  // namespace vanguard
