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
// Reading: when the trace has an index (trace_index.h) and SeekingPays, each source reads
// only its own records, each with one positioned read at its index entry, and checks it
// against its neighbours' entries (it must end where the next record starts and carry the
// gap the index implies); it reads the entries in runs, one read for up to 64 of its records.
// Otherwise (no index, or shards so few that the records skipped cost less than the seeks)
// each source streams the whole trace and keeps its own records. Both give every request the
// same bytes and offset.
//
// A source is created for, and called by, one event-loop thread; the factory may be called
// on any thread. Next() allocates nothing once its buffers have grown to the largest record.
#ifndef VANGUARD_REPLAYER_TRACE_TRACE_REQUEST_SOURCE_H_
#define VANGUARD_REPLAYER_TRACE_TRACE_REQUEST_SOURCE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "replayer/request_source.h"
#include "replayer/trace/trace_format.h"
#include "replayer/trace/trace_index.h"

namespace vanguard::replayer {

// How a source of an indexed trace reads it (TraceRequestSource::OpenIndexed).
enum class TraceReading {
  kChosen,  // SeekingPays decides, per source
  kSeek,    // always through the index (tests, tests/bench/trace_read.sh)
  kStream,  // always the whole trace, as without an index (the same)
};

struct TraceSourceOptions {
  // Start over at the end of the trace (true) or report OUT_OF_RANGE (false).
  bool loop = true;
  TraceReader::Options reader;
  TraceReading reading = TraceReading::kChosen;
};

// Whether shard s of `shards` should read a trace whose records average `mean_record_bytes`
// through its index (true) or stream it (false). What a streaming shard spends on the
// records it skips is their checksum and decoding, about proportional to their bytes (the
// reads are a small share: one per read buffer); what seeking adds per request is one
// positioned read of the record (the index is read in runs). So seeking pays once the bytes
// skipped per request, (shards - 1) x mean_record_bytes, cost more to check and decode than
// that read does: kSeekBreakEvenBytes, measured by tests/bench/trace_read.sh (docs/scale.md,
// "How a trace is read"). One shard never seeks.
inline constexpr uint64_t kSeekBreakEvenBytes = 768;
bool SeekingPays(int shards, uint64_t mean_record_bytes);

class TraceRequestSource final : public RequestSource {
 public:
  // Streams the whole trace. `summary` must describe the file (from SummarizeTrace); it gives
  // the recorded rate and the loop gap. INVALID_ARGUMENT for a bad shard; errors as
  // TraceReader::Open.
  static absl::StatusOr<std::unique_ptr<TraceRequestSource>> Open(const std::string& path,
                                                                  const TraceSummary& summary,
                                                                  int shard, int shards,
                                                                  TraceSourceOptions options);
  // For a trace with an index: reads only this shard's records through it, or streams the
  // trace when options.reading says so (by default when SeekingPays does not hold). `summary`
  // must be the index's, as OpenTraceSourceFactory validated it. INVALID_ARGUMENT for a bad
  // shard; errors as TraceReader::Open and TraceIndex::Open; DATA_LOSS if the index no
  // longer has that summary.
  static absl::StatusOr<std::unique_ptr<TraceRequestSource>> OpenIndexed(
      const std::string& path, const TraceSummary& summary, int shard, int shards,
      TraceSourceOptions options);

  // OK; OUT_OF_RANGE at the end when not looping; DATA_LOSS naming file, record and offset
  // (with an index, also when a record disagrees with its index entries).
  absl::Status Next(OutgoingRequest* out) override;
  double recorded_rate_qps() const override { return summary_.recorded_rate_qps(); }

  // Requests returned so far by this source.
  int64_t requests_returned() const { return requests_returned_; }
  // Whether this source reads its records through the index (seeks) rather than streaming.
  bool indexed() const { return index_ != nullptr; }
  // How much of the trace this source has read so far: records decoded (its own and, without
  // an index, every other one) and bytes read from the trace file.
  int64_t records_decoded() const { return reader_->records_decoded(); }
  uint64_t bytes_read() const { return reader_->bytes_read(); }

 private:
  TraceRequestSource(std::string path, std::unique_ptr<TraceReader> reader,
                     std::unique_ptr<TraceIndex> index, const TraceSummary& summary, int shard,
                     int shards, TraceSourceOptions options);
  // Reads the next record of the whole stream (looping if asked), advancing the offset.
  absl::Status ReadOne();
  // Reads this shard's next record through the index, setting its stream index and offset.
  absl::Status ReadOwnIndexed();
  // Reads record i (0-based) of the trace into record_ and checks it against the index;
  // returns its arrival offset.
  absl::StatusOr<uint64_t> ReadIndexedRecord(int64_t i);
  // The raw index entries [first, last] (at most 3), from the run of entries read last or
  // from a new run that starts at `first`.
  absl::StatusOr<const char*> EntryBytes(int64_t first, int64_t last);

  std::string path_;
  std::unique_ptr<TraceReader> reader_;
  std::unique_ptr<TraceIndex> index_;  // null: streaming
  // Seeking: a run of raw index entries covering up to 64 of this shard's records, read at
  // once (IndexRunEntries); entries [run_first_, run_first_ + run_count_) are in it.
  std::vector<char> entry_run_;
  int64_t run_first_ = 0;
  int64_t run_count_ = 0;
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

// Validates the trace up front (so a bad trace is rejected before a step starts) and returns
// a factory making one TraceRequestSource per loop. With an index (TraceIndexPath(path)), it
// validates the index and that it describes the trace (its size; its first and last records
// read through it) and the sources read through it; without one, it reads every record
// (SummarizeTrace) and the sources stream. INVALID_ARGUMENT naming trace_path if the file is
// missing, not a trace, empty, corrupt anywhere (without an index) or in a record read, or if
// its index is corrupt or describes another file.
absl::StatusOr<RequestSourceFactory> OpenTraceSourceFactory(const std::string& path,
                                                            TraceSourceOptions options = {});

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_TRACE_TRACE_REQUEST_SOURCE_H_
