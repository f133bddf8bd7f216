// Prometheus text format parsing. See prometheus_text.h.
#include "common/prometheus_text.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace vanguard {
namespace {

bool IsNameStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool IsNameChar(char c) { return IsNameStart(c) || std::isdigit(static_cast<unsigned char>(c)); }

void SkipBlanks(std::string_view s, size_t* i) {
  while (*i < s.size() && (s[*i] == ' ' || s[*i] == '\t')) ++*i;
}

std::optional<double> ParseValue(std::string_view token) {
  if (token == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (token == "+Inf" || token == "Inf") return std::numeric_limits<double>::infinity();
  if (token == "-Inf") return -std::numeric_limits<double>::infinity();
  if (token.empty()) return std::nullopt;
  std::string copy(token);
  char* end = nullptr;
  const double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return std::nullopt;
  return v;
}

absl::Status ParseLine(std::string_view line, PrometheusSample* out) {
  size_t i = 0;
  SkipBlanks(line, &i);
  if (i >= line.size() || !IsNameStart(line[i]))
    return absl::InvalidArgumentError("bad metric name");
  const size_t name_begin = i;
  while (i < line.size() && IsNameChar(line[i])) ++i;
  out->name = std::string(line.substr(name_begin, i - name_begin));
  SkipBlanks(line, &i);
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      SkipBlanks(line, &i);
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      if (i >= line.size() || !IsNameStart(line[i]))
        return absl::InvalidArgumentError("bad label name");
      const size_t lb = i;
      while (i < line.size() && IsNameChar(line[i])) ++i;
      std::string label(line.substr(lb, i - lb));
      SkipBlanks(line, &i);
      if (i >= line.size() || line[i] != '=') return absl::InvalidArgumentError("expected '='");
      ++i;
      SkipBlanks(line, &i);
      if (i >= line.size() || line[i] != '"') return absl::InvalidArgumentError("expected '\"'");
      ++i;
      std::string value;
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\' && i < line.size()) {
          const char e = line[i++];
          value.push_back(e == 'n' ? '\n' : e);
        } else {
          value.push_back(c);
        }
      }
      if (!closed) return absl::InvalidArgumentError("unterminated label value");
      out->labels[label] = std::move(value);
      SkipBlanks(line, &i);
      if (i < line.size() && line[i] == ',') ++i;
    }
  }
  SkipBlanks(line, &i);
  const size_t vb = i;
  while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
  const std::optional<double> v = ParseValue(line.substr(vb, i - vb));
  if (!v) return absl::InvalidArgumentError("bad sample value");
  out->value = *v;
  SkipBlanks(line, &i);
  if (i < line.size()) {  // optional integer timestamp
    const size_t tb = i;
    if (line[i] == '-') ++i;
    while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
    if (i == tb) return absl::InvalidArgumentError("bad timestamp");
    SkipBlanks(line, &i);
    if (i < line.size()) return absl::InvalidArgumentError("trailing characters");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<PrometheusSample>> ParsePrometheusText(std::string_view text) {
  std::vector<PrometheusSample> samples;
  int line_number = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t i = 0;
    SkipBlanks(line, &i);
    if (i == line.size() || line[i] == '#') continue;
    PrometheusSample sample;
    if (absl::Status s = ParseLine(line, &sample); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metrics line ", line_number, ": ", s.message(), ": ", std::string(line.substr(0, 120))));
    }
    samples.push_back(std::move(sample));
  }
  return samples;
}

std::optional<double> SumSamples(const std::vector<PrometheusSample>& samples,
                                 std::string_view name) {
  std::optional<double> sum;
  for (const PrometheusSample& s : samples) {
    if (s.name != name || std::isnan(s.value)) continue;
    sum = sum.value_or(0) + s.value;
  }
  return sum;
}

}  // namespace vanguard
