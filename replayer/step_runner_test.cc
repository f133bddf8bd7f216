// StepRunner against an in-process HTTP server (FakeHttpServer, its own thread). These
// tests assert counts and orderings; timing bounds are only ones a stall guarantees
// (a response held 300 ms cannot have a latency below 300 ms), never upper bounds a noisy
// machine could break.
#include "replayer/step_runner.h"

#include <sys/resource.h>

#include <atomic>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/histogram.h"
#include "common/target_policy.h"
#include "gtest/gtest.h"
#include "replayer/load_loop.h"
#include "replayer/open_files.h"
#include "replayer/testing/fake_http_server.h"
#include "replayer/testing/fake_proc_reader.h"

namespace vanguard::replayer {
namespace {

using testing::FakeHttpServer;

v1::RunStepRequest Request(const FakeHttpServer& server, double rate, absl::Duration duration,
                           absl::Duration warmup = absl::ZeroDuration()) {
  v1::RunStepRequest r;
  r.set_target(server.url());
  r.set_protocol(v1::PROTOCOL_KSERVE_V2_REST);
  r.set_model_name("fake");
  r.set_rate_qps(rate);
  r.mutable_duration()->set_seconds(absl::ToInt64Seconds(duration));
  r.mutable_duration()->set_nanos(
      static_cast<int32_t>(absl::ToInt64Nanoseconds(duration % absl::Seconds(1))));
  r.mutable_warmup()->set_seconds(absl::ToInt64Seconds(warmup));
  r.mutable_warmup()->set_nanos(
      static_cast<int32_t>(absl::ToInt64Nanoseconds(warmup % absl::Seconds(1))));
  return r;
}

void SetTimeout(v1::RunStepRequest& r, absl::Duration timeout) {
  r.mutable_request_timeout()->set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(timeout)));
}

struct Outcome {
  absl::StatusOr<v1::StepResult> result;
  std::vector<v1::WindowMetrics> windows;
};

Outcome RunStep(const v1::RunStepRequest& request) {
  Outcome outcome;
  StepRunner runner;
  outcome.result = runner.Run(
      request,
      [&](const v1::WindowMetrics& w) {
        outcome.windows.push_back(w);
        return true;
      },
      [] { return false; });
  return outcome;
}

TEST(StepRunnerTest, ReportsTheClientsConditionsFromProcOverTheMeasuredPart) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{}; });
  testing::FakeProcReader proc;
  // Each reading of a counter is a multiple of the first: the loop's two readings differ by
  // one first reading (5 ms on the run queue, 7 involuntary switches).
  proc.SetFile("/proc/thread-self/schedstat", "1000000 5000000 40\n", /*advancing=*/true);
  proc.SetFile("/proc/thread-self/status",
               "voluntary_ctxt_switches:\t100\nnonvoluntary_ctxt_switches:\t7\n",
               /*advancing=*/true);
  proc.SetDirectory("/proc/self/task", {"1"});
  proc.SetFile("/proc/self/task/1/schedstat", "2000000 3000000 10\n", /*advancing=*/true);
  proc.SetFile("/proc/self/task/1/status",
               "voluntary_ctxt_switches:\t10\nnonvoluntary_ctxt_switches:\t2\n",
               /*advancing=*/true);
  proc.SetFile("/proc/stat", "cpu  300 0 100 500 100 0 0 0 0 0\ncpu0 1\ncpu1 1\n",
               /*advancing=*/true);
  StepRunner runner(&proc);
  absl::StatusOr<v1::StepResult> r =
      runner.Run(Request(server, 50, absl::Milliseconds(500), absl::Milliseconds(100)), nullptr,
                 [] { return false; });
  ASSERT_TRUE(r.ok()) << r.status();
  const v1::ClientConditions& c = r->client_conditions();
  EXPECT_TRUE(c.scheduler_known());
  EXPECT_EQ(c.loop_run_queue_wait().nanos(), 5'000'000);
  EXPECT_EQ(c.loop_nonvoluntary_switches(), 7);
  EXPECT_EQ(c.loop_timeslices(), 40);
  EXPECT_EQ(c.other_run_queue_wait().nanos(), 3'000'000);
  EXPECT_EQ(c.other_nonvoluntary_switches(), 2);
  EXPECT_EQ(c.machine_cpus(), 2);
  EXPECT_DOUBLE_EQ(c.machine_busy_cores(), 2.0 * 400 / 1000);
  EXPECT_GT(c.wakeups(), 0);  // the loop slept between sends
}

TEST(StepRunnerTest, UnreadableProcLeavesTheSchedulerUnknownAndTheStepRuns) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{}; });
  testing::FakeProcReader proc;  // holds nothing: every read is NOT_FOUND
  StepRunner runner(&proc);
  absl::StatusOr<v1::StepResult> r =
      runner.Run(Request(server, 50, absl::Milliseconds(300)), nullptr, [] { return false; });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->client_conditions().scheduler_known());
  EXPECT_NE(r->client_conditions().unknown_reason().find("NOT_FOUND"), std::string::npos)
      << r->client_conditions().unknown_reason();
  EXPECT_EQ(r->client_conditions().machine_cpus(), 0);
  EXPECT_EQ(r->scheduled(), 15);
}

TEST(StepRunnerTest, HoldsTheRateAgainstAFastServer) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{}; });
  Outcome o = RunStep(Request(server, 200, absl::Seconds(2), absl::Milliseconds(500)));
  ASSERT_TRUE(o.result.ok()) << o.result.status();
  const v1::StepResult& r = *o.result;
  EXPECT_EQ(r.scheduled(), 400);  // 200/s over the 2 s measured part, warmup excluded
  EXPECT_NEAR(r.completed(), 400, 12);
  EXPECT_EQ(r.errors(), 0);
  EXPECT_EQ(r.timeouts(), 0);
  EXPECT_EQ(r.dropped(), 0);
  EXPECT_TRUE(r.errors_by_class().empty());
  EXPECT_NEAR(r.achieved_qps(), 200, 6);
  EXPECT_GT(r.latency().p50_ms(), 0);
  EXPECT_LE(r.latency().p50_ms(), r.latency().p99_ms());
  EXPECT_LE(r.latency().p99_ms(), r.latency().max_ms());
  EXPECT_LT(r.latency().p50_ms(), 1000);  // far below the 10 s timeout
  // Measured from the intended time, latency includes the client's own lateness.
  EXPECT_GE(r.latency().max_ms(), r.service_latency().max_ms() * 0.99);
  EXPECT_EQ(r.measured().seconds(), 2);
  // Everything sent in warmup and measured part reached the server.
  EXPECT_EQ(server.requests_received(), 500);
  // Keep-alive: connections were reused. How many were open at once depends on how the
  // machine scheduled the client and the server (a 1.3 s stall of either leaves 256 requests
  // needing a connection at once: the default cap), so no bound on it here;
  // TheConnectionCapQueuesRequestsInsideTheClient and LoadLoopTest's closed-loop test pin the
  // count where the concurrency is fixed.
  EXPECT_LT(server.connections_accepted(), server.requests_received());

  // One warmup window [0, 0.5 s), then two measured windows, streamed in order.
  ASSERT_EQ(o.windows.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(o.windows[i].index(), i);
  EXPECT_TRUE(o.windows[0].warmup());
  EXPECT_EQ(o.windows[0].scheduled(), 100);
  EXPECT_FALSE(o.windows[1].warmup());
  EXPECT_EQ(o.windows[1].scheduled() + o.windows[2].scheduled(), 400);
  EXPECT_DOUBLE_EQ(o.windows[1].offered_qps(), 200);
}

TEST(StepRunnerTest, ServerErrorsAreCountedByClassAndNotAsCompletions) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{.status = 500}; });
  Outcome o = RunStep(Request(server, 100, absl::Milliseconds(300)));
  ASSERT_TRUE(o.result.ok()) << o.result.status();
  const v1::StepResult& r = *o.result;
  EXPECT_EQ(r.scheduled(), 30);
  EXPECT_EQ(r.completed(), 0);
  EXPECT_EQ(r.errors(), 30);
  EXPECT_EQ(r.timeouts(), 0);
  EXPECT_EQ(r.achieved_qps(), 0);
  ASSERT_EQ(r.errors_by_class().size(), 1u);
  EXPECT_EQ(r.errors_by_class().at("http_500"), 30);
  EXPECT_EQ(r.latency().max_ms(), 0);  // errors are not timed
}

TEST(StepRunnerTest, AServerThatNeverAnswersYieldsOnlyTimeouts) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{.never_answer = true}; });
  v1::RunStepRequest request = Request(server, 100, absl::Milliseconds(300));
  SetTimeout(request, absl::Milliseconds(200));
  Outcome o = RunStep(request);
  ASSERT_TRUE(o.result.ok()) << o.result.status();
  const v1::StepResult& r = *o.result;
  EXPECT_EQ(r.scheduled(), 30);
  // Every request times out whether or not it was written: one whose connection was not yet
  // up at its deadline (a loaded machine runs the loop late) times out unsent. So not "30
  // sent"; but some were, or the timeouts would say nothing about the server.
  EXPECT_GT(r.sent(), 0);
  EXPECT_LE(r.sent(), 30);
  EXPECT_EQ(r.timeouts(), 30);
  EXPECT_EQ(r.completed(), 0);
  EXPECT_EQ(r.errors(), 0);
  EXPECT_EQ(r.errors_by_class().at("timeout"), 30);
  int64_t window_timeouts = 0;
  for (const v1::WindowMetrics& w : o.windows) window_timeouts += w.timeouts();
  EXPECT_EQ(window_timeouts, 30);
}

TEST(StepRunnerTest, StuckConnectionsAreClosedAtTheTimeoutAndReplaced) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{.never_answer = true}; });
  v1::RunStepRequest request = Request(server, 100, absl::Milliseconds(300));
  SetTimeout(request, absl::Milliseconds(200));
  request.set_max_connections(2);
  Outcome o = RunStep(request);
  ASSERT_TRUE(o.result.ok()) << o.result.status();
  const v1::StepResult& r = *o.result;
  EXPECT_EQ(r.scheduled(), 30);
  EXPECT_EQ(r.timeouts(), 30);
  EXPECT_EQ(r.dropped(), 0);
  // A timed-out connection is never reused (its response could still arrive on it): the two
  // stuck connections were closed and replaced (reusing them, the client would never open a
  // third). Not "30 connections": each queued request gets its connection only 20 ms before
  // its own deadline, so a loop running late lets some expire in the queue without one.
  EXPECT_GT(server.connections_accepted(), 2);
}

TEST(StepRunnerTest, TheConnectionCapQueuesRequestsInsideTheClientAndInvalidatesIt) {
  // Two connections, 50 ms per response: at most 40/s get through, 100/s are offered. The
  // rest wait in the client's FIFO rather than opening more connections, and that wait is
  // part of their latency. The model never saw the load asked for: the step is
  // client-invalid, naming the cap.
  FakeHttpServer server(
      [](int64_t) { return FakeHttpServer::Reply{.delay = absl::Milliseconds(50)}; });
  v1::RunStepRequest request = Request(server, 100, absl::Milliseconds(300));
  request.set_max_connections(2);
  Outcome o = RunStep(request);
  ASSERT_TRUE(o.result.ok()) << o.result.status();
  const v1::StepResult& r = *o.result;
  EXPECT_EQ(r.scheduled(), 30);
  EXPECT_EQ(r.completed(), 30);
  EXPECT_EQ(server.connections_accepted(), 2);
  // The last request (intended at 290 ms) is the 15th on its connection: done >= 750 ms.
  EXPECT_GE(r.latency().max_ms(), 450);
  EXPECT_GT(r.latency().p50_ms(), r.service_latency().p50_ms());
  EXPECT_GT(r.connection_waits(), 0);
  EXPECT_EQ(r.connection_cap(), 2);
  EXPECT_FALSE(r.client_valid());
  EXPECT_EQ(r.client_invalid_cause(), v1::CLIENT_INVALID_CAUSE_CONNECTION_CAP);
  EXPECT_FALSE(r.client_invalid_outside());
  EXPECT_NE(r.client_invalid_reason().find("waited for a free connection (all 2 of"),
            std::string::npos)
      << r.client_invalid_reason();
  // Waiting for a connection is not client send skew: the wait is in
  // a request's latency (from its intended time), not in its skew (intended to handed to the
  // client). On schedule, requests wait about 215 ms on average for one of the two
  // connections; a stalled loop only bunches its sends, which lengthens the wait. So on
  // average latency exceeds skew by the wait plus the ~50 ms service time, where counting
  // the wait as skew would leave the service time alone. (Whether the skew gate fired is not
  // asserted: a machine busy with other work can make the loop itself late.)
  auto skew = LatencyHistogram::Deserialize(r.send_skew_histogram());
  ASSERT_TRUE(skew.ok()) << skew.status();
  EXPECT_EQ(skew->count(), 30);
  EXPECT_GT(r.latency().mean_ms() - skew->mean() / 1000, 2 * r.service_latency().mean_ms())
      << "latency mean " << r.latency().mean_ms() << " ms, skew mean " << skew->mean() / 1000
      << " ms, service mean " << r.service_latency().mean_ms() << " ms";
}

TEST(StepRunnerTest, AConnectionCapAboveTheOpenFileLimitIsLoweredToIt) {
  // With the soft open-file limit at kReservedFiles + 3, a step may open 3 connections,
  // whatever it asked for: past them socket() would fail and read as the model's connect
  // errors; within them the requests wait and the step names the cap.
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
  rlimit low = before;
  low.rlim_cur = kReservedFiles + 3;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  FakeHttpServer server(
      [](int64_t) { return FakeHttpServer::Reply{.delay = absl::Milliseconds(50)}; });
  v1::RunStepRequest request = Request(server, 100, absl::Milliseconds(300));
  request.set_max_connections(1000);
  Outcome o = RunStep(request);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &before), 0);
  ASSERT_TRUE(o.result.ok()) << o.result.status();
  const v1::StepResult& r = *o.result;
  EXPECT_EQ(ConnectionBudget(), static_cast<int>(before.rlim_cur) - kReservedFiles);
  EXPECT_EQ(r.connection_cap(), 3);
  EXPECT_EQ(r.completed(), 30);
  EXPECT_EQ(r.errors(), 0);
  EXPECT_GT(r.connection_waits(), 0);
  EXPECT_EQ(r.client_invalid_cause(), v1::CLIENT_INVALID_CAUSE_CONNECTION_CAP);
  EXPECT_LE(server.connections_accepted(), 3);
}

TEST(StepRunnerTest, RequestsBeyondTheInFlightCapAreDroppedAndInvalidateTheClient) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{.never_answer = true}; });
  v1::RunStepRequest request = Request(server, 100, absl::Milliseconds(300));
  SetTimeout(request, absl::Milliseconds(200));
  request.set_max_in_flight(5);
  Outcome o = RunStep(request);
  ASSERT_TRUE(o.result.ok()) << o.result.status();
  const v1::StepResult& r = *o.result;
  EXPECT_EQ(r.scheduled(), 30);
  EXPECT_GT(r.dropped(), 0);
  EXPECT_EQ(r.dropped() + r.timeouts(), 30);
  EXPECT_FALSE(r.client_valid());
  EXPECT_NE(r.client_invalid_reason().find("dropped"), std::string::npos);
}

TEST(StepRunnerTest, AServerStallShowsInTailLatencyFromTheIntendedTime) {
  // The whole server pauses 300 ms at request 20 (0.1 s into a 200/s step). Every request
  // intended during the pause waits for it; an open-loop client keeps sending, so the
  // pause shows in the tail instead of being hidden by the client slowing down.
  FakeHttpServer server([](int64_t n) {
    return FakeHttpServer::Reply{.stall_all =
                                     n == 20 ? absl::Milliseconds(300) : absl::ZeroDuration()};
  });
  Outcome o = RunStep(Request(server, 200, absl::Milliseconds(700)));
  ASSERT_TRUE(o.result.ok()) << o.result.status();
  const v1::StepResult& r = *o.result;
  EXPECT_EQ(r.scheduled(), 140);
  EXPECT_EQ(r.completed(), 140);  // nothing was skipped or lost
  EXPECT_GE(r.latency().max_ms(), 300 * 0.99);
  // p99 of 140 is the 2nd-highest latency; the first two requests of the pause were
  // intended within 5 ms of its start, so they waited at least 295 ms.
  EXPECT_GE(r.latency().p99_ms(), 250);
  auto histogram = LatencyHistogram::Deserialize(r.latency_histogram());
  ASSERT_TRUE(histogram.ok());
  EXPECT_GE(histogram->Percentile(99.0), 250'000);
}

TEST(StepRunnerTest, QueueingInsideTheClientCountsAgainstLatencyNotServiceLatency) {
  // One connection, and one response held 300 ms: the ~60 requests due meanwhile wait in
  // the client for the connection. Measured from their intended time they are slow (the
  // user would have waited); measured from the actual send (coordinated omission) they are
  // not. Only the former may be reported as latency.
  FakeHttpServer server([](int64_t n) {
    return FakeHttpServer::Reply{.delay = n == 20 ? absl::Milliseconds(300) : absl::ZeroDuration()};
  });
  v1::RunStepRequest request = Request(server, 200, absl::Milliseconds(700));
  request.set_max_connections(1);
  Outcome o = RunStep(request);
  ASSERT_TRUE(o.result.ok()) << o.result.status();
  const v1::StepResult& r = *o.result;
  EXPECT_EQ(r.scheduled(), 140);
  EXPECT_EQ(r.completed(), 140);
  EXPECT_EQ(server.connections_accepted(), 1);
  EXPECT_GE(r.latency().max_ms(), 300 * 0.99);
  EXPECT_GE(r.latency().p99_ms(), 250);
  EXPECT_GT(r.latency().p90_ms(), r.service_latency().p90_ms());
  EXPECT_GT(r.latency().p99_ms(), 2 * r.service_latency().p99_ms());
  // Waiting for a connection is the server's slowness, not client send skew. (The median:
  // a loaded test machine may starve the loop for tens of ms now and then.)
  EXPECT_LT(r.send_skew_p50_us(), r.latency().p99_ms() * 1000 / 10);
}

TEST(StepRunnerTest, PoissonScheduleRunsEveryScheduledRequest) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{}; });
  v1::RunStepRequest request = Request(server, 200, absl::Milliseconds(400));
  request.set_schedule(v1::SCHEDULE_POISSON);
  request.set_seed(11);
  Outcome a = RunStep(request);
  Outcome b = RunStep(request);
  ASSERT_TRUE(a.result.ok() && b.result.ok());
  EXPECT_EQ(a.result->scheduled(), b.result->scheduled());  // same seed, same schedule
  EXPECT_GT(a.result->scheduled(), 40);                     // 80 expected
  EXPECT_LT(a.result->scheduled(), 120);
  EXPECT_EQ(a.result->completed(), a.result->scheduled());
}

TEST(StepRunnerTest, ServerClosingConnectionsIsNotAnError) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{.close_connection = true}; });
  Outcome o = RunStep(Request(server, 100, absl::Milliseconds(500)));
  ASSERT_TRUE(o.result.ok()) << o.result.status();
  EXPECT_EQ(o.result->completed(), 50);
  EXPECT_EQ(o.result->errors(), 0);
  EXPECT_EQ(server.connections_accepted(), 50);
}

TEST(StepRunnerTest, ConnectionRefusedIsCountedAsConnectErrors) {
  uint16_t closed_port;
  {
    FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{}; });
    closed_port = server.port();
  }
  v1::RunStepRequest request;
  request.set_target("http://127.0.0.1:" + std::to_string(closed_port));
  request.set_model_name("fake");
  request.set_rate_qps(100);
  request.mutable_duration()->set_nanos(200'000'000);
  Outcome o = RunStep(request);
  ASSERT_TRUE(o.result.ok()) << o.result.status();
  EXPECT_EQ(o.result->scheduled(), 20);
  EXPECT_EQ(o.result->errors(), 20);
  EXPECT_EQ(o.result->errors_by_class().at("connect"), 20);
}

TEST(StepRunnerTest, ATargetThePolicyRefusesIsCountedAsRefusedWithoutConnecting) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{}; });
  absl::StatusOr<TargetPolicy> policy = TargetPolicy::Parse("10.0.0.0/8,*.svc.cluster.local");
  ASSERT_TRUE(policy.ok()) << policy.status();
  StepRunner runner(/*proc=*/nullptr, *policy);
  absl::StatusOr<v1::StepResult> r =
      runner.Run(Request(server, 100, absl::Milliseconds(200)), nullptr, [] { return false; });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->scheduled(), 20);
  EXPECT_EQ(r->sent(), 0);
  EXPECT_EQ(r->errors(), 20);
  EXPECT_EQ(r->errors_by_class().at(std::string(kErrorTargetRefused)), 20);
  EXPECT_EQ(r->errors_by_class().size(), 1u);
  EXPECT_EQ(server.connections_accepted(), 0);
  EXPECT_EQ(runner.last_refusal().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(runner.last_refusal().message().find("127.0.0.1"), std::string_view::npos);
}

TEST(StepRunnerTest, TheDefaultPolicyAdmitsLoopbackAndAListCanAdmitIt) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{}; });
  absl::StatusOr<TargetPolicy> policy =
      TargetPolicy::Parse(absl::StrCat("127.0.0.1:", server.port()));
  ASSERT_TRUE(policy.ok()) << policy.status();
  StepRunner runner(/*proc=*/nullptr, *policy);
  absl::StatusOr<v1::StepResult> r =
      runner.Run(Request(server, 100, absl::Milliseconds(200)), nullptr, [] { return false; });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->completed(), 20);
  EXPECT_TRUE(runner.last_refusal().ok());
  // The same address on another port is not in the list.
  absl::StatusOr<TargetPolicy> other = TargetPolicy::Parse("127.0.0.1:1");
  StepRunner refused(/*proc=*/nullptr, *other);
  r = refused.Run(Request(server, 100, absl::Milliseconds(100)), nullptr, [] { return false; });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->completed(), 0);
  EXPECT_EQ(r->errors_by_class().at(std::string(kErrorTargetRefused)), 10);
}

TEST(StepRunnerTest, CancellingStopsTheStepPromptly) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{}; });
  v1::RunStepRequest request = Request(server, 50, absl::Seconds(60));
  request.mutable_window()->set_nanos(100'000'000);
  std::atomic<int> windows{0};
  absl::Time start = absl::Now();
  StepRunner runner;
  absl::StatusOr<v1::StepResult> result = runner.Run(
      request,
      [&](const v1::WindowMetrics&) {
        ++windows;
        return true;
      },
      [&] { return windows.load() >= 2; });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_GE(windows.load(), 2);
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));  // the step was 60 s long
}

TEST(StepRunnerTest, AWindowCallbackReturningFalseStopsTheStep) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{}; });
  v1::RunStepRequest request = Request(server, 50, absl::Seconds(60));
  request.mutable_window()->set_nanos(100'000'000);
  int windows = 0;
  StepRunner runner;
  absl::StatusOr<v1::StepResult> result = runner.Run(
      request,
      [&](const v1::WindowMetrics&) {
        ++windows;
        return false;
      },
      nullptr);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(windows, 1);
}

TEST(StepRunnerTest, InvalidRequestsAreRejectedBeforeAnythingIsSent) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{}; });
  v1::RunStepRequest request = Request(server, 0, absl::Seconds(1));
  Outcome o = RunStep(request);
  EXPECT_EQ(o.result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(server.requests_received(), 0);
}

}  // namespace
}  // namespace vanguard::replayer
