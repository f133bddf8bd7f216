// libFuzzer harnesses for the parsers of outside bytes (CONVENTIONS.md rule 19): an
// autoscaler's JSON answer, a Prometheus query answer, a trace file, a submitter's URL, a
// model server's streamed (SSE, OpenAI, chunked) response, a target's HTTP/1.1 response, a
// JSONL request log, a submitter's test spec, a schedule's cron expression.
// Each harness is a plain function, so two programs share it: a fuzzer (fuzzer_main.cc, one
// binary per harness, built with -DVANGUARD_FUZZ=ON and clang) and fuzz_corpus_test (every
// build), which feeds it each file of tests/fuzz/corpus/<name>/.
//
//   const FuzzHarness* h = FindFuzzHarness("trace_reader");
//   h->run(bytes.data(), bytes.size());
//
// A harness takes any bytes and returns 0; it aborts (a crash libFuzzer records, a failure
// the corpus test shows) when the parser throws, crashes or breaks its contract. Harnesses
// keep no state between calls and may run on any thread.
#ifndef VANGUARD_TESTS_FUZZ_FUZZ_HARNESSES_H_
#define VANGUARD_TESTS_FUZZ_FUZZ_HARNESSES_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vanguard::fuzz {

// First line: the dotted field path (json_field); the rest: the answer. See the .cc.
int FuzzControllerJson(const uint8_t* data, size_t size);
// The bytes: a Prometheus /api/v1/query answer.
int FuzzPrometheusAnswer(const uint8_t* data, size_t size);
// The bytes: a trace file (read as is, and again with every record's checksum made valid).
int FuzzTraceReader(const uint8_t* data, size_t size);
// The bytes: a URL for HttpGet.
int FuzzHttpUrl(const uint8_t* data, size_t size);
// The bytes: a Server-Sent Events stream (fed whole and in pieces).
int FuzzSseStream(const uint8_t* data, size_t size);
// The bytes: an OpenAI-compatible streamed response body (fed whole and in pieces).
int FuzzOpenAiStream(const uint8_t* data, size_t size);
// The bytes: an HTTP/1.1 chunked body (fed whole and in pieces).
int FuzzChunkedBody(const uint8_t* data, size_t size);
// The bytes: a TestSpec in protobuf JSON (a submitter's spec file).
int FuzzSpecJson(const uint8_t* data, size_t size);
// The bytes: a webhook URL for AddWebhook.
int FuzzWebhookUrl(const uint8_t* data, size_t size);
// The bytes: an HTTP/1.1 response as the load loop reads it (at once and in pieces).
int FuzzHttpResponse(const uint8_t* data, size_t size);
// The bytes: a JSONL request log for the trace converter.
int FuzzJsonlLog(const uint8_t* data, size_t size);
// The bytes: a schedule's cron expression for SetSchedule.
int FuzzCronExpression(const uint8_t* data, size_t size);

struct FuzzHarness {
  std::string_view name;  // fuzz_<name> is its fuzzer, corpus/<name>/ its seeds
  int (*run)(const uint8_t* data, size_t size);
};

// The one registration point: a new harness is its file, one line here and one name in
// tests/fuzz/CMakeLists.txt.
inline constexpr FuzzHarness kFuzzHarnesses[] = {
    {"controller_json", &FuzzControllerJson},
    {"prometheus_answer", &FuzzPrometheusAnswer},
    {"trace_reader", &FuzzTraceReader},
    {"http_url", &FuzzHttpUrl},
    {"sse_stream", &FuzzSseStream},
    {"openai_stream", &FuzzOpenAiStream},
    {"chunked_body", &FuzzChunkedBody},
    {"spec_json", &FuzzSpecJson},
    {"webhook_url", &FuzzWebhookUrl},
    {"http_response", &FuzzHttpResponse},
    {"jsonl_log", &FuzzJsonlLog},
    {"cron_expression", &FuzzCronExpression},
};

// A marker the seeds place in answers and URLs (as a field value, an error text, a query):
// an error message holding it copied it from the input. A fixed string, unlike a check for
// any input bytes in the message, has no false alarms (a fuzzer soon finds inputs that are
// substrings of the fixed messages).
inline constexpr char kSecretMarker[] = "VGSECRET";

// The harness called `name`, or null.
const FuzzHarness* FindFuzzHarness(std::string_view name);

// Aborts after printing which contract `harness` saw broken. For the checks below.
[[noreturn]] void FuzzContractBroken(const char* harness, const char* check, int line);

}  // namespace vanguard::fuzz

// Aborts (via FuzzContractBroken) unless `cond`; `harness` names the calling harness.
#define VANGUARD_FUZZ_CHECK(harness, cond) \
  ((cond) ? (void)0 : ::vanguard::fuzz::FuzzContractBroken(harness, #cond, __LINE__))

#endif  // VANGUARD_TESTS_FUZZ_FUZZ_HARNESSES_H_
