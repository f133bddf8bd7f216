// A trace's request rate over time; see trace_rates.h.
#include "replayer/trace/trace_rates.h"

#include <cmath>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "replayer/trace/trace_format.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard::replayer {
namespace {

// Plain text that reads back as the same double: "60", "1200000", "15.25", "0.1", and 17
// digits where fewer do not round-trip (1/3).
std::string Number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrFormat("%.0f", v);
  for (int precision = 1; precision <= 17; ++precision) {
    std::string text = absl::StrFormat("%.*f", precision, v);
    double back = 0;
    if (absl::SimpleAtod(text, &back) && back == v) return text;
  }
  return absl::StrFormat("%.17g", v);
}

}  // namespace

absl::StatusOr<TraceRates> BucketTraceRates(const std::string& path, absl::Duration bucket,
                                            std::string_view model) {
  if (bucket < absl::Seconds(1) || bucket > absl::Hours(24)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bucket: must be 1s to 24h, got ", absl::FormatDuration(bucket)));
  }
  const uint64_t bucket_us = static_cast<uint64_t>(absl::ToInt64Microseconds(bucket));
  ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(path));
  TraceRates rates;
  rates.bucket = bucket;
  TraceRecord record;
  while (true) {
    ASSIGN_OR_RETURN(bool got, reader->Next(&record));
    if (!got) break;
    if (rates.records > 0) {
      if (record.interarrival_us > kMaxTraceSpanUs - rates.span_us) {
        return absl::DataLossError(absl::StrCat(path, ": record ", rates.records + 1,
                                                " takes the recorded span past ", kMaxTraceSpanUs,
                                                " us (corrupt inter-arrival?)"));
      }
      rates.span_us += record.interarrival_us;
    }
    ++rates.records;
    if (!model.empty() && record.model != model) continue;
    const uint64_t index = rates.span_us / bucket_us;
    if (index >= static_cast<uint64_t>(kMaxRateBuckets)) {
      return absl::OutOfRangeError(
          absl::StrCat(path, ": the trace spans more than ", kMaxRateBuckets, " buckets of ",
                       absl::FormatDuration(bucket), "; use a longer --bucket"));
    }
    if (index >= rates.counts.size()) rates.counts.resize(index + 1, 0);
    ++rates.counts[index];
    ++rates.counted;
  }
  // Buckets after the last counted arrival, up to the end of the recording, hold none.
  const uint64_t last = rates.span_us / bucket_us;
  if (rates.records > 0 && last < static_cast<uint64_t>(kMaxRateBuckets) &&
      last >= rates.counts.size()) {
    rates.counts.resize(last + 1, 0);
  }
  return rates;
}

std::string TraceRatesCsv(const TraceRates& rates) {
  const double seconds = absl::ToDoubleSeconds(rates.bucket);
  std::string out = "start_s,duration_s,qps\n";
  for (size_t i = 0; i < rates.counts.size(); ++i) {
    absl::StrAppend(&out, Number(static_cast<double>(i) * seconds), ",", Number(seconds), ",",
                    Number(static_cast<double>(rates.counts[i]) / seconds), "\n");
  }
  return out;
}

std::string TraceRatesAutoscaleJson(const TraceRates& rates) {
  vanguard::v1::AutoscaleStrategy shape;
  shape.set_shape(vanguard::v1::LOAD_SHAPE_TRACE);
  const int64_t bucket_ns = absl::ToInt64Nanoseconds(rates.bucket);
  for (size_t i = 0; i < rates.counts.size(); ++i) {
    vanguard::v1::TraceRate* r = shape.add_trace_rates();
    const int64_t start_ns = static_cast<int64_t>(i) * bucket_ns;
    r->mutable_start()->set_seconds(start_ns / 1'000'000'000);
    r->mutable_start()->set_nanos(static_cast<int32_t>(start_ns % 1'000'000'000));
    r->mutable_duration()->set_seconds(bucket_ns / 1'000'000'000);
    r->mutable_duration()->set_nanos(static_cast<int32_t>(bucket_ns % 1'000'000'000));
    r->set_qps(static_cast<double>(rates.counts[i]) / absl::ToDoubleSeconds(rates.bucket));
  }
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string json;
  // Cannot fail: every field is set by this function and in range.
  (void)google::protobuf::util::MessageToJsonString(shape, &json, options);
  return json + "\n";
}

}  // namespace vanguard::replayer
