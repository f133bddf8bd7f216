// How often the steady-state test calls a stationary run drifting (tests/bench/steady.sh).
//
//   vanguard-replayer run ... --window=500ms --output=table | steady_bench --windows=4
//
// Reads the per-window table of `vanguard-replayer run` (measured windows only), slides a
// span of --windows windows over their p50 latencies and prints, for the worker's latency
// tolerance, the share of spans whose least-squares trend alone exceeds it
// (SteadyStateDetector::RelativeDrift, the test before noise was taken into account) and the
// share that SteadyStateDetector::Trending calls drifting (beyond the trend's own noise):
//   spans=… bare_drifting_pct=… trending_pct=… p50_cv_pct=…
#include <cctype>
#include <cmath>
#include <cstdio>
#include <deque>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "worker/steady_state.h"

ABSL_FLAG(int, windows, 4, "Windows per span (the worker's detector uses 4)");
ABSL_FLAG(double, tolerance, 0.2, "Latency drift tolerance (the worker's: 0.2)");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Reads `vanguard-replayer run --output=table` on stdin; prints how often spans of its "
      "measured windows' p50 drift (bare trend) and trend beyond their noise.");
  absl::ParseCommandLine(argc, argv);
  const int k = absl::GetFlag(FLAGS_windows);
  const double tolerance = absl::GetFlag(FLAGS_tolerance);
  if (k < 3) {
    std::cerr << "--windows must be >= 3\n";
    return 2;
  }
  // Rows: index warmup scheduled completed errors timeouts dropped offered achieved p50 p99.
  std::vector<double> p50;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string index, warmup;
    double scheduled, completed, errors, timeouts, dropped, offered, achieved, median;
    if (!(in >> index >> warmup >> scheduled >> completed >> errors >> timeouts >> dropped >>
          offered >> achieved >> median)) {
      continue;
    }
    if (index.empty() || !std::isdigit(static_cast<unsigned char>(index[0]))) continue;
    if (warmup == "no" && completed > 0) p50.push_back(median);
  }
  int spans = 0, bare = 0, trending = 0;
  for (size_t i = 0; i + k <= p50.size(); ++i) {
    const std::deque<double> span(p50.begin() + static_cast<long>(i),
                                  p50.begin() + static_cast<long>(i) + k);
    ++spans;
    bare += vanguard::worker::SteadyStateDetector::RelativeDrift(span) > tolerance ? 1 : 0;
    trending += vanguard::worker::SteadyStateDetector::Trending(span, tolerance) ? 1 : 0;
  }
  if (spans == 0) {
    std::cerr << "fewer than " << k << " measured windows on stdin\n";
    return 1;
  }
  double mean = 0, sq = 0;
  for (double x : p50) mean += x;
  mean /= static_cast<double>(p50.size());
  for (double x : p50) sq += (x - mean) * (x - mean);
  const double cv = std::sqrt(sq / static_cast<double>(p50.size())) / mean;
  std::printf("spans=%d bare_drifting_pct=%.1f trending_pct=%.1f p50_cv_pct=%.1f\n", spans,
              100.0 * bare / spans, 100.0 * trending / spans, 100 * cv);
  return 0;
}
