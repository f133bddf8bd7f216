// Machine-readable text besides JSON for the `vanguard` tool: CSV rows with RFC 4180 quoting,
// and YAML written from the same JSON object --output=json prints (so YAML and JSON carry the
// same fields, names and values; int64 fields stay strings, as protobuf's JSON mapping has
// them).
//
//   out << CsvLine({"id", "verdict"}) << CsvLine({"7", "p99 over SLO, 2 windows"});
//   // id,verdict\n7,"p99 over SLO, 2 windows"\n
//   out << JsonToYaml(nlohmann::ordered_json::parse(R"({"name": "yes", "n": 1})"));
//   // name: "yes"\nn: 1\n
//
// Pure functions; any thread may call them.
#ifndef VANGUARD_ORCHESTRATOR_CLI_FORMATS_H_
#define VANGUARD_ORCHESTRATOR_CLI_FORMATS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace vanguard::cli {

// A field as is, or in double quotes (quotes doubled) when it holds a comma, a quote, CR or LF,
// or starts or ends with a space.
std::string CsvField(absl::string_view text);
// The fields quoted and joined by commas, ending in "\n".
std::string CsvLine(const std::vector<std::string>& fields);
// The shortest text that reads back as the same double ("0.1", "250", "1e+20"); "NaN",
// "Infinity" and "-Infinity" as protobuf's JSON mapping spells them.
std::string CsvNumber(double value);

// A YAML document (block style, two-space indents, keys in the object's order) of `value`.
// A string is written plain only when no YAML 1.1 or 1.2 reader can take it for anything else
// (a number, a bool, null, a date, an indicator); otherwise it is double-quoted with escapes
// for quotes, backslashes, control characters and Unicode line breaks. Ends in "\n".
std::string JsonToYaml(const nlohmann::ordered_json& value);
// One string as JsonToYaml writes it (plain or double-quoted), for tests and keys.
std::string YamlString(absl::string_view text);

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_FORMATS_H_
