// Tests of the JSONL request log -> trace converter: field handling, inter-arrival times from
// timestamps, and bad lines reported with their line numbers.
#include "replayer/trace/jsonl_log_converter.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "inference/grpc_service.pb.h"

namespace vanguard::replayer {
namespace {

using ::testing::HasSubstr;

std::string TempPath(absl::string_view name) {
  return absl::StrCat(::testing::TempDir(), "/", name, ".", getpid());
}

std::vector<TraceRecord> ReadAll(const std::string& path) {
  auto reader = TraceReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  std::vector<TraceRecord> out;
  TraceRecord r;
  while (reader.ok() && *(*reader)->Next(&r)) out.push_back(r);
  return out;
}

TEST(JsonlLogConverterTest, ConvertsGoodLinesAndReportsBadOnesByLineNumber) {
  std::string log = TempPath("log.jsonl");
  std::string trace = TempPath("log.vtr");
  {
    std::ofstream out(log);
    out << R"({"timestamp":"2026-11-29T16:00:00Z","model":"resnet","body":{"inputs":[1]},"headers":{"Content-Type":"application/json","Authorization":"Bearer secret"}})"
           "\n"
        << R"({"timestamp":"2026-11-29T16:00:00.250Z","model":"resnet","body":"raw bytes"})"
           "\n"
        << "this is not json\n"
        << "\n"
        << R"({"model":"resnet","body":{}})"
           "\n"
        << R"({"timestamp":1795968000500,"path":"/v1/chat/completions","body":{"model":"llama","stream":true}})"
           "\n"
        << R"({"timestamp":"yesterday","model":"resnet"})"
           "\n"
        << R"({"timestamp":1795968000400,"model":"resnet","headers":{"x-n":5}})"
           "\n"
        << R"({"timestamp":1795968000400,"model":"resnet","headers":{"x-n":"5"}})";  // no final \n
  }
  auto report = ConvertJsonlLogToTrace(log, trace, {});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->records_written, 4);
  EXPECT_EQ(report->bad_lines, 4);
  ASSERT_EQ(report->bad_line_details.size(), 4u);
  EXPECT_EQ(report->bad_line_details[0].line_number, 3);
  EXPECT_THAT(report->bad_line_details[0].reason, HasSubstr("not valid JSON"));
  EXPECT_EQ(report->bad_line_details[1].line_number, 5);
  EXPECT_THAT(report->bad_line_details[1].reason, HasSubstr("timestamp"));
  EXPECT_EQ(report->bad_line_details[2].line_number, 7);
  EXPECT_THAT(report->bad_line_details[2].reason, HasSubstr("RFC 3339"));
  EXPECT_EQ(report->bad_line_details[3].line_number, 8);
  EXPECT_THAT(report->bad_line_details[3].reason, HasSubstr("headers.x-n"));

  std::vector<TraceRecord> records = ReadAll(trace);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0].interarrival_us, 0u);
  EXPECT_EQ(records[0].protocol, "kserve_v2_rest");
  EXPECT_EQ(records[0].path, "/v2/models/resnet/infer");
  EXPECT_EQ(records[0].payload, R"({"inputs":[1]})");
  // Credentials never reach a trace.
  ASSERT_EQ(records[0].headers.size(), 1u);
  EXPECT_EQ(records[0].headers[0].first, "Content-Type");
  EXPECT_EQ(records[1].interarrival_us, 250'000u);
  EXPECT_EQ(records[1].payload, "raw bytes");
  // 2026-11-29T16:00:00.5Z in epoch ms: 250 ms after the previous line.
  EXPECT_EQ(records[2].interarrival_us, 250'000u);
  EXPECT_EQ(records[2].protocol, "openai_chat");
  EXPECT_EQ(records[2].model, "llama");
  // Earlier than the previous line: gap 0, counted as out of order.
  EXPECT_EQ(records[3].interarrival_us, 0u);
  EXPECT_EQ(report->out_of_order_lines, 1);
}

TEST(JsonlLogConverterTest, GrpcLinesStoreASerializedModelInferRequest) {
  TraceRecord record;
  int64_t ts = 0;
  ASSERT_TRUE(
      ParseJsonlLogLine(
          R"({"timestamp":5,"protocol":"kserve_v2_grpc","model":"resnet","body":{"inputs":[{"name":"x","shape":[2],"datatype":"INT64","data":[7,8]}]}})",
          {}, &record, &ts)
          .ok());
  EXPECT_EQ(record.path, "/inference.GRPCInferenceService/ModelInfer");
  inference::ModelInferRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(record.payload));
  EXPECT_EQ(parsed.model_name(), "resnet");
  EXPECT_EQ(parsed.inputs(0).contents().int64_contents(1), 8);
  absl::Status bad = ParseJsonlLogLine(
      R"({"timestamp":5,"protocol":"kserve_v2_grpc","model":"m","body":"opaque"})", {}, &record,
      &ts);
  EXPECT_THAT(bad.message(), HasSubstr("field body"));
}

// The in-memory entry point the file converter uses: records go to the sink in order.
TEST(JsonlLogConverterTest, ConvertsALogFromAStreamIntoTheSink) {
  std::istringstream log(R"({"timestamp":1000,"model":"a"})"
                         "\r\n"
                         R"({"timestamp":1002,"model":"b"})");
  std::vector<TraceRecord> records;
  auto report = ConvertJsonlLog(log, {}, [&](const TraceRecord& r) {
    records.push_back(r);
    return absl::OkStatus();
  });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->records_written, 2);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].model, "a");
  EXPECT_EQ(records[1].interarrival_us, 2'000u);
}

TEST(JsonlLogConverterTest, ASinkErrorStopsTheConversion) {
  std::istringstream log(R"({"timestamp":1,"model":"a"})"
                         "\n"
                         R"({"timestamp":2,"model":"b"})");
  int calls = 0;
  auto report = ConvertJsonlLog(log, {}, [&](const TraceRecord&) {
    ++calls;
    return absl::ResourceExhaustedError("disk full");
  });
  EXPECT_EQ(report.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(calls, 1);
}

// A reason may be printed to a terminal: it quotes a bounded, escaped prefix of the line.
TEST(JsonlLogConverterTest, ReasonsQuoteABoundedPrintablePrefixOfTheLine) {
  std::string key = std::string(100, 'k') + "\\u001b[31m" + std::string(5000, 'z');
  std::istringstream log(R"({"timestamp":1,"model":"m","headers":{")" + key +
                         R"(":1}})"
                         "\n"
                         R"({"timestamp":1,"protocol":"p\u001b[31m"})");
  auto report = ConvertJsonlLog(log, {}, [](const TraceRecord&) { return absl::OkStatus(); });
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->bad_line_details.size(), 2u);
  const std::string& long_key = report->bad_line_details[0].reason;
  EXPECT_THAT(long_key, HasSubstr("field headers." + std::string(kMaxJsonlEchoBytes, 'k') +
                                  "...: value must be a string"));
  EXPECT_LE(long_key.size(), kMaxJsonlBadLineReasonBytes);
  EXPECT_EQ(long_key.find('z'), std::string::npos);
  const std::string& escape = report->bad_line_details[1].reason;
  EXPECT_THAT(escape, HasSubstr(R"(protocol "p\x1b[31m")"));
  EXPECT_EQ(escape.find('\x1b'), std::string::npos);
}

// Inter-arrival times are differences of timestamps: RFC 3339 strings far outside the range
// the numbers have (absl parses "infinite-past", years beyond 9999 and before 1970) would
// overflow them.
TEST(JsonlLogConverterTest, TimestampsOutsideTheNumbersRangeAreBadLines) {
  std::istringstream log(R"({"timestamp":"infinite-past","model":"m"})"
                         "\n"
                         R"({"timestamp":"infinite-future","model":"m"})"
                         "\n"
                         R"({"timestamp":"1969-12-31T23:59:59Z","model":"m"})"
                         "\n"
                         R"({"timestamp":"99999-01-01T00:00:00Z","model":"m"})"
                         "\n"
                         R"({"timestamp":"1970-01-01T00:00:00Z","model":"m"})"
                         "\n"
                         R"({"timestamp":1e15,"model":"m"})");
  std::vector<TraceRecord> records;
  auto report = ConvertJsonlLog(log, {}, [&](const TraceRecord& r) {
    records.push_back(r);
    return absl::OkStatus();
  });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->bad_lines, 4);
  for (const JsonlBadLine& bad : report->bad_line_details) {
    EXPECT_THAT(bad.reason, HasSubstr("field timestamp: out of range")) << bad.line_number;
  }
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].interarrival_us, uint64_t{1'000'000'000'000'000'000});
}

// Serializing the body (and the KServe reader) recurse per level: a million levels of
// nesting overflowed the stack before the depth check.
TEST(JsonlLogConverterTest, DeeplyNestedLinesAreBadLines) {
  const size_t deep = 1'000'000;
  std::istringstream log(R"({"timestamp":1,"model":"m","body":)" + std::string(deep, '[') +
                         std::string(deep, ']') + "}\n" + R"({"timestamp":2,"model":"m","body":)" +
                         std::string(kMaxJsonlNestingDepth - 1, '[') + R"("[{")" +
                         std::string(kMaxJsonlNestingDepth - 1, ']') + "}");
  std::vector<TraceRecord> records;
  auto report = ConvertJsonlLog(log, {}, [&](const TraceRecord& r) {
    records.push_back(r);
    return absl::OkStatus();
  });
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->bad_line_details.size(), 1u);
  EXPECT_EQ(report->bad_line_details[0].line_number, 1);
  EXPECT_THAT(report->bad_line_details[0].reason, HasSubstr("nested deeper than 64 levels"));
  ASSERT_EQ(records.size(), 1u);  // brackets inside a string are not nesting
}

TEST(JsonlLogConverterTest, MissingInputIsNotFound) {
  EXPECT_EQ(ConvertJsonlLogToTrace(TempPath("nope"), TempPath("nope.vtr"), {}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(JsonlLogConverterTest, OverlongLinesAreReportedNotLoaded) {
  std::string log = TempPath("long.jsonl");
  {
    std::ofstream out(log);
    out << R"({"timestamp":1,"model":"m","body":")" << std::string(5000, 'x') << "\"}\n"
        << R"({"timestamp":2,"model":"m"})"
           "\n";
  }
  JsonlConversionOptions options;
  options.max_line_bytes = 1000;
  auto report = ConvertJsonlLogToTrace(log, TempPath("long.vtr"), options);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->records_written, 1);
  ASSERT_EQ(report->bad_line_details.size(), 1u);
  EXPECT_EQ(report->bad_line_details[0].line_number, 1);
  EXPECT_THAT(report->bad_line_details[0].reason, HasSubstr("longer than 1000 bytes"));
}

TEST(JsonlLogConverterTest, KServeLineWithoutAModelIsBad) {
  TraceRecord record;
  int64_t ts = 0;
  absl::Status s = ParseJsonlLogLine(R"({"timestamp":5,"body":{}})", {}, &record, &ts);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("field model"));
}

}  // namespace
}  // namespace vanguard::replayer
