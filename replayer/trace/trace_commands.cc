// See trace_commands.h.
#include "replayer/trace/trace_commands.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "replayer/trace/trace_index.h"
#include "replayer/trace/trace_rates.h"

namespace vanguard::replayer {
namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// The one registration point for `vanguard-replayer trace` subcommands.
constexpr TraceSubcommand kTraceSubcommands[] = {
    {.name = "index",
     .args = "FILE",
     .summary = "Writes FILE.idx, the index of the trace FILE (replacing an old one): every\n"
                "record's byte offset and arrival offset, so each shard of a replay reads only\n"
                "its own records (docs/trace-format.md, \"The index\"). Traces written by\n"
                "record and convert get one already; run this after copying or editing a\n"
                "trace without its index. Reads the whole trace once; a corrupt trace is\n"
                "reported and not indexed.",
     .run = &RunTraceIndex},
};

std::string SubcommandUsage(const TraceSubcommand& command) {
  std::string usage =
      absl::StrCat("  vanguard-replayer trace ", command.name, " ", command.args, "\n");
  size_t begin = 0;
  while (begin < command.summary.size()) {
    size_t end = command.summary.find('\n', begin);
    if (end == absl::string_view::npos) end = command.summary.size();
    absl::StrAppend(&usage, "      ", command.summary.substr(begin, end - begin), "\n");
    begin = end + 1;
  }
  return usage;
}

}  // namespace

std::string TraceSubcommandsUsage() {
  std::string usage;
  for (const TraceSubcommand& command : kTraceSubcommands) {
    absl::StrAppend(&usage, SubcommandUsage(command), "\n");
  }
  return usage;
}

int RunTraceSubcommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const bool help = !args.empty() && (args.back() == "--help" || args.back() == "-h");
  if (args.empty() || (help && args.size() == 1)) {
    (args.empty() ? err : out) << "Usage:\n" << TraceSubcommandsUsage();
    return args.empty() ? kExitUsage : 0;
  }
  for (const TraceSubcommand& command : kTraceSubcommands) {
    if (args[0] != command.name) continue;
    if (help) {
      out << "Usage:\n" << SubcommandUsage(command);
      return 0;
    }
    absl::Status status = command.run({args.begin() + 1, args.end()}, out);
    if (status.ok()) return 0;
    err << "vanguard-replayer trace " << command.name << ": " << status << "\n";
    return status.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  err << "vanguard-replayer trace: unknown subcommand \"" << args[0] << "\"\nUsage:\n"
      << TraceSubcommandsUsage();
  return kExitUsage;
}

absl::Status RunTraceIndex(const std::vector<std::string>& args, std::ostream& out) {
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') {
    return absl::InvalidArgumentError("expected one argument: the trace FILE to index");
  }
  absl::StatusOr<TraceSummary> summary = WriteTraceIndex(args[0]);
  if (!summary.ok()) return summary.status();
  out << "vanguard-replayer trace index: wrote " << TraceIndexPath(args[0]) << ": "
      << summary->records << " records over " << static_cast<double>(summary->span_us) / 1e6
      << " s (recorded at " << summary->recorded_rate_qps() << " req/s)\n";
  return absl::OkStatus();
}

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
