// See trace_request_source.h.
#include "replayer/trace/trace_request_source.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace vanguard::replayer {

TraceRequestSource::TraceRequestSource(std::unique_ptr<TraceReader> reader,
                                       const TraceSummary& summary, int shard, int shards,
                                       TraceSourceOptions options)
    : reader_(std::move(reader)),
      summary_(summary),
      shard_(shard),
      shards_(shards),
      options_(options) {}

absl::StatusOr<std::unique_ptr<TraceRequestSource>> TraceRequestSource::Open(
    const std::string& path, const TraceSummary& summary, int shard, int shards,
    TraceSourceOptions options) {
  if (shards < 1 || shard < 0 || shard >= shards) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard ", shard, " of ", shards, ": need 0 <= shard < shards"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(path, options.reader));
  return std::unique_ptr<TraceRequestSource>(
      new TraceRequestSource(std::move(reader), summary, shard, shards, options));
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
    // The gap into a new lap is the mean recorded gap (the first record's own inter-arrival
    // is relative to the start of the recording, not to the last record).
    gap = summary_.records > 1 ? summary_.span_us / static_cast<uint64_t>(summary_.records - 1) : 0;
  } else if (reader_->records_read() == 1) {
    gap = 0;  // the first record of a lap: its offset comes from the lap transition
  }
  if (stream_index_ >= 0) offset_us_ += gap;
  ++stream_index_;
  return absl::OkStatus();
}

absl::Status TraceRequestSource::Next(OutgoingRequest* out) {
  // Skip to the next record of this shard: index % shards == shard.
  do {
    RETURN_IF_ERROR(ReadOne());
  } while (stream_index_ % shards_ != shard_);
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

absl::StatusOr<RequestSourceFactory> OpenTraceSourceFactory(const std::string& path,
                                                            TraceSourceOptions options) {
  absl::StatusOr<TraceSummary> summary = SummarizeTrace(path);
  if (!summary.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("trace_path: ", summary.status().message()));
  }
  if (summary->records == 0) {
    return absl::InvalidArgumentError(absl::StrCat("trace_path: ", path, " holds no requests"));
  }
  TraceSummary shape = *summary;
  return RequestSourceFactory(
      [path, shape, options](int shard,
                             int shards) -> absl::StatusOr<std::unique_ptr<RequestSource>> {
        ASSIGN_OR_RETURN(std::unique_ptr<TraceRequestSource> source,
                         TraceRequestSource::Open(path, shape, shard, shards, options));
        return std::unique_ptr<RequestSource>(std::move(source));
      });
}

}  // namespace vanguard::replayer
