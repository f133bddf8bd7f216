// OrchestratorService against a real PostgreSQL ($VANGUARD_TEST_PG), through its plain
// methods: every validation rule gives INVALID_ARGUMENT naming the field; defaults and
// model resolution on submit; the worker protocol end to end; a lost database gives
// UNAVAILABLE and the service recovers when it is back.
#include "orchestrator/orchestrator_service.h"

#include <functional>
#include <string>
#include <vector>

#include "database_test_base.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard {
namespace {

using ::testing::HasSubstr;

class OrchestratorServiceTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    v1::RegisterModelRequest request;
    *request.mutable_model() = ValidModel();
    absl::StatusOr<v1::RegisterModelResponse> r = service_->RegisterModel(request);
    ASSERT_TRUE(r.ok()) << r.status();
  }

  v1::SubmitTestRequest ValidSubmit() {
    v1::SubmitTestRequest request;
    *request.mutable_spec() = ValidSpec();
    return request;
  }

  // A running test and its fencing token.
  std::pair<int64_t, int32_t> SubmitAndLease(const std::string& worker = "worker-1") {
    absl::StatusOr<v1::SubmitTestResponse> submitted = service_->SubmitTest(ValidSubmit());
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    v1::LeaseTestRequest lease;
    lease.set_worker_id(worker);
    absl::StatusOr<v1::LeaseTestResponse> leased = service_->LeaseTest(lease);
    EXPECT_TRUE(leased.ok() && leased->has_test()) << leased.status();
    if (!leased.ok()) return {0, 0};
    return {leased->test().id(), leased->attempt()};
  }
};

template <typename Request>
struct Rule {
  std::string expected;  // "field: rule" prefix the message must contain
  std::function<void(Request&)> breaks;
};

void ExpectInvalid(const absl::Status& status, const std::string& expected) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
      << "expected INVALID_ARGUMENT '" << expected << "', got " << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(expected));
}

TEST_F(OrchestratorServiceTest, RegisterModelRulesNameTheField) {
  std::vector<Rule<v1::RegisterModelRequest>> rules = {
      {"model: must be set", [](auto& r) { r.clear_model(); }},
      {"model.name: must not be empty", [](auto& r) { r.mutable_model()->clear_name(); }},
      {"model.name: may contain only", [](auto& r) { r.mutable_model()->set_name("a b"); }},
      {"model.name: must be at most 200",
       [](auto& r) { r.mutable_model()->set_name(std::string(201, 'a')); }},
      {"model.version: must not be empty", [](auto& r) { r.mutable_model()->clear_version(); }},
      {"model.version: must not contain", [](auto& r) { r.mutable_model()->set_version("v/1"); }},
      {"model.protocol: must be a known protocol",
       [](auto& r) { r.mutable_model()->set_protocol(static_cast<v1::Protocol>(42)); }},
      {"model.endpoints: must list at least one",
       [](auto& r) { r.mutable_model()->clear_endpoints(); }},
      {"model.endpoints[0]: must be an http(s) URL",
       [](auto& r) { r.mutable_model()->set_endpoints(0, "127.0.0.1:8000"); }},
      {"model.endpoints[1]: must be an http(s) URL",
       [](auto& r) { r.mutable_model()->add_endpoints("localhost"); }},
      {"model.served_name: must not contain",
       [](auto& r) { r.mutable_model()->set_served_name("a/b"); }},
      {"model.hardware.accelerator_count: must be >= 0",
       [](auto& r) { r.mutable_model()->mutable_hardware()->set_accelerator_count(-1); }},
      {"model.slo.p99_latency: must be set",
       [](auto& r) { r.mutable_model()->mutable_slo()->clear_p99_latency(); }},
      {"model.slo.p99_latency: must be > 0",
       [](auto& r) {
         r.mutable_model()->mutable_slo()->mutable_p99_latency()->set_seconds(0);
         r.mutable_model()->mutable_slo()->mutable_p99_latency()->set_nanos(0);
       }},
      {"model.slo.p99_latency: must be > 0",
       [](auto& r) {
         r.mutable_model()->mutable_slo()->mutable_p99_latency()->set_seconds(-1);
         r.mutable_model()->mutable_slo()->mutable_p99_latency()->set_nanos(0);
       }},
      {"model.slo.p50_latency: must be >= 0",
       [](auto& r) { r.mutable_model()->mutable_slo()->mutable_p50_latency()->set_seconds(-1); }},
      {"model.slo.max_error_rate: must be between 0 and 1",
       [](auto& r) { r.mutable_model()->mutable_slo()->set_max_error_rate(1.5); }},
      {"model.slo.min_achieved_ratio: must be between 0 and 1",
       [](auto& r) { r.mutable_model()->mutable_slo()->set_min_achieved_ratio(-0.1); }},
      {"model.default_warmup: must be >= 0",
       [](auto& r) { r.mutable_model()->mutable_default_warmup()->set_seconds(-3); }},
      {"model.labels: keys must not be empty",
       [](auto& r) { (*r.mutable_model()->mutable_labels())[""] = "x"; }},
  };
  // Where load and scrapes would go: metadata targets are refused even without a policy.
  rules.push_back({"model.endpoints[0]: target 169.254.169.254:80 is refused", [](auto& r) {
                     r.mutable_model()->set_endpoints(0,
                                                      "http://169.254.169.254/latest/meta-data/");
                   }});
  rules.push_back(
      {"model.labels[\"metrics.url\"]: target metadata.google.internal:80", [](auto& r) {
         (*r.mutable_model()->mutable_labels())["metrics.url"] =
             "http://metadata.google.internal/computeMetadata/v1/";
       }});
  for (const auto& rule : rules) {
    v1::RegisterModelRequest request;
    *request.mutable_model() = ValidModel("fresh", "v1");
    rule.breaks(request);
    ExpectInvalid(service_->RegisterModel(request).status(), rule.expected);
  }
  // None of the invalid requests got stored.
  v1::ListModelsRequest list;
  absl::StatusOr<v1::ListModelsResponse> models = service_->ListModels(list);
  ASSERT_TRUE(models.ok());
  EXPECT_EQ(models->models_size(), 1);
}

TEST_F(OrchestratorServiceTest, SubmitTestRulesNameTheField) {
  const std::vector<Rule<v1::SubmitTestRequest>> rules = {
      {"spec: must be set", [](auto& r) { r.clear_spec(); }},
      {"spec.model: must not be empty", [](auto& r) { r.mutable_spec()->clear_model(); }},
      {"spec.strategy: must be set", [](auto& r) { r.mutable_spec()->clear_sweep(); }},
      {"spec.sweep: min_qps must be > 0 and < max_qps",
       [](auto& r) {
         auto* sweep = r.mutable_spec()->mutable_sweep();
         sweep->clear_rates_qps();
         sweep->set_min_qps(50);
         sweep->set_max_qps(10);
         sweep->set_steps(3);
       }},
      {"spec.sweep: min_qps must be > 0 and < max_qps",
       [](auto& r) { r.mutable_spec()->mutable_sweep()->clear_rates_qps(); }},
      {"spec.sweep.steps: must be between 2 and 1000",
       [](auto& r) {
         auto* sweep = r.mutable_spec()->mutable_sweep();
         sweep->clear_rates_qps();
         sweep->set_min_qps(10);
         sweep->set_max_qps(50);
         sweep->set_steps(1);
       }},
      {"spec.sweep: set either rates_qps or min_qps/max_qps/steps",
       [](auto& r) { r.mutable_spec()->mutable_sweep()->set_max_qps(50); }},
      {"spec.sweep.rates_qps[1]: must be > 0",
       [](auto& r) { r.mutable_spec()->mutable_sweep()->set_rates_qps(1, -5); }},
      {"spec.sweep.stop_after_failures: must be >= 0",
       [](auto& r) { r.mutable_spec()->mutable_sweep()->set_stop_after_failures(-1); }},
      {"spec.step_duration: must be > 0", [](auto& r) { r.mutable_spec()->clear_step_duration(); }},
      {"spec.step_duration: must be > 0",
       [](auto& r) { r.mutable_spec()->mutable_step_duration()->set_seconds(0); }},
      {"spec.step_duration: must be a valid duration",
       [](auto& r) { r.mutable_spec()->mutable_step_duration()->set_nanos(-1); }},
      {"spec.step_warmup: must be >= 0",
       [](auto& r) { r.mutable_spec()->mutable_step_warmup()->set_seconds(-1); }},
      {"spec.request_timeout: must be >= 0",
       [](auto& r) { r.mutable_spec()->mutable_request_timeout()->set_nanos(-5); }},
      {"spec.schedule: must be a known schedule",
       [](auto& r) { r.mutable_spec()->set_schedule(static_cast<v1::Schedule>(9)); }},
      {"spec.max_attempts: must be between 0",
       [](auto& r) { r.mutable_spec()->set_max_attempts(-1); }},
      {"spec.labels: keys must not be empty",
       [](auto& r) {
         r.mutable_spec()->mutable_labels()->insert({"", "x"});
       }},
      {"request_id: must be at most 200", [](auto& r) { r.set_request_id(std::string(201, 'r')); }},
  };
  for (const auto& rule : rules) {
    v1::SubmitTestRequest request = ValidSubmit();
    rule.breaks(request);
    ExpectInvalid(service_->SubmitTest(request).status(), rule.expected);
  }
  EXPECT_EQ(Sql("SELECT count(*) FROM tests")[0][0].as<int>(), 0);
}

TEST_F(OrchestratorServiceTest, LookupAndWorkerRequestRulesNameTheField) {
  ExpectInvalid(service_->GetModel(v1::GetModelRequest()).status(), "name: must not be empty");
  v1::ListModelsRequest list_models;
  list_models.set_page_size(-1);
  ExpectInvalid(service_->ListModels(list_models).status(), "page_size: must be >= 0");
  ExpectInvalid(service_->GetTest(v1::GetTestRequest()).status(), "id: must be > 0");
  ExpectInvalid(service_->CancelTest(v1::CancelTestRequest()).status(), "id: must be > 0");
  v1::ListTestsRequest list_tests;
  list_tests.set_state(static_cast<v1::TestState>(77));
  ExpectInvalid(service_->ListTests(list_tests).status(), "state: must be a known state");

  ExpectInvalid(service_->LeaseTest(v1::LeaseTestRequest()).status(),
                "worker_id: must not be empty");
  v1::LeaseTestRequest lease;
  lease.set_worker_id("w");
  lease.mutable_lease_duration()->set_seconds(-1);
  ExpectInvalid(service_->LeaseTest(lease).status(), "lease_duration: must be >= 0");
  lease.mutable_lease_duration()->set_seconds(7200);
  ExpectInvalid(service_->LeaseTest(lease).status(), "lease_duration: must be at most");

  v1::HeartbeatRequest heartbeat;
  ExpectInvalid(service_->Heartbeat(heartbeat).status(), "test_id: must be > 0");
  heartbeat.set_test_id(1);
  ExpectInvalid(service_->Heartbeat(heartbeat).status(), "attempt: must be > 0");
  heartbeat.set_attempt(1);
  ExpectInvalid(service_->Heartbeat(heartbeat).status(), "worker_id: must not be empty");

  v1::ReportStepRequest report;
  report.set_test_id(1);
  report.set_attempt(1);
  ExpectInvalid(service_->ReportStep(report).status(), "step: must be set");
  const std::vector<Rule<v1::Step>> step_rules = {
      {"step.index: must be >= 0", [](auto& s) { s.set_index(-1); }},
      {"step.target_qps: must be > 0", [](auto& s) { s.set_target_qps(0); }},
      {"step.achieved_qps: must be >= 0", [](auto& s) { s.set_achieved_qps(-1); }},
      {"step.error_rate: must be between 0 and 1", [](auto& s) { s.set_error_rate(2); }},
      {"step.latency: percentiles must be >= 0",
       [](auto& s) { s.mutable_latency()->set_p99_ms(-1); }},
      {"step.scheduled: must be >= 0", [](auto& s) { s.set_scheduled(-1); }},
      {"step.timeouts: must be >= 0", [](auto& s) { s.set_timeouts(-1); }},
      {"step.health_state: must be a known",
       [](auto& s) { s.set_health_state(static_cast<v1::HealthState>(50)); }},
      {"step.duration: must be >= 0", [](auto& s) { s.mutable_duration()->set_seconds(-1); }},
  };
  for (const auto& rule : step_rules) {
    *report.mutable_step() = ValidStep(0, 10);
    rule.breaks(*report.mutable_step());
    ExpectInvalid(service_->ReportStep(report).status(), rule.expected);
  }

  v1::ReleaseTestRequest release;
  ExpectInvalid(service_->ReleaseTest(release).status(), "test_id: must be > 0");
  release.set_test_id(1);
  ExpectInvalid(service_->ReleaseTest(release).status(), "attempt: must be > 0");
  release.set_attempt(1);
  ExpectInvalid(service_->ReleaseTest(release).status(), "worker_id: must not be empty");
  release.set_worker_id("w");
  release.set_reason(std::string(1001, 'x'));
  ExpectInvalid(service_->ReleaseTest(release).status(), "reason: must be at most 1000");

  v1::CompleteTestRequest complete;
  complete.set_test_id(1);
  complete.set_attempt(1);
  ExpectInvalid(service_->CompleteTest(complete).status(), "outcome: must set result or error");
  complete.set_error("");
  ExpectInvalid(service_->CompleteTest(complete).status(), "error: must not be empty");
  complete.mutable_result()->set_max_sustainable_qps(-1);
  ExpectInvalid(service_->CompleteTest(complete).status(),
                "result.max_sustainable_qps: must be >= 0");
}

TEST_F(OrchestratorServiceTest, TargetsOutsideTheOperatorsPolicyAreRefusedAndNotStored) {
  OrchestratorService::Options options;
  absl::StatusOr<TargetPolicy> policy = TargetPolicy::Parse("127.0.0.0/8,*.svc.cluster.local");
  ASSERT_TRUE(policy.ok()) << policy.status();
  options.target_policy = *policy;
  OrchestratorService guarded(models_.get(), tests_.get(), options);

  v1::RegisterModelRequest model;
  *model.mutable_model() = ValidModel("guarded", "v1");
  model.mutable_model()->add_endpoints("http://10.0.0.5:8000");
  ExpectInvalid(guarded.RegisterModel(model).status(), "model.endpoints[1]: target 10.0.0.5:8000");
  model.mutable_model()->set_endpoints(1, "http://pred.ns.svc.cluster.local:8000");
  EXPECT_TRUE(guarded.RegisterModel(model).ok());

  v1::SubmitTestRequest submit = ValidSubmit();
  submit.mutable_spec()->mutable_direct_controller()->set_json_url(
      "http://autoscaler.example.com/target?token=SECRET");
  absl::Status refused = guarded.SubmitTest(submit).status();
  ExpectInvalid(refused, "spec.direct_controller.json_url: target autoscaler.example.com:80");
  EXPECT_THAT(std::string(refused.message()), ::testing::Not(HasSubstr("SECRET")));
  // Without a policy the same URL is accepted, the metadata address is not.
  EXPECT_TRUE(service_->SubmitTest(submit).ok());
  submit.mutable_spec()->mutable_direct_controller()->set_prometheus_url(
      "http://[fd00:ec2::254]/api/v1/query?query=x");
  ExpectInvalid(service_->SubmitTest(submit).status(),
                "spec.direct_controller.prometheus_url: target [fd00:ec2::254]:80 is refused");
  EXPECT_EQ(SqlParams("SELECT count(*) FROM tests")[0][0].as<int>(), 1);
}

TEST_F(OrchestratorServiceTest, SubmitResolvesTheModelAndFillsDefaults) {
  absl::StatusOr<v1::SubmitTestResponse> r = service_->SubmitTest(ValidSubmit());
  ASSERT_TRUE(r.ok()) << r.status();
  const v1::Test& test = r->test();
  EXPECT_EQ(test.state(), v1::TEST_STATE_QUEUED);
  EXPECT_EQ(test.spec().model_version(), "v1") << "latest version pinned";
  EXPECT_EQ(test.spec().max_attempts(), 3);
  EXPECT_EQ(test.spec().request_timeout().seconds(), 10);
  EXPECT_EQ(test.spec().step_warmup().seconds(), 7) << "the model's default_warmup";
  EXPECT_EQ(test.model().name(), "resnet50");
  EXPECT_EQ(test.model().version(), "v1");
  EXPECT_EQ(test.model().served_name(), "resnet50") << "served_name defaults to name";

  // Explicit values win; a newer version becomes the latest.
  v1::RegisterModelRequest v2;
  *v2.mutable_model() = ValidModel("resnet50", "v2");
  ASSERT_TRUE(service_->RegisterModel(v2).ok());
  v1::SubmitTestRequest explicit_request = ValidSubmit();
  explicit_request.mutable_spec()->mutable_step_warmup()->set_seconds(0);
  explicit_request.mutable_spec()->set_max_attempts(5);
  explicit_request.mutable_spec()->mutable_request_timeout()->set_seconds(2);
  absl::StatusOr<v1::SubmitTestResponse> e = service_->SubmitTest(explicit_request);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->test().spec().model_version(), "v2");
  EXPECT_EQ(e->test().model().version(), "v2");
  EXPECT_EQ(e->test().spec().step_warmup().seconds(), 0);
  EXPECT_TRUE(e->test().spec().has_step_warmup());
  EXPECT_EQ(e->test().spec().max_attempts(), 5);
  EXPECT_EQ(e->test().spec().request_timeout().seconds(), 2);
  // The stored max_attempts column follows the spec (the reaper reads it).
  EXPECT_EQ(
      SqlParams("SELECT max_attempts FROM tests WHERE id = $1", e->test().id())[0][0].as<int>(), 5);

  // A model whose SLO allows a request 12 s: the default timeout leaves room past it (a
  // request cut off at 10 s would count as an error though it met the limit), and an explicit
  // timeout at or under it is refused.
  v1::RegisterModelRequest slow;
  *slow.mutable_model() = ValidModel("slow", "v1");
  slow.mutable_model()->mutable_slo()->mutable_p99_latency()->set_seconds(12);
  slow.mutable_model()->mutable_slo()->mutable_p99_latency()->set_nanos(0);
  slow.mutable_model()->mutable_slo()->mutable_p50_latency()->set_seconds(3);
  ASSERT_TRUE(service_->RegisterModel(slow).ok());
  v1::SubmitTestRequest slow_submit = ValidSubmit();
  slow_submit.mutable_spec()->set_model("slow");
  slow_submit.set_request_id("slow-default");
  absl::StatusOr<v1::SubmitTestResponse> s = service_->SubmitTest(slow_submit);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->test().spec().request_timeout().seconds(), 15);  // 12 s x 1.25
  slow_submit.set_request_id("slow-explicit");
  slow_submit.mutable_spec()->mutable_request_timeout()->set_seconds(12);
  s = service_->SubmitTest(slow_submit);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("spec.request_timeout: must exceed the model's longest SLO latency limit "
                        "(12s), got 12s"));

  // A model registered without a default warmup gets kDefaultModelWarmup (2 s), and so do
  // its tests: without one a step has no settling and a cold model is not detected.
  v1::RegisterModelRequest bare;
  *bare.mutable_model() = ValidModel("bare", "v1");
  bare.mutable_model()->clear_default_warmup();
  absl::StatusOr<v1::RegisterModelResponse> b = service_->RegisterModel(bare);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->model().default_warmup().seconds(), 2);
  v1::SubmitTestRequest on_bare = ValidSubmit();
  on_bare.mutable_spec()->set_model("bare");
  absl::StatusOr<v1::SubmitTestResponse> bt = service_->SubmitTest(on_bare);
  ASSERT_TRUE(bt.ok()) << bt.status();
  EXPECT_EQ(bt->test().spec().step_warmup().seconds(), 2);

  // Pinned to an older version on request.
  v1::SubmitTestRequest pinned = ValidSubmit();
  pinned.mutable_spec()->set_model_version("v1");
  absl::StatusOr<v1::SubmitTestResponse> p = service_->SubmitTest(pinned);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->test().model().version(), "v1");
}

TEST_F(OrchestratorServiceTest, SubmitForAnUnknownModelIsNotFound) {
  v1::SubmitTestRequest request = ValidSubmit();
  request.mutable_spec()->set_model("no-such-model");
  EXPECT_EQ(service_->SubmitTest(request).status().code(), absl::StatusCode::kNotFound);
  request = ValidSubmit();
  request.mutable_spec()->set_model_version("v404");
  absl::Status s = service_->SubmitTest(request).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("v404"));
}

TEST_F(OrchestratorServiceTest, RegisterTwiceIsAlreadyExistsAndGetModelFindsLatest) {
  v1::RegisterModelRequest again;
  *again.mutable_model() = ValidModel();
  EXPECT_EQ(service_->RegisterModel(again).status().code(), absl::StatusCode::kAlreadyExists);
  v1::GetModelRequest get;
  get.set_name("resnet50");
  absl::StatusOr<v1::GetModelResponse> got = service_->GetModel(get);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->model().version(), "v1");
  EXPECT_EQ(got->model().protocol(), v1::PROTOCOL_KSERVE_V2_REST);
}

TEST_F(OrchestratorServiceTest, WorkerProtocolRunsATestToItsResult) {
  v1::SubmitTestRequest submit = ValidSubmit();
  submit.set_request_id("once");
  absl::StatusOr<v1::SubmitTestResponse> submitted = service_->SubmitTest(submit);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  absl::StatusOr<v1::SubmitTestResponse> resubmitted = service_->SubmitTest(submit);
  ASSERT_TRUE(resubmitted.ok());
  EXPECT_EQ(resubmitted->test().id(), submitted->test().id());

  v1::LeaseTestRequest lease;
  lease.set_worker_id("worker-1");
  absl::StatusOr<v1::LeaseTestResponse> leased = service_->LeaseTest(lease);
  ASSERT_TRUE(leased.ok()) << leased.status();
  ASSERT_TRUE(leased->has_test());
  EXPECT_EQ(leased->attempt(), 1);
  EXPECT_EQ(leased->test().model().slo().p99_latency().nanos(), 250'000'000);
  EXPECT_EQ(leased->test().spec().step_warmup().seconds(), 7);
  // Default lease is 10 s.
  double left =
      SqlParams(
          "SELECT extract(epoch FROM lease_expires_at - now())::float8 FROM tests WHERE id = $1",
          leased->test().id())[0][0]
          .as<double>();
  EXPECT_GT(left, 5);
  EXPECT_LE(left, 10);

  absl::StatusOr<v1::LeaseTestResponse> none = service_->LeaseTest(lease);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_test()) << "nothing else is queued";

  v1::HeartbeatRequest heartbeat;
  heartbeat.set_test_id(leased->test().id());
  heartbeat.set_attempt(leased->attempt());
  heartbeat.set_worker_id("worker-1");
  absl::StatusOr<v1::HeartbeatResponse> hb = service_->Heartbeat(heartbeat);
  ASSERT_TRUE(hb.ok()) << hb.status();
  EXPECT_FALSE(hb->cancel_requested());

  for (int i = 0; i < 2; ++i) {
    v1::ReportStepRequest report;
    report.set_test_id(leased->test().id());
    report.set_attempt(leased->attempt());
    *report.mutable_step() = ValidStep(i, 10.0 * (i + 1));
    ASSERT_TRUE(service_->ReportStep(report).ok());
  }
  v1::CompleteTestRequest complete;
  complete.set_test_id(leased->test().id());
  complete.set_attempt(leased->attempt());
  complete.mutable_result()->set_max_sustainable_qps(20);
  absl::StatusOr<v1::CompleteTestResponse> done = service_->CompleteTest(complete);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->test().state(), v1::TEST_STATE_SUCCEEDED);

  v1::GetTestRequest get;
  get.set_id(leased->test().id());
  absl::StatusOr<v1::GetTestResponse> got = service_->GetTest(get);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->test().steps_size(), 2);
  EXPECT_DOUBLE_EQ(got->test().result().max_sustainable_qps(), 20);

  // Stale fencing token through the service: FAILED_PRECONDITION.
  heartbeat.set_attempt(leased->attempt() + 5);
  EXPECT_EQ(service_->Heartbeat(heartbeat).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(OrchestratorServiceTest, ReleasedTestIsLeasedByAnotherWorkerAtOnce) {
  auto [id, attempt] = SubmitAndLease("worker-1");
  v1::ReleaseTestRequest release;
  release.set_test_id(id);
  release.set_attempt(attempt);
  release.set_worker_id("worker-1");
  release.set_reason("shutting down (signal 15)");
  absl::StatusOr<v1::ReleaseTestResponse> released = service_->ReleaseTest(release);
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_EQ(released->test().state(), v1::TEST_STATE_QUEUED);
  EXPECT_EQ(released->test().requeue_reason(),
            "lease released by worker worker-1: shutting down (signal 15)");

  v1::LeaseTestRequest lease;
  lease.set_worker_id("worker-2");
  absl::StatusOr<v1::LeaseTestResponse> leased = service_->LeaseTest(lease);
  ASSERT_TRUE(leased.ok()) << leased.status();
  ASSERT_TRUE(leased->has_test()) << "a released test must be leasable at once";
  EXPECT_EQ(leased->test().id(), id);
  EXPECT_EQ(leased->attempt(), attempt + 1);

  // A second release of the same (now stale) lease: FAILED_PRECONDITION, the new lease stays.
  absl::StatusOr<v1::ReleaseTestResponse> again = service_->ReleaseTest(release);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition) << again.status();
  v1::GetTestRequest get;
  get.set_id(id);
  absl::StatusOr<v1::GetTestResponse> got = service_->GetTest(get);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->test().state(), v1::TEST_STATE_RUNNING);
  EXPECT_EQ(got->test().lease_owner(), "worker-2");
}

TEST_F(OrchestratorServiceTest, CancelThroughTheServiceReachesTheHeartbeat) {
  auto [id, attempt] = SubmitAndLease();
  v1::CancelTestRequest cancel;
  cancel.set_id(id);
  absl::StatusOr<v1::CancelTestResponse> c = service_->CancelTest(cancel);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->test().cancel_requested());
  v1::HeartbeatRequest heartbeat;
  heartbeat.set_test_id(id);
  heartbeat.set_attempt(attempt);
  heartbeat.set_worker_id("worker-1");
  absl::StatusOr<v1::HeartbeatResponse> hb = service_->Heartbeat(heartbeat);
  ASSERT_TRUE(hb.ok()) << hb.status();
  EXPECT_TRUE(hb->cancel_requested());
}

TEST_F(OrchestratorServiceTest, UnreachableDatabaseIsUnavailableNotACrash) {
  absl::StatusOr<std::unique_ptr<PostgresPool>> pool =
      PostgresPool::Create({.conninfo = "host=127.0.0.1 port=1 user=nobody dbname=nothing",
                            .size = 2,
                            .connect_timeout = absl::Seconds(2)});
  ASSERT_TRUE(pool.ok());
  ModelRepository models(pool->get());
  TestRepository tests(pool->get());
  OrchestratorService service(&models, &tests);
  v1::GetModelRequest get;
  get.set_name("resnet50");
  EXPECT_EQ(service.GetModel(get).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(service.SubmitTest(ValidSubmit()).status().code(), absl::StatusCode::kUnavailable);
  v1::LeaseTestRequest lease;
  lease.set_worker_id("w");
  EXPECT_EQ(service.LeaseTest(lease).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(OrchestratorServiceTest, LostConnectionsGiveUnavailableThenTheServiceRecovers) {
  v1::GetModelRequest get;
  get.set_name("resnet50");
  ASSERT_TRUE(service_->GetModel(get).ok());  // the pool now holds an open connection

  // The database drops every session (as in a failover or restart).
  absl::StatusOr<std::string> maintenance = testing::MaintenanceConninfo();
  ASSERT_TRUE(maintenance.ok());
  {
    pqxx::connection admin(*maintenance);
    pqxx::nontransaction txn(admin);
    pqxx::result killed = txn.exec_params(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE datname = $1 AND pid <> pg_backend_pid()",
        db_->name());
    ASSERT_GE(killed.size(), 1u);
  }
  // Calls that hit a dead connection fail cleanly with UNAVAILABLE; at most one per pooled
  // connection does, after which fresh connections serve requests again.
  int unavailable = 0;
  bool recovered = false;
  for (int i = 0; i < 10 && !recovered; ++i) {
    absl::StatusOr<v1::GetModelResponse> r = service_->GetModel(get);
    if (r.ok()) {
      recovered = true;
    } else {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
      ++unavailable;
    }
  }
  EXPECT_TRUE(recovered);
  EXPECT_GE(unavailable, 1) << "the dead connection should have been noticed";
}

}  // namespace
}  // namespace vanguard
