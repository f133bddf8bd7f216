// The engine (LoadLoop, through StepRunner) against in-process servers: open vs closed loop
// under a server stall, several threads merged, ramp and trace-timed schedules, streamed
// bodies reported through a ResponseHandler, and responses that break HTTP. Timing bounds
// are only ones a stall guarantees (a response held 500 ms cannot be faster than that),
// never upper bounds a noisy machine could break.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "replayer/protocol_binding.h"
#include "replayer/step_runner.h"
#include "replayer/testing/fake_http_server.h"
#include "replayer/testing/scripted_http_server.h"

namespace vanguard::replayer {
namespace {

using testing::FakeHttpServer;
using testing::ScriptedHttpServer;

google::protobuf::Duration Proto(absl::Duration d) {
  google::protobuf::Duration out;
  out.set_seconds(absl::ToInt64Seconds(d));
  out.set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(d % absl::Seconds(1))));
  return out;
}

v1::RunStepRequest Request(const std::string& url, double rate, absl::Duration duration) {
  v1::RunStepRequest r;
  r.set_target(url);
  r.set_protocol(v1::PROTOCOL_KSERVE_V2_REST);
  r.set_model_name("fake");
  r.set_rate_qps(rate);
  *r.mutable_duration() = Proto(duration);
  return r;
}

struct Outcome {
  absl::StatusOr<v1::StepResult> result;
  std::vector<v1::WindowMetrics> windows;
};

Outcome RunStep(const v1::RunStepRequest& request, const ProtocolBinding* binding = nullptr) {
  Outcome outcome;
  StepRunner runner;
  auto on_window = [&](const v1::WindowMetrics& w) {
    outcome.windows.push_back(w);
    return true;
  };
  if (binding == nullptr) {
    outcome.result = runner.Run(request, on_window, nullptr);
  } else {
    absl::StatusOr<StepConfig> config = ParseStepConfig(request);
    if (!config.ok()) {
      outcome.result = config.status();
    } else {
      outcome.result = runner.Run(*config, *binding, on_window, nullptr);
    }
  }
  return outcome;
}

TEST(LoadLoopTest, AServerStallShowsInTheOpenLoopTailWhileAClosedLoopHidesIt) {
  // The server freezes for 500 ms once, a garbage-collection pause.
  std::atomic<int64_t> stall_at{500};
  auto stalling = [&stall_at](int64_t n) {
    FakeHttpServer::Reply reply;
    if (n == stall_at.load()) reply.stall_all = absl::Milliseconds(500);
    return reply;
  };
  FakeHttpServer open_server(stalling);
  Outcome open = RunStep(Request(open_server.url(), 1000, absl::Seconds(2)));
  ASSERT_TRUE(open.result.ok()) << open.result.status();
  const v1::StepResult& o = *open.result;
  EXPECT_EQ(o.scheduled(), 2000);
  EXPECT_EQ(o.completed(), 2000);
  // ~500 requests were due during the stall and waited for its end: 25% of the step.
  EXPECT_GE(o.latency().p99_ms(), 400);
  EXPECT_GE(o.latency().p999_ms(), 450);
  EXPECT_GE(o.latency().max_ms(), 495);

  // Closed loop, one request outstanding: the stall holds one request, the client waits
  // politely, and only the max remembers it.
  FakeHttpServer closed_server(stalling);
  stall_at.store(100);
  v1::RunStepRequest closed_request = Request(closed_server.url(), 0, absl::Seconds(2));
  closed_request.set_concurrency(1);
  Outcome closed = RunStep(closed_request);
  ASSERT_TRUE(closed.result.ok()) << closed.result.status();
  const v1::StepResult& c = *closed.result;
  EXPECT_TRUE(c.closed_loop());
  ASSERT_GE(c.completed(), 300) << "too few closed-loop requests to compare tails";
  EXPECT_GE(c.latency().max_ms(), 495);
  EXPECT_LT(c.latency().p99_ms(), o.latency().p99_ms() / 4)
      << "closed-loop p99 " << c.latency().p99_ms() << " ms vs open-loop " << o.latency().p99_ms()
      << " ms";
  // The closed loop also sent far fewer requests while the server was frozen.
  EXPECT_GT(o.latency().p90_ms(), c.latency().p90_ms());
}

TEST(LoadLoopTest, ClosedLoopKeepsExactlyTheConcurrencyOutstanding) {
  FakeHttpServer server([](int64_t) {
    FakeHttpServer::Reply reply;
    reply.delay = absl::Milliseconds(20);
    return reply;
  });
  v1::RunStepRequest request = Request(server.url(), 0, absl::Seconds(1));
  request.set_concurrency(3);
  Outcome outcome = RunStep(request);
  ASSERT_TRUE(outcome.result.ok()) << outcome.result.status();
  EXPECT_EQ(server.connections_accepted(), 3);  // never more than 3 at once
  // 3 outstanding, each at least 20 ms: at most 3 * 1000 / 20 = 150 in a second.
  EXPECT_LE(outcome.result->completed(), 150);
  EXPECT_GT(outcome.result->completed(), 10);
  EXPECT_EQ(outcome.result->completed(), outcome.result->scheduled());
  EXPECT_LE(outcome.result->send_skew_max_us(), 1);  // intended == actual send (0 counts as 1)
}

TEST(LoadLoopTest, SeveralThreadsSplitTheScheduleAndMergeExactly) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{}; });
  v1::RunStepRequest request = Request(server.url(), 300, absl::Seconds(1));
  *request.mutable_warmup() = Proto(absl::Milliseconds(500));
  *request.mutable_window() = Proto(absl::Milliseconds(250));
  request.set_threads(3);
  Outcome outcome = RunStep(request);
  ASSERT_TRUE(outcome.result.ok()) << outcome.result.status();
  const v1::StepResult& r = *outcome.result;
  EXPECT_EQ(r.threads(), 3);
  EXPECT_EQ(r.scheduled(), 300);  // the constant schedule, split three ways, is whole again
  EXPECT_EQ(r.completed(), 300);
  EXPECT_EQ(server.requests_received(), 450);
  ASSERT_EQ(outcome.windows.size(), 6u);  // 2 warmup + 4 measured, each merged once
  int64_t measured = 0;
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(outcome.windows[i].index(), i);
    EXPECT_EQ(outcome.windows[i].scheduled(), 75) << i;  // 300/s * 0.25 s across 3 loops
    if (!outcome.windows[i].warmup()) measured += outcome.windows[i].completed();
  }
  EXPECT_EQ(measured, r.completed());
  auto histogram = LatencyHistogram::Deserialize(r.latency_histogram());
  ASSERT_TRUE(histogram.ok());
  EXPECT_EQ(histogram->count(), 300);
}

TEST(LoadLoopTest, TwoReplayersEachRunTheirShardAndTheirHistogramsMergeExactly) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{}; });
  std::vector<Outcome> shards;
  for (int shard = 0; shard < 2; ++shard) {
    v1::RunStepRequest request = Request(server.url(), 300, absl::Seconds(1));
    request.set_threads(2);  // 2 replayers x 2 loops = 4 shards of one schedule
    request.set_shard(shard);
    request.set_shard_count(2);
    shards.push_back(RunStep(request));
    ASSERT_TRUE(shards.back().result.ok()) << shards.back().result.status();
  }
  EXPECT_EQ(shards[0].result->scheduled(), 150);
  EXPECT_EQ(shards[1].result->scheduled(), 150);
  EXPECT_EQ(server.requests_received(), 300);  // together: the whole constant schedule
  // The worker's merge: histograms, never averaged percentiles.
  auto a = LatencyHistogram::Deserialize(shards[0].result->latency_histogram());
  auto b = LatencyHistogram::Deserialize(shards[1].result->latency_histogram());
  ASSERT_TRUE(a.ok() && b.ok());
  a->Merge(*b);
  EXPECT_EQ(a->count(), shards[0].result->completed() + shards[1].result->completed());
  ASSERT_EQ(shards[0].windows.size(), 1u);
  auto wa = LatencyHistogram::Deserialize(shards[0].windows[0].latency_histogram());
  auto wb = LatencyHistogram::Deserialize(shards[1].windows[0].latency_histogram());
  ASSERT_TRUE(wa.ok() && wb.ok());
  wa->Merge(*wb);
  EXPECT_TRUE(*wa == *a);  // one window = the whole measured part here
  auto skew = LatencyHistogram::Deserialize(shards[0].result->send_skew_histogram());
  ASSERT_TRUE(skew.ok());
  EXPECT_EQ(skew->count(), 150);
}

TEST(LoadLoopTest, ARampStepOffersTheIntegralOfItsRateInEachWindow) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{}; });
  v1::RunStepRequest request = Request(server.url(), 100, absl::Seconds(2));
  request.set_schedule(v1::SCHEDULE_RAMP);
  request.set_ramp_end_qps(300);
  Outcome outcome = RunStep(request);
  ASSERT_TRUE(outcome.result.ok()) << outcome.result.status();
  ASSERT_EQ(outcome.windows.size(), 2u);
  EXPECT_EQ(outcome.windows[0].scheduled(), 150);  // 100 t + 50 t^2 at t = 1
  EXPECT_EQ(outcome.windows[1].scheduled(), 250);
  EXPECT_EQ(outcome.result->completed(), 400);
  // The client measured its own CPU: per window and over the step's 5 s spans.
  EXPECT_GT(outcome.result->max_client_cpu_share(), 0);
  EXPECT_GT(outcome.windows[0].client_cpu_cores() + outcome.windows[1].client_cpu_cores(), 0);
}

// A template source that blocks the loop once, like a garbage-collection pause in a client.
class StallingSource : public RequestSource {
 public:
  absl::Status Next(OutgoingRequest* out) override {
    if (++calls_ == 50) absl::SleepFor(absl::Milliseconds(300));
    out->method = "POST";
    out->path = "/v2/models/fake/infer";
    out->body = "{}";
    return absl::OkStatus();
  }

 private:
  int calls_ = 0;
};

TEST(LoadLoopTest, AClientStallShowsAsNeverDispatchedAndInvalidatesTheStep) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{}; });
  ProtocolBinding binding;
  binding.sources = [](int, int) -> absl::StatusOr<std::unique_ptr<RequestSource>> {
    return std::make_unique<StallingSource>();
  };
  v1::RunStepRequest request = Request(server.url(), 200, absl::Seconds(1));
  *request.mutable_request_timeout() = Proto(absl::Milliseconds(100));
  Outcome outcome = RunStep(request, &binding);
  ASSERT_TRUE(outcome.result.ok()) << outcome.result.status();
  const v1::StepResult& r = *outcome.result;
  EXPECT_EQ(r.scheduled(), 200);  // every scheduled request is accounted for
  // ~60 requests fell due during the 300 ms stall; those more than the 100 ms timeout late
  // were never sent, the rest left late.
  EXPECT_GE(r.never_dispatched(), 30);
  EXPECT_EQ(r.completed() + r.never_dispatched() + r.timeouts() + r.errors(), 200);
  EXPECT_GE(r.send_skew_max_us(), 50'000);
  EXPECT_FALSE(r.client_valid());
  EXPECT_TRUE(absl::StrContains(r.client_invalid_reason(), "never dispatched"))
      << r.client_invalid_reason();
  EXPECT_LT(server.requests_received(), 200);
}

// A source that replays fixed trace offsets (what replayer/trace provides for real files).
class FakeTraceSource : public RequestSource {
 public:
  FakeTraceSource(std::vector<absl::Duration> offsets, double recorded_rate, int fail_at = -1)
      : offsets_(std::move(offsets)), recorded_rate_(recorded_rate), fail_at_(fail_at) {}
  absl::Status Next(OutgoingRequest* out) override {
    if (next_ == fail_at_) {
      return absl::DataLossError("trace fake.vtr record 3: length runs past the end");
    }
    if (next_ >= static_cast<int>(offsets_.size())) return absl::OutOfRangeError("end");
    out->method = "POST";
    out->path = "/v2/models/fake/infer";
    out->body = "{}";
    out->trace_offset = offsets_[next_++];
    return absl::OkStatus();
  }
  double recorded_rate_qps() const override { return recorded_rate_; }

 private:
  std::vector<absl::Duration> offsets_;
  double recorded_rate_;
  int fail_at_;
  int next_ = 0;
};

TEST(LoadLoopTest, TraceTimingIsReplayedScaledToTheTargetRate) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{}; });
  // 300 requests recorded at 100/s, bunched in pairs: a non-uniform pattern to reproduce.
  std::vector<absl::Duration> offsets;
  for (int i = 0; i < 300; ++i) offsets.push_back(absl::Milliseconds(20) * (i / 2));
  ProtocolBinding binding;
  binding.sources = [&offsets](int, int) -> absl::StatusOr<std::unique_ptr<RequestSource>> {
    return std::make_unique<FakeTraceSource>(offsets, 100.0);
  };
  v1::RunStepRequest request = Request(server.url(), 200, absl::Seconds(2));  // 2x faster
  request.set_schedule(v1::SCHEDULE_TRACE);
  request.set_trace_path("fake.vtr");
  *request.mutable_window() = Proto(absl::Milliseconds(500));
  Outcome outcome = RunStep(request, &binding);
  ASSERT_TRUE(outcome.result.ok()) << outcome.result.status();
  ASSERT_EQ(outcome.windows.size(), 4u);
  // Replayed twice as fast, the 3 s recording fits in 1.5 s, 100 requests per 0.5 s.
  EXPECT_EQ(outcome.windows[0].scheduled(), 100);
  EXPECT_EQ(outcome.windows[1].scheduled(), 100);
  EXPECT_EQ(outcome.windows[2].scheduled(), 100);
  EXPECT_EQ(outcome.windows[3].scheduled(), 0);  // the trace ended; not an error
  EXPECT_EQ(outcome.result->completed(), 300);
  EXPECT_EQ(server.requests_received(), 300);
}

TEST(LoadLoopTest, ABrokenSourceFailsTheStepWithItsOwnMessage) {
  FakeHttpServer server([](int64_t) { return FakeHttpServer::Reply{}; });
  ProtocolBinding binding;
  binding.sources = [](int, int) -> absl::StatusOr<std::unique_ptr<RequestSource>> {
    std::vector<absl::Duration> offsets(100, absl::ZeroDuration());
    return std::make_unique<FakeTraceSource>(offsets, 100.0, /*fail_at=*/3);
  };
  v1::RunStepRequest request = Request(server.url(), 100, absl::Seconds(1));
  request.set_schedule(v1::SCHEDULE_TRACE);
  request.set_trace_path("fake.vtr");
  Outcome outcome = RunStep(request, &binding);
  EXPECT_EQ(outcome.result.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(absl::StrContains(outcome.result.status().message(), "record 3"));
}

// Counts SSE-style events ("...\n\n") as content chunks; "ERR" anywhere is malformed.
class BlankLineEventHandler : public ResponseHandler {
 public:
  void Begin(int) override {
    previous_newline_ = false;
    events_ = 0;
  }
  absl::StatusOr<int> OnBody(std::string_view data) override {
    if (data.find("ERR") != std::string_view::npos) {
      return absl::DataLossError("server sent an error event");
    }
    int completed = 0;
    for (char c : data) {
      if (c == '\n' && previous_newline_) {
        ++completed;
        previous_newline_ = false;
      } else {
        previous_newline_ = c == '\n';
      }
    }
    events_ += completed;
    return completed;
  }
  absl::Status End() override {
    if (events_ == 0) return absl::DataLossError("class=empty_stream; no events at all");
    return absl::OkStatus();
  }

 private:
  bool previous_newline_ = false;
  int events_ = 0;
};

ProtocolBinding EventBinding(const StepConfig& config) {
  ProtocolBinding binding = SyntheticHttpBinding(config);
  binding.handlers = [] { return std::make_unique<BlankLineEventHandler>(); };
  return binding;
}

Outcome RunStream(const std::string& url, int requests) {
  v1::RunStepRequest request = Request(url, 50, absl::Milliseconds(20) * requests);
  absl::StatusOr<StepConfig> config = ParseStepConfig(request);
  ProtocolBinding binding = EventBinding(*config);
  return RunStep(request, &binding);
}

TEST(LoadLoopTest, ChunkedStreamsReportTtftInterChunkGapsAndOutputLength) {
  // Three events; chunk framing split mid size-line and mid event, 30 ms apart.
  ScriptedHttpServer server([](int64_t) {
    ScriptedHttpServer::Script script;
    script.pieces = {
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\ndata: a\n\n\r\n"},
        {"9\r\ndata:", absl::Milliseconds(30)},
        {" b\n\n\r\n1", absl::Milliseconds(5)},
        {"2\r\ndata: c\n\ndata: d\n\n\r\n0\r\n\r\n", absl::Milliseconds(30)},
    };
    return script;
  });
  Outcome outcome = RunStream(server.url(), 10);
  ASSERT_TRUE(outcome.result.ok()) << outcome.result.status();
  const v1::StepResult& r = *outcome.result;
  EXPECT_EQ(r.completed(), 10);
  EXPECT_EQ(r.errors(), 0);
  EXPECT_EQ(r.output_chunks(), 40);  // "a", "b", "c" and "d" each
  auto ttft = LatencyHistogram::Deserialize(r.ttft_histogram());
  ASSERT_TRUE(ttft.ok());
  EXPECT_EQ(ttft->count(), 10);
  EXPECT_GT(r.inter_chunk().max_ms(), 25);  // the server paused 30 ms between events
  // Each stream had 3 gaps (the last piece carried two events: a real gap and a zero gap).
  EXPECT_EQ(r.output_chunks() - ttft->count(), 30);
  EXPECT_LE(r.ttft().p50_ms(), r.latency().p50_ms());
}

TEST(LoadLoopTest, MalformedStreamsAreCountedByClassNeverCrash) {
  ScriptedHttpServer server([](int64_t n) {
    ScriptedHttpServer::Script script;
    if (n % 2 == 0) {
      script.pieces = {{"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\ndata: ERR"}};
    } else {
      script.pieces = {{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"}};
    }
    return script;
  });
  Outcome outcome = RunStream(server.url(), 10);
  ASSERT_TRUE(outcome.result.ok()) << outcome.result.status();
  const v1::StepResult& r = *outcome.result;
  EXPECT_EQ(r.completed(), 0);
  EXPECT_EQ(r.errors(), 10);
  EXPECT_EQ(r.errors_by_class().at("malformed_stream"), 5);
  EXPECT_EQ(r.errors_by_class().at("empty_stream"), 5);  // class chosen by the handler
}

struct BadCase {
  std::string name;
  std::string response;
  std::string expected_class;
};

TEST(LoadLoopTest, ResponsesThatBreakHttpAreClearErrorsNeverACrash) {
  std::vector<BadCase> cases = {
      {"garbage", "this is not http\r\n\r\n", "bad_response"},
      {"bad status", "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n", "bad_response"},
      {"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n", "bad_response"},
      {"conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
       "bad_response"},
      {"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad_response"},
      {"truncated body", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this", "read"},
      {"truncated header", "HTTP/1.1 200 OK\r\nContent-Le", "read"},
      {"closed silently", "", "read"},
      {"header line without colon", "HTTP/1.1 200 OK\r\nnonsense\r\n\r\n", "bad_response"},
      {"huge header", "HTTP/1.1 200 OK\r\nX: " + std::string(70'000, 'x'), "bad_response"},
  };
  for (const BadCase& c : cases) {
    ScriptedHttpServer server([&c](int64_t) {
      return ScriptedHttpServer::Script{{{c.response}}, /*close_after=*/true};
    });
    Outcome outcome = RunStep(Request(server.url(), 50, absl::Milliseconds(200)));
    ASSERT_TRUE(outcome.result.ok()) << c.name << ": " << outcome.result.status();
    const v1::StepResult& r = *outcome.result;
    EXPECT_EQ(r.scheduled(), 10) << c.name;
    EXPECT_EQ(r.completed(), 0) << c.name;
    EXPECT_EQ(r.errors(), 10) << c.name;
    EXPECT_EQ(r.errors_by_class().count(c.expected_class), 1u)
        << c.name << ": got " << r.DebugString();
  }
}

TEST(LoadLoopTest, UnusualButValidResponsesSucceed) {
  std::vector<std::string> responses = {
      // 100 Continue before the real answer, HTTP/1.0 with keep-alive, a close-delimited
      // body, chunked with extensions and trailers, lowercase headers.
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.1 200 OK\r\n\r\nclose-delimited body",
      "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2;ext=1\r\nok\r\n0\r\nX-T: 1\r\n\r\n",
      "HTTP/1.1 204 No Content\r\n\r\n",
  };
  for (const std::string& response : responses) {
    bool close_after = response.find("close-delimited") != std::string::npos;
    ScriptedHttpServer server([&](int64_t) {
      return ScriptedHttpServer::Script{{{response}}, close_after};
    });
    Outcome outcome = RunStep(Request(server.url(), 50, absl::Milliseconds(200)));
    ASSERT_TRUE(outcome.result.ok()) << outcome.result.status();
    EXPECT_EQ(outcome.result->completed(), 10) << response << "\n" << outcome.result->DebugString();
  }
}

// A server that closes an idle keep-alive connection as a request arrives on it (Node's 5 s
// keep-alive timeout racing the send) never read that request: it is sent again on a new
// connection, once, and is not the model's error. Here every second request the server
// receives meets a close instead of an answer.
TEST(LoadLoopTest, ARequestOnAConnectionTheServerClosedIsSentAgainOnANewOne) {
  ScriptedHttpServer server([](int64_t n) {
    if (n % 2 == 1) return ScriptedHttpServer::Script{{}, /*close_after=*/true};
    return ScriptedHttpServer::Script{{{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}}};
  });
  Outcome outcome = RunStep(Request(server.url(), 50, absl::Milliseconds(200)));
  ASSERT_TRUE(outcome.result.ok()) << outcome.result.status();
  const v1::StepResult& r = *outcome.result;
  EXPECT_EQ(r.scheduled(), 10);
  EXPECT_EQ(r.completed(), 10) << r.DebugString();
  EXPECT_EQ(r.errors(), 0) << r.DebugString();
  EXPECT_EQ(r.sent(), 10);  // a retry is not a second send of the schedule
  EXPECT_GE(r.stale_connection_retries(), 1);
  EXPECT_EQ(server.requests_received(), 10 + r.stale_connection_retries());
}

// Only a reused connection's failure before any response byte is retried, and only once: a
// new connection that fails too is the request's error.
TEST(LoadLoopTest, ARetriedRequestThatFailsAgainIsAnErrorAndNotRetriedTwice) {
  ScriptedHttpServer server([](int64_t n) {
    if (n >= 1) return ScriptedHttpServer::Script{{}, /*close_after=*/true};
    return ScriptedHttpServer::Script{{{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}}};
  });
  Outcome outcome = RunStep(Request(server.url(), 50, absl::Milliseconds(200)));
  ASSERT_TRUE(outcome.result.ok()) << outcome.result.status();
  const v1::StepResult& r = *outcome.result;
  EXPECT_EQ(r.scheduled(), 10);
  EXPECT_EQ(r.completed(), 1) << r.DebugString();
  EXPECT_EQ(r.errors(), 9) << r.DebugString();
  EXPECT_EQ(r.errors_by_class().at("read"), 9);
  EXPECT_EQ(r.stale_connection_retries(), 1) << r.DebugString();
  EXPECT_EQ(server.requests_received(), 11);
}

TEST(LoadLoopTest, ARequestStillOpenAtItsTimeoutIsCensoredAndCountsAgainstGoodput) {
  FakeHttpServer server([](int64_t n) {
    FakeHttpServer::Reply reply;
    reply.never_answer = n % 2 == 0;
    return reply;
  });
  v1::RunStepRequest request = Request(server.url(), 50, absl::Milliseconds(400));
  *request.mutable_request_timeout() = Proto(absl::Milliseconds(150));
  Outcome outcome = RunStep(request);
  ASSERT_TRUE(outcome.result.ok()) << outcome.result.status();
  const v1::StepResult& r = *outcome.result;
  EXPECT_EQ(r.scheduled(), 20);
  EXPECT_EQ(r.censored(), 10);
  EXPECT_EQ(r.completed(), 10);
  EXPECT_DOUBLE_EQ(r.goodput(), 0.5);
}

}  // namespace
}  // namespace vanguard::replayer
