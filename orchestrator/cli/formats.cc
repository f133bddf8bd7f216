// CSV and YAML text; see formats.h.
#include "orchestrator/cli/formats.h"

#include <charconv>
#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

namespace vanguard::cli {
namespace {

// Characters a plain YAML scalar may hold here. Letters, digits and these never start an
// indicator or a comment in block context; the first character is further restricted below.
bool PlainChar(unsigned char c) {
  return absl::ascii_isalnum(c) || c == ' ' || c == '_' || c == '.' || c == '/' || c == '-' ||
         c == '(' || c == ')' || c == ',' || c == '+';
}

// Words YAML 1.1 reads as bools or null (any case); YAML 1.2 keeps a subset of them.
bool ReservedWord(absl::string_view text) {
  static const auto* const kReserved =
      new std::set<std::string>{"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"};
  return kReserved->contains(absl::AsciiStrToLower(text));
}

// Plain only if it starts with a letter, '_' or '/' (never a digit, sign or dot, so never a
// number, date or .inf), holds only PlainChar, does not end in a space and is no reserved word.
bool CanBePlain(absl::string_view text) {
  if (text.empty() || text.back() == ' ') return false;
  const unsigned char first = text.front();
  if (!absl::ascii_isalpha(first) && first != '_' && first != '/') return false;
  for (unsigned char c : text) {
    if (!PlainChar(c)) return false;
  }
  return !ReservedWord(text);
}

// Appends the escape for the UTF-8 sequence at text[i] if YAML wants one (control
// characters, C1 controls, NEL, the Unicode line and paragraph separators, the byte order
// mark); returns the bytes consumed, 0 when the byte is written as is.
size_t AppendEscape(absl::string_view text, size_t i, std::string& out) {
  const unsigned char c = text[i];
  switch (c) {
    case '"':
      out += "\\\"";
      return 1;
    case '\\':
      out += "\\\\";
      return 1;
    case '\n':
      out += "\\n";
      return 1;
    case '\r':
      out += "\\r";
      return 1;
    case '\t':
      out += "\\t";
      return 1;
    default:
      break;
  }
  if (c < 0x20 || c == 0x7f) {
    absl::StrAppend(&out, absl::StrFormat("\\x%02X", c));
    return 1;
  }
  const absl::string_view rest = text.substr(i);
  if (c == 0xC2 && rest.size() >= 2 && static_cast<unsigned char>(rest[1]) >= 0x80 &&
      static_cast<unsigned char>(rest[1]) <= 0x9F) {
    absl::StrAppend(&out, absl::StrFormat("\\x%02X", static_cast<unsigned char>(rest[1])));
    return 2;
  }
  static constexpr std::pair<absl::string_view, absl::string_view> kUnicode[] = {
      {"\xE2\x80\xA8", "\\L"}, {"\xE2\x80\xA9", "\\P"}, {"\xEF\xBB\xBF", "\\uFEFF"}};
  for (const auto& [bytes, escape] : kUnicode) {
    if (absl::StartsWith(rest, bytes)) {
      absl::StrAppend(&out, escape);
      return bytes.size();
    }
  }
  return 0;
}

std::string DoubleQuoted(absl::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    const size_t used = AppendEscape(text, i, out);
    if (used == 0) {
      out.push_back(text[i]);
      ++i;
    } else {
      i += used;
    }
  }
  out.push_back('"');
  return out;
}

// A scalar or an empty container, on one line.
std::string Inline(const nlohmann::ordered_json& value) {
  switch (value.type()) {
    case nlohmann::ordered_json::value_t::null:
      return "null";
    case nlohmann::ordered_json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case nlohmann::ordered_json::value_t::string:
      return YamlString(value.get_ref<const std::string&>());
    case nlohmann::ordered_json::value_t::object:
      return "{}";
    case nlohmann::ordered_json::value_t::array:
      return "[]";
    default:
      return value.dump();  // a number, in JSON's spelling (which YAML reads the same)
  }
}

bool IsBlock(const nlohmann::ordered_json& value) {
  return value.is_structured() && !value.empty();
}

// A non-empty object or array as block lines, each starting with `indent` spaces.
void EmitBlock(const nlohmann::ordered_json& value, size_t indent, std::string& out) {
  const std::string pad(indent, ' ');
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      absl::StrAppend(&out, pad, YamlString(it.key()), ":");
      if (!IsBlock(it.value())) {
        absl::StrAppend(&out, " ", Inline(it.value()), "\n");
        continue;
      }
      out += "\n";
      EmitBlock(it.value(), indent + 2, out);
    }
    return;
  }
  for (const nlohmann::ordered_json& item : value) {
    if (!IsBlock(item)) {
      absl::StrAppend(&out, pad, "- ", Inline(item), "\n");
      continue;
    }
    // The item's first line follows the dash; the rest keep their indent.
    std::string nested;
    EmitBlock(item, indent + 2, nested);
    absl::StrAppend(&out, pad, "- ", absl::string_view(nested).substr(indent + 2));
  }
}

}  // namespace

std::string CsvField(absl::string_view text) {
  const bool quote = text.find_first_of(",\"\r\n") != absl::string_view::npos ||
                     (!text.empty() && (text.front() == ' ' || text.back() == ' '));
  if (!quote) return std::string(text);
  return absl::StrCat("\"", absl::StrReplaceAll(text, {{"\"", "\"\""}}), "\"");
}

std::string CsvLine(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line.push_back(',');
    line += CsvField(fields[i]);
  }
  line.push_back('\n');
  return line;
}

std::string CsvNumber(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  char buffer[32];
  const std::to_chars_result result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

std::string YamlString(absl::string_view text) {
  return CanBePlain(text) ? std::string(text) : DoubleQuoted(text);
}

std::string JsonToYaml(const nlohmann::ordered_json& value) {
  if (!IsBlock(value)) return absl::StrCat(Inline(value), "\n");
  std::string out;
  EmitBlock(value, 0, out);
  return out;
}

}  // namespace vanguard::cli
