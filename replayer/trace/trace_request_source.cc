// See trace_request_source.h.
#include "replayer/trace/trace_request_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace vanguard::replayer {
namespace {

absl::Status CheckShard(int shard, int shards) {
  if (shards < 1 || shard < 0 || shard >= shards) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard ", shard, " of ", shards, ": need 0 <= shard < shards"));
  }
  return absl::OkStatus();
}

// The gap into a new lap: the mean recorded gap (the first record's own inter-arrival is
// relative to the start of the recording, not to the last record).
uint64_t LapGap(const TraceSummary& summary) {
  return summary.records > 1 ? summary.span_us / static_cast<uint64_t>(summary.records - 1) : 0;
}

std::string Reindex(const std::string& path) {
  return absl::StrCat(" (a stale index? re-run: vanguard-replayer trace index ", path, ")");
}

// Index entries a seeking shard of `shards` reads at once: a contiguous run covering up to 64
// of its records (the entries before and after each included) in at most 64 KiB, or, past 256
// shards, one record's three entries. A read costs about as much as copying a few KiB, so a
// run pays while each record's share of it (`shards` entries) stays within 4 KiB.
int64_t IndexRunEntries(int shards) {
  constexpr int64_t kRunEntries = (64 << 10) / kTraceIndexEntryBytes;
  constexpr int64_t kEntriesPerRecord = (4 << 10) / kTraceIndexEntryBytes;
  if (shards > kEntriesPerRecord) return 3;
  const int64_t own = std::min<int64_t>(64, kRunEntries / shards);
  return (own - 1) * shards + 3;
}

}  // namespace

bool SeekingPays(int shards, uint64_t mean_record_bytes) {
  return shards > 1 && static_cast<uint64_t>(shards - 1) * mean_record_bytes >= kSeekBreakEvenBytes;
}

TraceRequestSource::TraceRequestSource(std::string path, std::unique_ptr<TraceReader> reader,
                                       std::unique_ptr<TraceIndex> index,
                                       const TraceSummary& summary, int shard, int shards,
                                       TraceSourceOptions options)
    : path_(std::move(path)),
      reader_(std::move(reader)),
      index_(std::move(index)),
      summary_(summary),
      shard_(shard),
      shards_(shards),
      options_(options) {}

absl::StatusOr<std::unique_ptr<TraceRequestSource>> TraceRequestSource::Open(
    const std::string& path, const TraceSummary& summary, int shard, int shards,
    TraceSourceOptions options) {
  RETURN_IF_ERROR(CheckShard(shard, shards));
  ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(path, options.reader));
  return std::unique_ptr<TraceRequestSource>(
      new TraceRequestSource(path, std::move(reader), nullptr, summary, shard, shards, options));
}

absl::StatusOr<std::unique_ptr<TraceRequestSource>> TraceRequestSource::OpenIndexed(
    const std::string& path, const TraceSummary& summary, int shard, int shards,
    TraceSourceOptions options) {
  RETURN_IF_ERROR(CheckShard(shard, shards));
  ASSIGN_OR_RETURN(std::unique_ptr<TraceIndex> index, TraceIndex::Open(TraceIndexPath(path)));
  if (index->records() != summary.records || index->summary().span_us != summary.span_us) {
    return absl::DataLossError(
        absl::StrCat(index->path(), ": changed since the step validated it", Reindex(path)));
  }
  const uint64_t mean_record_bytes =
      summary.records > 0
          ? (index->trace_bytes() - kTraceFileHeaderBytes) / static_cast<uint64_t>(summary.records)
          : 0;
  if (options.reading == TraceReading::kStream ||
      (options.reading == TraceReading::kChosen && !SeekingPays(shards, mean_record_bytes))) {
    return Open(path, summary, shard, shards, options);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(path, options.reader));
  std::unique_ptr<TraceRequestSource> source(new TraceRequestSource(
      path, std::move(reader), std::move(index), summary, shard, shards, options));
  source->entry_run_.resize(
      static_cast<size_t>(std::min<int64_t>(IndexRunEntries(shards), summary.records)) *
      kTraceIndexEntryBytes);
  return source;
}

absl::Status TraceRequestSource::ReadOne() {
  ASSIGN_OR_RETURN(bool got, reader_->Next(&record_));
  uint64_t gap = record_.interarrival_us;
  if (!got) {
    if (!options_.loop || summary_.records == 0) {
      return absl::OutOfRangeError(
          absl::StrCat("trace ended after ", stream_index_ + 1, " requests"));
    }
    RETURN_IF_ERROR(reader_->Rewind());
    ASSIGN_OR_RETURN(got, reader_->Next(&record_));
    if (!got) return absl::DataLossError("trace became empty while replaying it");
    gap = LapGap(summary_);
  } else if (reader_->records_read() == 1) {
    gap = 0;  // the first record of a lap: its offset comes from the lap transition
  }
  if (stream_index_ >= 0) offset_us_ += gap;
  ++stream_index_;
  return absl::OkStatus();
}

absl::Status TraceRequestSource::ReadOwnIndexed() {
  const int64_t next = stream_index_ < 0 ? shard_ : stream_index_ + shards_;
  const int64_t records = summary_.records;
  if (records == 0 || (!options_.loop && next >= records)) {
    return absl::OutOfRangeError(absl::StrCat("trace ended after ", records, " requests"));
  }
  const int64_t lap = next / records;
  ASSIGN_OR_RETURN(uint64_t arrival_us, ReadIndexedRecord(next % records));
  // As streaming: each lap after the first starts one mean gap after the previous lap's end.
  offset_us_ = static_cast<uint64_t>(lap) * (summary_.span_us + LapGap(summary_)) + arrival_us;
  stream_index_ = next;
  return absl::OkStatus();
}

absl::StatusOr<const char*> TraceRequestSource::EntryBytes(int64_t first, int64_t last) {
  if (first < run_first_ || last >= run_first_ + run_count_) {
    const int64_t capacity = static_cast<int64_t>(entry_run_.size() / kTraceIndexEntryBytes);
    run_first_ = first;
    run_count_ = 0;  // until the read succeeds
    const int64_t count = std::min<int64_t>(capacity, summary_.records - first);
    RETURN_IF_ERROR(index_->ReadEntryRun(first, count, entry_run_.data()));
    run_count_ = count;
  }
  return entry_run_.data() + (first - run_first_) * kTraceIndexEntryBytes;
}

absl::StatusOr<uint64_t> TraceRequestSource::ReadIndexedRecord(int64_t i) {
  // Entries i-1 (for the gap), i, and i+1 (where the record must end), as far as they exist.
  const int64_t first = std::max<int64_t>(i - 1, 0);
  const int64_t last = std::min<int64_t>(i + 1, summary_.records - 1);
  ASSIGN_OR_RETURN(const char* bytes, EntryBytes(first, last));
  auto entry = [&](int64_t k) {
    return index_->Entry(k, bytes + (k - first) * kTraceIndexEntryBytes);
  };
  ASSIGN_OR_RETURN(const TraceIndexEntry own, entry(i));
  uint64_t end = index_->trace_bytes();
  if (i < last) {
    ASSIGN_OR_RETURN(const TraceIndexEntry next, entry(i + 1));
    end = next.record_offset;
  }
  auto mismatch = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat(path_, ": record ", i + 1, " at byte offset ",
                                            own.record_offset, ": ", what, Reindex(path_)));
  };
  if (end <= own.record_offset) return mismatch("the next record starts before it");
  RETURN_IF_ERROR(reader_->Seek(own.record_offset, i, end - own.record_offset));
  ASSIGN_OR_RETURN(bool got, reader_->Next(&record_));
  if (!got) return mismatch("the trace ends there");
  if (reader_->offset() != end) {
    return mismatch(absl::StrCat("the record ends at byte offset ", reader_->offset(),
                                 ", the index says ", end));
  }
  if (i > 0) {
    ASSIGN_OR_RETURN(const TraceIndexEntry previous, entry(i - 1));
    if (record_.interarrival_us != own.arrival_us - previous.arrival_us) {
      return mismatch(absl::StrCat("its inter-arrival time is ", record_.interarrival_us,
                                   " us, the index says ", own.arrival_us - previous.arrival_us));
    }
  }
  return own.arrival_us;
}

absl::Status TraceRequestSource::Next(OutgoingRequest* out) {
  if (index_ != nullptr) {
    RETURN_IF_ERROR(ReadOwnIndexed());
  } else {
    // Skip to the next record of this shard: index % shards == shard.
    do {
      RETURN_IF_ERROR(ReadOne());
    } while (stream_index_ % shards_ != shard_);
  }
  headers_.clear();
  for (const auto& [name, value] : record_.headers) {
    absl::StrAppend(&headers_, name, ": ", value, "\r\n");
  }
  out->method =
      record_.method.empty() ? std::string_view("POST") : std::string_view(record_.method);
  out->path = record_.path;
  out->headers = headers_;
  out->body = record_.payload;
  out->model = record_.model;
  out->trace_offset = absl::Microseconds(static_cast<int64_t>(offset_us_));
  ++requests_returned_;
  return absl::OkStatus();
}

namespace {

// Checks that `index` (validated) describes the trace at `path`: the trace's size, and its
// first and last records read through the index as a shard reads them. Returns the summary.
absl::StatusOr<TraceSummary> CheckIndexedTrace(const std::string& path, TraceIndex& index) {
  RETURN_IF_ERROR(index.Validate());
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return TraceFileError(errno, absl::StrCat("cannot open trace ", path));
  }
  if (static_cast<uint64_t>(st.st_size) != index.trace_bytes()) {
    return absl::DataLossError(absl::StrCat(path, " is ", st.st_size, " bytes, but its index ",
                                            index.path(), " describes a trace of ",
                                            index.trace_bytes(), " bytes", Reindex(path)));
  }
  if (index.records() == 0) return index.summary();
  // Shard 0 of n reads record 1 first; shard n-1 of n reads record n (the last one while n
  // fits in an int).
  const int shards = static_cast<int>(std::min<int64_t>(index.records(), INT_MAX));
  for (int shard : {0, shards - 1}) {
    ASSIGN_OR_RETURN(
        std::unique_ptr<TraceRequestSource> source,
        TraceRequestSource::OpenIndexed(path, index.summary(), shard, shards,
                                        {.loop = false, .reading = TraceReading::kSeek}));
    OutgoingRequest request;
    RETURN_IF_ERROR(source->Next(&request));
  }
  return index.summary();
}

}  // namespace

absl::StatusOr<RequestSourceFactory> OpenTraceSourceFactory(const std::string& path,
                                                            TraceSourceOptions options) {
  absl::StatusOr<std::unique_ptr<TraceIndex>> index = TraceIndex::Open(TraceIndexPath(path));
  const bool indexed = index.ok();
  absl::StatusOr<TraceSummary> summary = indexed ? CheckIndexedTrace(path, **index)
                                         : index.status().code() == absl::StatusCode::kNotFound
                                             ? SummarizeTrace(path)
                                             : index.status();
  if (!summary.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("trace_path: ", summary.status().message()));
  }
  if (summary->records == 0) {
    return absl::InvalidArgumentError(absl::StrCat("trace_path: ", path, " holds no requests"));
  }
  TraceSummary shape = *summary;
  return RequestSourceFactory([path, shape, options, indexed](
                                  int shard,
                                  int shards) -> absl::StatusOr<std::unique_ptr<RequestSource>> {
    ASSIGN_OR_RETURN(std::unique_ptr<TraceRequestSource> source,
                     indexed ? TraceRequestSource::OpenIndexed(path, shape, shard, shards, options)
                             : TraceRequestSource::Open(path, shape, shard, shards, options));
    return std::unique_ptr<RequestSource>(std::move(source));
  });
}

}  // namespace vanguard::replayer
