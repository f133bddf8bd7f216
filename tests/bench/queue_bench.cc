// queue_bench: drives a running vanguard-orchestrator through its real gRPC worker protocol
// with N concurrent workers and prints the rates. Used by tests/bench/queue.sh, which seeds
// the queue, runs pgbench beside it and counts double leases from the database.
//
//   queue_bench --orchestrator=127.0.0.1:50051 --workers=1,4,16 --phase_seconds=4
//
// For each worker count, three timed phases, each with N threads on their own channel:
//   lease:     LeaseTest in a loop (lease 1 h, so nothing is reaped meanwhile);
//   heartbeat: Heartbeat over the tests the thread leased, round robin;
//   report:    ReportStep with a realistic step (percentiles, histogram, 5 windows).
// Prints one line per worker count and `leased_ids=.. duplicate_leases=..` (a test id the
// clients saw leased twice). The bearer token comes from $VANGUARD_TOKEN when set.
// Each phase runs on its own threads; main waits for them.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/histogram.h"
#include "grpcpp/grpcpp.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

ABSL_FLAG(std::string, orchestrator, "127.0.0.1:50051", "orchestrator HOST:PORT");
ABSL_FLAG(std::string, workers, "1,4,16", "comma-separated concurrent worker counts to run");
ABSL_FLAG(double, phase_seconds, 4.0, "length of each timed phase (lease, heartbeat, report)");

namespace vanguard {
namespace {

struct Leased {
  int64_t id;
  int32_t attempt;
};

struct PhaseResult {
  int64_t ok = 0;
  int64_t failed = 0;
  int64_t empty = 0;  // lease phase: no test was ready
  double seconds = 0;
  double rate() const { return seconds > 0 ? ok / seconds : 0; }
};

class Bench {
 public:
  Bench(std::string address, std::string token)
      : address_(std::move(address)), token_(std::move(token)) {
    LatencyHistogram histogram;
    for (int i = 1; i <= 2000; ++i) histogram.Record(800 + (i * 7919) % 20000);
    histogram_ = histogram.Serialize();
  }

  // Runs fn(thread index, stub, deadline) on n threads for `seconds`; sums their results.
  template <typename Fn>
  PhaseResult RunPhase(int n, double seconds, Fn fn) {
    std::vector<PhaseResult> results(n);
    std::vector<std::unique_ptr<v1::Orchestrator::Stub>> stubs;
    for (int i = 0; i < n; ++i) {
      // One channel per worker, as separate worker processes would have.
      grpc::ChannelArguments args;
      args.SetInt("bench_channel_index", i);  // distinct args: no subchannel sharing
      stubs.push_back(v1::Orchestrator::NewStub(
          grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), args)));
    }
    // Connect before the clock starts.
    for (int i = 0; i < n; ++i) {
      v1::GetTestRequest req;
      req.set_id(1);
      v1::GetTestResponse resp;
      grpc::ClientContext ctx;
      Authorize(ctx);
      stubs[i]->GetTest(&ctx, req, &resp);
    }
    const absl::Time start = absl::Now();
    const absl::Time end = start + absl::Seconds(seconds);
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] { fn(i, *stubs[i], end, results[i]); });
    }
    for (std::thread& t : threads) t.join();
    PhaseResult total;
    total.seconds = absl::ToDoubleSeconds(absl::Now() - start);
    for (const PhaseResult& r : results) {
      total.ok += r.ok;
      total.failed += r.failed;
      total.empty += r.empty;
    }
    return total;
  }

  void Authorize(grpc::ClientContext& ctx) const {
    if (!token_.empty()) ctx.AddMetadata("authorization", "Bearer " + token_);
  }

  // One worker count: lease, heartbeat, report. Returns {leases/s, heartbeats/s, reports/s}.
  std::vector<double> Run(int n, double seconds) {
    std::vector<std::vector<Leased>> leased(n);
    PhaseResult lease = RunPhase(
        n, seconds, [&](int i, v1::Orchestrator::Stub& stub, absl::Time end, PhaseResult& r) {
          v1::LeaseTestRequest req;
          req.set_worker_id(absl::StrCat("bench-", n, "-", i));
          req.mutable_lease_duration()->set_seconds(3600);
          while (absl::Now() < end) {
            grpc::ClientContext ctx;
            Authorize(ctx);
            v1::LeaseTestResponse resp;
            grpc::Status s = stub.LeaseTest(&ctx, req, &resp);
            if (!s.ok()) {
              ++r.failed;
              ReportError("LeaseTest", s);
            } else if (!resp.has_test()) {
              ++r.empty;
            } else {
              ++r.ok;
              leased[i].push_back({resp.test().id(), resp.attempt()});
            }
          }
        });
    for (const auto& per_thread : leased) {
      for (const Leased& l : per_thread) {
        if (!seen_.insert(l.id).second) ++duplicates_;
      }
    }

    PhaseResult heartbeat = RunPhase(
        n, seconds, [&](int i, v1::Orchestrator::Stub& stub, absl::Time end, PhaseResult& r) {
          if (leased[i].empty()) return;
          size_t next = 0;
          v1::HeartbeatRequest req;
          req.set_worker_id(absl::StrCat("bench-", n, "-", i));
          req.mutable_lease_duration()->set_seconds(3600);
          while (absl::Now() < end) {
            const Leased& l = leased[i][next++ % leased[i].size()];
            req.set_test_id(l.id);
            req.set_attempt(l.attempt);
            grpc::ClientContext ctx;
            Authorize(ctx);
            v1::HeartbeatResponse resp;
            grpc::Status s = stub.Heartbeat(&ctx, req, &resp);
            if (s.ok()) {
              ++r.ok;
            } else {
              ++r.failed;
              ReportError("Heartbeat", s);
            }
          }
        });

    PhaseResult report = RunPhase(
        n, seconds, [&](int i, v1::Orchestrator::Stub& stub, absl::Time end, PhaseResult& r) {
          if (leased[i].empty()) return;
          int64_t sent = 0;
          while (absl::Now() < end) {
            const Leased& l = leased[i][sent % leased[i].size()];
            v1::ReportStepRequest req;
            req.set_test_id(l.id);
            req.set_attempt(l.attempt);
            FillStep(static_cast<int32_t>(sent / leased[i].size()), req.mutable_step());
            ++sent;
            grpc::ClientContext ctx;
            Authorize(ctx);
            v1::ReportStepResponse resp;
            grpc::Status s = stub.ReportStep(&ctx, req, &resp);
            if (s.ok()) {
              ++r.ok;
            } else {
              ++r.failed;
              ReportError("ReportStep", s);
            }
          }
        });

    std::cout << "workers=" << n << " leases_per_s=" << static_cast<int64_t>(lease.rate())
              << " heartbeats_per_s=" << static_cast<int64_t>(heartbeat.rate())
              << " reports_per_s=" << static_cast<int64_t>(report.rate()) << " leases=" << lease.ok
              << " empty_leases=" << lease.empty
              << " failed_calls=" << lease.failed + heartbeat.failed + report.failed << std::endl;
    return {lease.rate(), heartbeat.rate(), report.rate()};
  }

  int64_t duplicates() const { return duplicates_; }
  size_t leased_ids() const { return seen_.size(); }

 private:
  void FillStep(int32_t index, v1::Step* step) const {
    step->set_index(index);
    step->set_target_qps(100 + index);
    step->set_achieved_qps(99.5 + index);
    v1::LatencySummary* latency = step->mutable_latency();
    latency->set_p50_ms(4.2);
    latency->set_p90_ms(8.9);
    latency->set_p99_ms(15.3);
    latency->set_p999_ms(19.1);
    latency->set_max_ms(20.7);
    latency->set_mean_ms(5.1);
    step->set_error_rate(0.001);
    step->set_scheduled(2000);
    step->set_sent(2000);
    step->set_completed(1998);
    step->set_errors(2);
    step->set_health_state(v1::HEALTH_STATE_HEALTHY);
    step->set_passed(true);
    step->set_client_valid(true);
    step->set_verdict("p99 15.3 ms <= 50 ms; error rate 0.1% <= 1%");
    step->mutable_duration()->set_seconds(5);
    step->set_latency_histogram(histogram_);
    for (int w = 0; w < 5; ++w) {
      v1::StepWindow* window = step->add_windows();
      window->set_index(w);
      window->set_offered_qps(100);
      window->set_achieved_qps(99.6);
      *window->mutable_latency() = *latency;
      window->set_scheduled(400);
      window->set_completed(399);
      window->set_errors(1);
      window->set_gpu_utilization(0.5);
      window->set_queue_depth(0.3);
      window->set_health_score(0.4);
      window->set_health_state(v1::HEALTH_STATE_HEALTHY);
    }
  }

  void ReportError(const char* method, const grpc::Status& s) {
    if (errors_printed_.fetch_add(1) < 5) {
      std::cerr << "queue_bench: " << method << ": " << s.error_code() << " " << s.error_message()
                << std::endl;
    }
  }

  const std::string address_;
  const std::string token_;
  std::string histogram_;
  std::unordered_set<int64_t> seen_;  // main thread only, between phases
  int64_t duplicates_ = 0;
  std::atomic<int> errors_printed_{0};
};

}  // namespace
}  // namespace vanguard

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Measures leases/s, heartbeats/s and step reports/s of a running vanguard-orchestrator "
      "through gRPC with N concurrent workers.");
  absl::ParseCommandLine(argc, argv);
  std::vector<int> counts;
  for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_workers), ',')) {
    int n = 0;
    if (!absl::SimpleAtoi(part, &n) || n < 1) {
      std::cerr << "queue_bench: --workers: '" << part << "' is not a count >= 1" << std::endl;
      return 2;
    }
    counts.push_back(n);
  }
  const double seconds = absl::GetFlag(FLAGS_phase_seconds);
  if (!(seconds > 0)) {
    std::cerr << "queue_bench: --phase_seconds must be > 0" << std::endl;
    return 2;
  }
  const char* token = std::getenv("VANGUARD_TOKEN");
  vanguard::Bench bench(absl::GetFlag(FLAGS_orchestrator), token == nullptr ? "" : token);
  std::vector<double> last;
  for (int n : counts) last = bench.Run(n, seconds);
  std::cout << "leased_ids=" << bench.leased_ids() << " duplicate_leases=" << bench.duplicates()
            << std::endl;
  std::printf("final leases_per_s=%.0f heartbeats_per_s=%.0f reports_per_s=%.0f\n", last[0],
              last[1], last[2]);
  return 0;
}
