// The trace subcommands of vanguard-replayer, as plain functions main.cc dispatches to:
//   record  — RunRecordProxy (record_proxy.h)
//   convert — RunConvert: a JSONL request log to a trace, bad lines listed on stderr.
//   rates   — RunRates: a trace's request rate per bucket as CSV (trace_rates.h).
// and `vanguard-replayer trace NAME ...` (RunTraceSubcommand), whose subcommands are the
// entries of one table (kTraceSubcommands in the .cc: name, arguments, help, runner) that
// the usage text and each `--help` are made from:
//   trace index FILE — RunTraceIndex: writes FILE's index (trace_index.h).
// Run on the main thread.
#ifndef VANGUARD_REPLAYER_TRACE_TRACE_COMMANDS_H_
#define VANGUARD_REPLAYER_TRACE_TRACE_COMMANDS_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "replayer/trace/jsonl_log_converter.h"
#include "replayer/trace/record_proxy.h"

namespace vanguard::replayer {

// Converts input (JSONL) to output (trace), printing "line N: reason" for every reported bad
// line and a one-line summary to stderr. OK only if every line converted; DATA_LOSS
// ("N bad lines skipped") when some were bad — the trace then holds the good ones — or when
// no line was usable; INVALID_ARGUMENT for a missing input/output; file errors as
// ConvertJsonlLogToTrace.
absl::Status RunConvert(const std::string& input, const std::string& output,
                        const JsonlConversionOptions& options = {});

// How `rates` prints: CSV (TraceRatesCsv) or the autoscale trace shape's JSON
// (TraceRatesAutoscaleJson).
enum class RatesFormat { kCsv, kAutoscaleJson };

// Writes BucketTraceRates(trace, bucket, model) to `out` in `format`, and one summary line to
// stderr. INVALID_ARGUMENT for a missing --trace or a bad bucket; the reader's errors
// otherwise; FAILED_PRECONDITION when no request of `model` is in the trace.
absl::Status RunRates(const std::string& trace, absl::Duration bucket, const std::string& model,
                      std::ostream& out, RatesFormat format = RatesFormat::kCsv);

// One `vanguard-replayer trace` subcommand.
struct TraceSubcommand {
  absl::string_view name;     // "index"
  absl::string_view args;     // its arguments in usage, e.g. "FILE"
  absl::string_view summary;  // what it does, for the program's usage and its own --help
  // Runs it on the arguments after its name. INVALID_ARGUMENT for wrong arguments (a usage
  // error); other errors are failures.
  absl::Status (*run)(const std::vector<std::string>& args, std::ostream& out);
};

// The usage of every trace subcommand, for the program's --help.
std::string TraceSubcommandsUsage();

// Runs `vanguard-replayer trace ARGS...` (`args`: the words after "trace"). `--help` or `-h`
// prints the subcommand's usage (the list of subcommands without a name) to `out`. Returns
// the exit code: 0 success, 1 failure, 2 usage error (reported on `err`).
int RunTraceSubcommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `trace index FILE`: writes FILE's index beside it (WriteTraceIndex) and prints one line
// saying what it holds. INVALID_ARGUMENT unless exactly one argument; WriteTraceIndex's errors.
absl::Status RunTraceIndex(const std::vector<std::string>& args, std::ostream& out);

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_TRACE_TRACE_COMMANDS_H_
