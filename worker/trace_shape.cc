// A recorded trace's rate buckets as autoscale phases. See trace_shape.h.
#include "worker/trace_shape.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "worker/proto_time.h"

namespace vanguard::worker {
namespace {

constexpr absl::Duration kDefaultPeriod = absl::Seconds(120);

absl::Status Invalid(absl::string_view field, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat("autoscale.", field, " ", rule));
}

// Every bucket well formed and each starting where the one before it ended; the span.
absl::StatusOr<absl::Duration> CheckedSpan(
    const google::protobuf::RepeatedPtrField<vanguard::v1::TraceRate>& rates) {
  if (rates.empty()) {
    return Invalid("trace_rates",
                   "must list the trace's buckets for LOAD_SHAPE_TRACE (vanguard-replayer rates "
                   "--trace=FILE --output=json)");
  }
  if (rates.size() > AutoscaleStrategy::kMaxSegments) {
    return Invalid("trace_rates",
                   absl::StrCat("must list at most ", AutoscaleStrategy::kMaxSegments,
                                " buckets, got ", rates.size(), " (wider --bucket)"));
  }
  absl::Duration end = FromProtoDuration(rates[0].start());
  if (end < absl::ZeroDuration()) return Invalid("trace_rates[0].start", "must be >= 0");
  const absl::Duration first = end;
  double busiest = 0;
  for (int i = 0; i < rates.size(); ++i) {
    const vanguard::v1::TraceRate& r = rates[i];
    const std::string field = absl::StrCat("trace_rates[", i, "]");
    if (FromProtoDuration(r.start()) != end) {
      return Invalid(absl::StrCat(field, ".start"),
                     absl::StrCat("must be ", absl::FormatDuration(end),
                                  ", where the bucket before it ended"));
    }
    if (FromProtoDuration(r.duration()) <= absl::ZeroDuration()) {
      return Invalid(absl::StrCat(field, ".duration"), "must be > 0");
    }
    if (!std::isfinite(r.qps()) || r.qps() < 0) {
      return Invalid(absl::StrCat(field, ".qps"), "must be a finite rate >= 0");
    }
    end += FromProtoDuration(r.duration());
    busiest = std::max(busiest, r.qps());
  }
  if (busiest == 0) return Invalid("trace_rates", "are all 0 qps: the trace has no shape");
  return end - first;
}

}  // namespace

absl::StatusOr<std::vector<AutoscaleStrategy::Phase>> TracePhases(
    const vanguard::v1::AutoscaleStrategy& config) {
  const auto& rates = config.trace_rates();
  absl::StatusOr<absl::Duration> span = CheckedSpan(rates);
  if (!span.ok()) return span.status();
  const absl::Duration given = FromProtoDuration(config.period());
  const double period_s =
      absl::ToDoubleSeconds(given == absl::ZeroDuration() ? kDefaultPeriod : given);
  const double compression = period_s / absl::ToDoubleSeconds(*span);
  double busiest = 0;
  for (const vanguard::v1::TraceRate& r : rates) busiest = std::max(busiest, r.qps());
  const double scale = config.peak_qps() / busiest;

  std::vector<AutoscaleStrategy::Phase> phases;
  for (int i = 0; i < rates.size(); ++i) {
    const double seconds =
        absl::ToDoubleSeconds(FromProtoDuration(rates[i].duration())) * compression;
    if (seconds < kMinTracePhaseS - 1e-9) {
      return Invalid("period", absl::StrFormat("%g s over the trace's %s leaves bucket %d %g s "
                                               "long; each must last at least %g s (one "
                                               "window): a longer period or wider buckets",
                                               period_s, absl::FormatDuration(*span), i, seconds,
                                               kMinTracePhaseS));
    }
    const double qps = std::max(config.base_qps(), rates[i].qps() * scale);
    if (!phases.empty() && phases.back().start_qps == qps) {
      phases.back().duration_s += seconds;
    } else {
      phases.push_back({qps, qps, seconds});
    }
  }
  return phases;
}

}  // namespace vanguard::worker
