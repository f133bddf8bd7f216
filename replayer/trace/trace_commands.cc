// See trace_commands.h.
#include "replayer/trace/trace_commands.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "replayer/trace/trace_rates.h"

namespace vanguard::replayer {

absl::Status RunConvert(const std::string& input, const std::string& output,
                        const JsonlConversionOptions& options) {
  if (input.empty()) return absl::InvalidArgumentError("input: required (the JSONL request log)");
  if (output.empty())
    return absl::InvalidArgumentError("output: required (the trace file to write)");
  absl::StatusOr<JsonlConversionReport> report = ConvertJsonlLogToTrace(input, output, options);
  if (!report.ok()) return report.status();
  for (const JsonlBadLine& bad : report->bad_line_details) {
    std::cerr << input << ":" << bad.line_number << ": " << bad.reason << "\n";
  }
  if (report->bad_lines > static_cast<int64_t>(report->bad_line_details.size())) {
    std::cerr << "... and " << report->bad_lines - report->bad_line_details.size()
              << " more bad lines\n";
  }
  std::cerr << "vanguard-replayer convert: " << report->records_written << " requests written to "
            << output << " (" << report->lines_read << " lines, " << report->bad_lines << " bad, "
            << report->out_of_order_lines << " out of order)\n";
  if (report->records_written == 0) {
    return absl::DataLossError(absl::StrCat("input: ", input, " has no usable request lines"));
  }
  if (report->bad_lines > 0) {
    return absl::DataLossError(absl::StrCat(report->bad_lines,
                                            " bad lines skipped (listed above); the trace "
                                            "holds the ",
                                            report->records_written, " good ones"));
  }
  return absl::OkStatus();
}

absl::Status RunRates(const std::string& trace, absl::Duration bucket, const std::string& model,
                      std::ostream& out, RatesFormat format) {
  if (trace.empty()) return absl::InvalidArgumentError("trace: required (the trace to read)");
  absl::StatusOr<TraceRates> rates = BucketTraceRates(trace, bucket, model);
  if (!rates.ok()) return rates.status();
  if (rates->counted == 0) {
    return absl::FailedPreconditionError(
        model.empty() ? absl::StrCat(trace, " holds no request")
                      : absl::StrCat(trace, " holds no request of model \"", model, "\""));
  }
  out << (format == RatesFormat::kAutoscaleJson ? TraceRatesAutoscaleJson(*rates)
                                                : TraceRatesCsv(*rates));
  std::cerr << "vanguard-replayer rates: " << rates->counted << " of " << rates->records
            << " requests over " << static_cast<double>(rates->span_us) / 1e6 << " s in "
            << rates->counts.size() << " buckets of " << absl::FormatDuration(bucket) << "\n";
  return absl::OkStatus();
}

}  // namespace vanguard::replayer
