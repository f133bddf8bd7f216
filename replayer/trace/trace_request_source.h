// TraceRequestSource: the engine's RequestSource over a recorded trace (trace_format.h). It
// streams records from disk (bounded memory), renders each as an OutgoingRequest with the
// recorded method, path, headers and payload, and gives each its trace_offset — the
// cumulative recorded inter-arrival time since the trace's first request — so the engine's
// SCHEDULE_TRACE replays the recorded timing scaled to the target rate
// (intended = trace_offset * recorded_rate_qps() / rate_qps).
//
//   ASSIGN_OR_RETURN(RequestSourceFactory factory, OpenTraceSourceFactory("t.vtr"));
//   ASSIGN_OR_RETURN(std::unique_ptr<RequestSource> source, factory(/*shard=*/0, /*shards=*/2));
//
// Sharding: loop `shard` of `shards` gets records shard, shard + shards, ... of the stream,
// with the same offsets they have in the whole stream. Looping (default): after the last
// record the trace starts over, the gap before its first record being the mean recorded gap,
// so offsets keep increasing.
//
// A source is created for, and called by, one event-loop thread; the factory may be called
// on any thread. Next() allocates nothing once its buffers have grown to the largest record.
#ifndef VANGUARD_REPLAYER_TRACE_TRACE_REQUEST_SOURCE_H_
#define VANGUARD_REPLAYER_TRACE_TRACE_REQUEST_SOURCE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "replayer/request_source.h"
#include "replayer/trace/trace_format.h"

namespace vanguard::replayer {

struct TraceSourceOptions {
  // Start over at the end of the trace (true) or report OUT_OF_RANGE (false).
  bool loop = true;
  TraceReader::Options reader;
};

class TraceRequestSource final : public RequestSource {
 public:
  // `summary` must describe the file (from SummarizeTrace); it gives the recorded rate and
  // the loop gap. Errors as TraceReader::Open.
  static absl::StatusOr<std::unique_ptr<TraceRequestSource>> Open(const std::string& path,
                                                                  const TraceSummary& summary,
                                                                  int shard, int shards,
                                                                  TraceSourceOptions options);

  // OK; OUT_OF_RANGE at the end when not looping; DATA_LOSS naming file, record and offset.
  absl::Status Next(OutgoingRequest* out) override;
  double recorded_rate_qps() const override { return summary_.recorded_rate_qps(); }

  // Requests returned so far by this source.
  int64_t requests_returned() const { return requests_returned_; }

 private:
  TraceRequestSource(std::unique_ptr<TraceReader> reader, const TraceSummary& summary, int shard,
                     int shards, TraceSourceOptions options);
  // Reads the next record of the whole stream (looping if asked), advancing the offset.
  absl::Status ReadOne();

  std::unique_ptr<TraceReader> reader_;
  TraceSummary summary_;
  int shard_;
  int shards_;
  TraceSourceOptions options_;
  TraceRecord record_;
  std::string headers_;        // record_.headers rendered as "Name: value\r\n" lines
  int64_t stream_index_ = -1;  // index of record_ in the (looped) stream
  uint64_t offset_us_ = 0;     // trace offset of record_
  int64_t requests_returned_ = 0;
};

// Validates the whole trace up front (so a bad trace is rejected before a step starts) and
// returns a factory making one TraceRequestSource per loop. INVALID_ARGUMENT naming
// trace_path if the file is missing, not a trace, corrupt anywhere, or empty.
absl::StatusOr<RequestSourceFactory> OpenTraceSourceFactory(const std::string& path,
                                                            TraceSourceOptions options = {});

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_TRACE_TRACE_REQUEST_SOURCE_H_
