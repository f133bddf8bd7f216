// The trace subcommands of vanguard-replayer, as plain functions main.cc dispatches to:
//   record  — RunRecordProxy (record_proxy.h)
//   convert — RunConvert: a JSONL request log to a trace, bad lines listed on stderr.
// Run on the main thread.
#ifndef VANGUARD_REPLAYER_TRACE_TRACE_COMMANDS_H_
#define VANGUARD_REPLAYER_TRACE_TRACE_COMMANDS_H_

#include <string>

#include "absl/status/status.h"
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

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_TRACE_TRACE_COMMANDS_H_
