// The trace index (specified in docs/trace-format.md, "The index"): a side file
// `<trace>.idx` that gives, for every record of a trace, its byte offset in the trace and its
// arrival offset (the sum of the recorded inter-arrival times since the first record), plus
// the figures SummarizeTrace computes. With it, a shard of a replay reads the index entries
// and the records it sends and nothing else (trace_request_source.h).
//
//   // Writing: TraceWriter::Close writes the index of the trace it wrote; for an existing
//   // trace (`vanguard-replayer trace index FILE`):
//   ASSIGN_OR_RETURN(TraceSummary summary, WriteTraceIndex("t.vtr"));
//
//   // Reading:
//   ASSIGN_OR_RETURN(std::unique_ptr<TraceIndex> index, TraceIndex::Open(TraceIndexPath(p)));
//   RETURN_IF_ERROR(index->Validate());            // once, before a step: reads every entry
//   TraceIndexEntry e[3];
//   RETURN_IF_ERROR(index->ReadEntries(i - 1, 3, e));  // a shard: only the entries it needs
//
// Layout: a 12-byte header (magic "VGTRIDX\n", version 1), one 16-byte entry per record
// (record offset, arrival offset; little-endian uint64), then a 40-byte trailer (record count,
// span, payload bytes, trace size, CRC-32C of the entries, CRC-32C of header and trailer).
// The entries are fixed-size, so entry i is read by one pread at a known position. An index is
// outside input like its trace: every problem is DATA_LOSS (INVALID_ARGUMENT for a file that is
// not an index) naming the index file and the byte offset or entry, never a crash, and nothing
// read from the file sizes an allocation.
//
// Each object is used by one thread at a time; different objects may read one file at once.
#ifndef VANGUARD_REPLAYER_TRACE_TRACE_INDEX_H_
#define VANGUARD_REPLAYER_TRACE_TRACE_INDEX_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "replayer/trace/trace_format.h"

namespace vanguard::replayer {

inline constexpr std::string_view kTraceIndexMagic = "VGTRIDX\n";
inline constexpr uint32_t kTraceIndexVersion = 1;
inline constexpr size_t kTraceIndexHeaderBytes = 12;   // magic + version
inline constexpr size_t kTraceIndexEntryBytes = 16;    // record offset + arrival offset
inline constexpr size_t kTraceIndexTrailerBytes = 40;  // 4 x uint64 + 2 x uint32

// The index file of the trace at `trace_path`: trace_path + ".idx".
std::string TraceIndexPath(const std::string& trace_path);

struct TraceIndexEntry {
  uint64_t record_offset = 0;  // byte offset of the record's length varint in the trace
  uint64_t arrival_us = 0;     // sum of the inter-arrival times of records 2..i (0 for the first)

  bool operator==(const TraceIndexEntry&) const = default;
};

// Builds an index while a trace is written, record by record, into `<index>.tmp`, and moves
// it into place on Finish, so an index is either whole or absent. Used by TraceWriter and
// WriteTraceIndex.
class TraceIndexWriter {
 public:
  // Creates `TraceIndexPath(trace_path).tmp`. File errors as TraceWriter::Create.
  static absl::StatusOr<std::unique_ptr<TraceIndexWriter>> Create(std::string trace_path);
  ~TraceIndexWriter();  // without Finish: removes the temporary file, writes no index

  // Adds the record that starts at `record_offset` of the trace. DATA_LOSS naming the trace
  // and record if the span passes kMaxTraceSpanUs: the index cannot be written, and every
  // later call returns the same. File errors.
  absl::Status Add(uint64_t record_offset, const TraceRecord& record);
  // Writes the trailer for a trace of `trace_bytes` bytes and renames the file to the index
  // path. DATA_LOSS if the span passed kMaxTraceSpanUs (no index is written); file errors.
  absl::Status Finish(uint64_t trace_bytes);

  const TraceSummary& summary() const { return summary_; }

 private:
  TraceIndexWriter(std::string trace_path, std::string index_path, std::string temp_path,
                   std::FILE* file);
  absl::Status WritePending();

  std::string trace_path_;
  std::string index_path_;
  std::string temp_path_;
  std::FILE* file_;
  TraceSummary summary_;
  absl::Status span_error_;  // sticky: the span passed kMaxTraceSpanUs
  uint32_t entries_crc_ = 0;
  std::string pending_;  // encoded entries not yet written
};

// Streams the trace at `trace_path` once and writes its index beside it (replacing an old
// one). Returns the trace's summary. The reader's errors (the trace is not indexed when any
// record is bad), DATA_LOSS for a span past kMaxTraceSpanUs, file errors.
absl::StatusOr<TraceSummary> WriteTraceIndex(const std::string& trace_path);

class TraceIndex {
 public:
  // Opens an index and checks its header and trailer (sizes, counts, the trailer's CRC-32C),
  // not its entries. NOT_FOUND if the file does not exist (the trace has no index);
  // INVALID_ARGUMENT if it is not a trace index or of an unknown version; DATA_LOSS naming
  // the file and byte offset if the header, trailer or size disagree.
  static absl::StatusOr<std::unique_ptr<TraceIndex>> Open(const std::string& index_path);
  // The same over an index held in memory; `name` stands for the path in errors.
  static absl::StatusOr<std::unique_ptr<TraceIndex>> FromBuffer(std::string name,
                                                                std::string bytes);
  ~TraceIndex();

  // Reads every entry once through a fixed buffer and checks the entries' CRC-32C, that the
  // first record is at offset 12 and arrives at 0, that record offsets strictly increase and
  // stay inside the trace, that arrival offsets never decrease and the last one is the span.
  // DATA_LOSS naming the file and the first bad entry.
  absl::Status Validate();

  // Reads entries [first, first + count) into out[0..count). OUT_OF_RANGE if they are not all
  // in the index; DATA_LOSS if an entry points outside the trace or past the span.
  absl::Status ReadEntries(int64_t first, int64_t count, TraceIndexEntry* out);

  // For a reader that needs a few entries out of many (a shard's, S apart): reads the raw
  // entries [first, first + count) with one read into bytes[0, count x kTraceIndexEntryBytes),
  // unchecked; Entry decodes and checks the ones it uses. OUT_OF_RANGE as ReadEntries.
  absl::Status ReadEntryRun(int64_t first, int64_t count, char* bytes);
  // Entry i from its kTraceIndexEntryBytes bytes at `bytes`, checked as ReadEntries checks it.
  absl::StatusOr<TraceIndexEntry> Entry(int64_t i, const char* bytes) const;

  int64_t records() const { return summary_.records; }
  const TraceSummary& summary() const { return summary_; }
  // Size in bytes of the trace the index describes.
  uint64_t trace_bytes() const { return trace_bytes_; }
  const std::string& path() const { return path_; }

 private:
  TraceIndex(std::string path, int fd, std::string memory);
  // Reads exactly `n` bytes at `offset` of the index into dst.
  absl::Status ReadAt(uint64_t offset, size_t n, char* dst);
  absl::Status ReadHeaderAndTrailer(uint64_t file_bytes);
  absl::Status CheckEntry(int64_t i, const TraceIndexEntry& entry) const;
  absl::Status CheckRange(int64_t first, int64_t count) const;
  absl::Status Corrupt(uint64_t offset, absl::string_view what) const;

  std::string path_;
  int fd_;              // -1: the index is memory_
  std::string memory_;  // the whole index, for one made by FromBuffer
  TraceSummary summary_;
  uint64_t trace_bytes_ = 0;
  uint32_t entries_crc_ = 0;
};

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_TRACE_TRACE_INDEX_H_
