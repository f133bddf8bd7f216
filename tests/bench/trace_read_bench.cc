// trace_read_bench: the CPU cost of TraceRequestSource::Next per request, streaming a trace
// against reading it through its index, for shard 0 of S shards. Used by
// tests/bench/trace_read.sh; the figures go to docs/scale.md ("How a trace is read").
//
//   trace_read_bench --shards=1,2,8,32 --requests=20000 --rounds=5
//
// Writes (with TraceWriter, so with its index) a trace of KServe v2 REST infer requests with
// the size mix of tests/bench/make_trace.py (one FP32 input of n elements, n lognormal with
// median --nominal_elements and log-sd --sigma, clamped to [1/16, 16] x the median), or uses
// --trace (which must have an index). Then, in --rounds rounds, each of which times every
// (S, way of reading) once in turn so that the machine's noise falls on all of them alike, it
// times --requests calls of Next (looping over the trace) after a warm-up of 1000, and prints
// per S the median ns per request of each way, the ratio to streaming, and per request the
// read system calls (/proc/self/io syscr), bytes read and records decoded.
// Ways: stream = TraceRequestSource::Open; seek = OpenIndexed always seeking; chosen =
// OpenIndexed as the replayer opens it (SeekingPays chooses).
// Final line: ns_<way>_S<S>=.. for each way and S, ratio_<way>_S<S>=.. against streaming.
// Single-threaded.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "replayer/trace/trace_format.h"
#include "replayer/trace/trace_index.h"
#include "replayer/trace/trace_request_source.h"

ABSL_FLAG(std::string, shards, "1,2,8,32", "comma-separated shard counts S to time");
ABSL_FLAG(int, requests, 20000, "timed requests per (S, way, round)");
ABSL_FLAG(int, rounds, 5, "rounds; the median round is printed");
ABSL_FLAG(int, records, 20000, "records in the generated trace");
ABSL_FLAG(int, nominal_elements, 256, "median FP32 elements per request (make_trace.py's)");
ABSL_FLAG(double, sigma, 0.5, "log-sd of the size mix (make_trace.py's)");
ABSL_FLAG(std::string, trace, "", "an indexed trace to read instead of a generated one");
ABSL_FLAG(std::string, ways, "stream,seek,chosen", "ways of reading to time");

namespace vanguard::replayer {
namespace {

std::string InferBody(int elements, int index) {
  std::string data;
  for (int k = 0; k < elements; ++k) absl::StrAppend(&data, k ? "," : "", (index + k) % 10);
  return absl::StrCat("{\"id\":\"r", index, "\",\"inputs\":[{\"name\":\"input0\",\"shape\":[1,",
                      elements, "],\"datatype\":\"FP32\",\"data\":[", data, "]}]}");
}

// make_trace.py's mix: lognormal quantiles at (i + 0.5) / n, clamped, shuffled; Poisson gaps.
std::string WriteTrace(int records, int median, double sigma) {
  const std::string path = absl::StrCat("/tmp/vanguard-trace-read-bench.", getpid(), ".vtr");
  std::mt19937_64 rng(1);
  std::vector<int> sizes;
  for (int i = 0; i < records; ++i) {
    // Inverse normal CDF by bisection on erfc (enough for a size mix).
    const double p = (i + 0.5) / records;
    double lo = -10, hi = 10;
    for (int k = 0; k < 60; ++k) {
      const double mid = (lo + hi) / 2;
      (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
    }
    const double size = median * std::exp(sigma * lo);
    sizes.push_back(
        std::max(1, static_cast<int>(std::lround(std::clamp(size, median / 16.0, median * 16.0)))));
  }
  std::shuffle(sizes.begin(), sizes.end(), rng);
  std::exponential_distribution<double> gap(100.0);
  auto writer = TraceWriter::Create(path);
  if (!writer.ok()) {
    std::fprintf(stderr, "%s\n", writer.status().ToString().c_str());
    std::exit(1);
  }
  TraceRecord r;
  r.protocol = "kserve_v2_rest";
  r.model = "sim";
  r.method = "POST";
  r.path = "/v2/models/sim/infer";
  r.headers = {{"Content-Type", "application/json"}};
  for (int i = 0; i < records; ++i) {
    r.interarrival_us = i == 0 ? 0 : std::max<uint64_t>(1, std::llround(gap(rng) * 1e6));
    r.payload = InferBody(sizes[i], i);
    if (absl::Status s = (*writer)->Append(r); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      std::exit(1);
    }
  }
  if (absl::Status s = (*writer)->Close(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::exit(1);
  }
  return path;
}

// Read system calls this process has made (read, pread, ...), from /proc/self/io.
int64_t ReadSyscalls() {
  std::ifstream io("/proc/self/io");
  std::string key;
  int64_t value = 0;
  while (io >> key >> value) {
    if (key == "syscr:") return value;
  }
  return 0;
}

struct Sample {
  double ns_per_request = 0;
  double syscalls_per_request = 0;
  double bytes_per_request = 0;
  double decoded_per_request = 0;
};

using Opener = std::function<absl::StatusOr<std::unique_ptr<TraceRequestSource>>(int shards)>;

Sample Time(const Opener& open, int shards, int requests) {
  auto source = open(shards);
  if (!source.ok()) {
    std::fprintf(stderr, "%s\n", source.status().ToString().c_str());
    std::exit(1);
  }
  OutgoingRequest request;
  auto next = [&] {
    if (absl::Status s = (*source)->Next(&request); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      std::exit(1);
    }
  };
  for (int i = 0; i < 1000; ++i) next();  // buffers grown, file in the page cache
  const uint64_t bytes = (*source)->bytes_read();
  const int64_t decoded = (*source)->records_decoded();
  const int64_t syscalls = ReadSyscalls();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < requests; ++i) next();
  const auto end = std::chrono::steady_clock::now();
  Sample sample;
  sample.ns_per_request = std::chrono::duration<double, std::nano>(end - start).count() / requests;
  // One read of /proc/self/io is itself a read or two: negligible over `requests`.
  sample.syscalls_per_request = static_cast<double>(ReadSyscalls() - syscalls) / requests;
  sample.bytes_per_request = static_cast<double>((*source)->bytes_read() - bytes) / requests;
  sample.decoded_per_request =
      static_cast<double>((*source)->records_decoded() - decoded) / requests;
  return sample;
}

int Run() {
  std::vector<int> shard_counts;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_shards), ',')) {
    int n = 0;
    if (!absl::SimpleAtoi(s, &n) || n < 1) {
      std::fprintf(stderr, "--shards: bad count '%s'\n", std::string(s).c_str());
      return 2;
    }
    shard_counts.push_back(n);
  }
  std::string path = absl::GetFlag(FLAGS_trace);
  const bool generated = path.empty();
  if (generated) {
    path = WriteTrace(absl::GetFlag(FLAGS_records), absl::GetFlag(FLAGS_nominal_elements),
                      absl::GetFlag(FLAGS_sigma));
  }
  auto index = TraceIndex::Open(TraceIndexPath(path));
  if (!index.ok()) {
    std::fprintf(stderr, "%s\n", index.status().ToString().c_str());
    return 1;
  }
  const TraceSummary summary = (*index)->summary();
  std::printf("trace %s: %lld records, %llu bytes, %.0f bytes per record\n", path.c_str(),
              static_cast<long long>(summary.records),
              static_cast<unsigned long long>((*index)->trace_bytes()),
              static_cast<double>((*index)->trace_bytes()) / summary.records);

  struct Way {
    std::string name;
    Opener open;
  };
  std::vector<Way> all = {
      {"stream",
       [&](int shards) { return TraceRequestSource::Open(path, summary, 0, shards, {}); }},
      {"seek",
       [&](int shards) {
         return TraceRequestSource::OpenIndexed(path, summary, 0, shards,
                                                {.reading = TraceReading::kSeek});
       }},
      {"chosen",
       [&](int shards) { return TraceRequestSource::OpenIndexed(path, summary, 0, shards, {}); }},
  };
  std::vector<Way> ways;
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_ways), ',')) {
    for (const Way& way : all) {
      if (way.name == name) ways.push_back(way);
    }
  }
  if (ways.empty()) {
    std::fprintf(stderr, "--ways: none of stream,seek,chosen\n");
    return 2;
  }
  const int rounds = std::max(1, absl::GetFlag(FLAGS_rounds));
  const int requests = std::max(1, absl::GetFlag(FLAGS_requests));
  // samples[s][w][round]
  std::vector<std::vector<std::vector<Sample>>> samples(
      shard_counts.size(), std::vector<std::vector<Sample>>(ways.size()));
  for (int round = 0; round < rounds; ++round) {
    for (size_t s = 0; s < shard_counts.size(); ++s) {
      for (size_t w = 0; w < ways.size(); ++w) {
        samples[s][w].push_back(Time(ways[w].open, shard_counts[s], requests));
      }
    }
  }
  std::string final_line;
  for (size_t s = 0; s < shard_counts.size(); ++s) {
    const int shards = shard_counts[s];
    std::vector<double> medians;
    for (size_t w = 0; w < ways.size(); ++w) {
      std::vector<Sample> v = samples[s][w];
      std::sort(v.begin(), v.end(), [](const Sample& a, const Sample& b) {
        return a.ns_per_request < b.ns_per_request;
      });
      const Sample& m = v[v.size() / 2];
      medians.push_back(m.ns_per_request);
      std::printf(
          "S=%-3d %-7s %8.0f ns/request (x%.2f of %s)  read syscalls %.3f  bytes %.0f  "
          "records decoded %.2f per request\n",
          shards, ways[w].name.c_str(), m.ns_per_request, m.ns_per_request / medians[0],
          ways[0].name.c_str(), m.syscalls_per_request, m.bytes_per_request, m.decoded_per_request);
      absl::StrAppend(&final_line, final_line.empty() ? "" : " ", "ns_", ways[w].name, "_S", shards,
                      "=", static_cast<int64_t>(std::lround(m.ns_per_request)));
      if (w > 0) {
        absl::StrAppend(&final_line, " ratio_", ways[w].name, "_S", shards, "=",
                        absl::StrFormat("%.2f", m.ns_per_request / medians[0]));
      }
    }
  }
  if (generated) {
    std::remove(path.c_str());
    std::remove(TraceIndexPath(path).c_str());
  }
  std::printf("%s\n", final_line.c_str());
  return 0;
}

}  // namespace
}  // namespace vanguard::replayer

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "trace_read_bench: TraceRequestSource::Next per request, streaming vs the index");
  absl::ParseCommandLine(argc, argv);
  return vanguard::replayer::Run();
}
