// The `vanguard report` page; see report_html.h.
//
// Built in three layers: text helpers (escaping, numbers), one SVG plot helper (axes, ticks,
// reference lines, shaded bands, series of marks, legend) and one function per panel that
// turns a test into Plot values.
#include "orchestrator/cli/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/histogram.h"
#include "google/protobuf/util/json_util.h"

namespace vanguard::cli {
namespace {

// ---------------------------------------------------------------------------------------------
// Text

// Escapes text for HTML element content and quoted attribute values. Control bytes other than
// tab and newline are dropped: they have no business in a page and some break parsers.
std::string Escape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') break;
        out.push_back(c);
    }
  }
  return out;
}

// A number for a data-* attribute or an SVG coordinate.
std::string Num(double v) {
  if (!std::isfinite(v)) return "0";
  return absl::StrFormat("%.6g", v);
}

std::string Px(double v) { return absl::StrFormat("%.1f", v); }

std::string Qps(double v) { return absl::StrFormat("%.1f qps", v); }

std::string Ms(double v) { return absl::StrFormat(v < 10 ? "%.2f ms" : "%.1f ms", v); }

double Seconds(const google::protobuf::Duration& d) { return d.seconds() + d.nanos() * 1e-9; }
double Millis(const google::protobuf::Duration& d) { return Seconds(d) * 1e3; }
bool IsSet(const google::protobuf::Timestamp& t) { return t.seconds() != 0 || t.nanos() != 0; }
double Seconds(const google::protobuf::Timestamp& t) { return t.seconds() + t.nanos() * 1e-9; }

std::string FormatTime(const google::protobuf::Timestamp& t) {
  if (!IsSet(t)) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC",
                          absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos()),
                          absl::UTCTimeZone());
}

// "HEALTH_STATE_WARN" -> "WARN"; "-" for the unspecified value.
std::string EnumSuffix(const std::string& name, absl::string_view prefix) {
  absl::string_view suffix = name;
  absl::ConsumePrefix(&suffix, prefix);
  if (suffix == "UNSPECIFIED" || suffix.empty()) return "-";
  return std::string(suffix);
}

std::string HealthName(v1::HealthState h) {
  return EnumSuffix(v1::HealthState_Name(h), "HEALTH_STATE_");
}

std::string HealthColor(v1::HealthState h) {
  switch (h) {
    case v1::HEALTH_STATE_HEALTHY:
      return "#2ca02c";
    case v1::HEALTH_STATE_WARN:
      return "#d4a900";
    case v1::HEALTH_STATE_UNHEALTHY:
      return "#ff7f0e";
    case v1::HEALTH_STATE_CRITICAL:
      return "#d62728";
    case v1::HEALTH_STATE_OVERLOADED:
      return "#7b1010";
    default:
      return "#999999";
  }
}

std::string ProtoJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) return "{}";
  return json;
}

// ---------------------------------------------------------------------------------------------
// The plot helper: one SVG scatter/line chart with axes, reference lines, bands and a legend.

// One plotted point. `attrs` are extra data-* attributes (name without "data-").
struct Mark {
  double x = 0, y = 0;
  std::string fill;  // empty: the series colour
  bool hollow = false;
  std::string tip;
  std::vector<std::pair<std::string, std::string>> attrs;
};

struct Series {
  std::string name, color;
  std::vector<Mark> marks;
  bool line = true, dots = true, dashed = false, in_legend = true;
};

// A horizontal (y = at) or vertical (x = at) reference line.
struct RefLine {
  std::string name, color;
  bool vertical = false;
  double at = 0;
};

// A shaded range of x (vertical band) or of y.
struct Band {
  std::string name, color;
  bool vertical = true;
  double from = 0, to = 0;
  bool in_legend = true;
};

struct LegendEntry {
  std::string name, color;
  enum Kind { kDot, kHollow, kLine, kDash, kBand } kind = kDot;
};

struct Plot {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  std::vector<RefLine> lines;
  std::vector<Band> bands;
  std::vector<LegendEntry> extra_legend;
  bool x_from_zero = false, y_from_zero = true;
  bool x_log_ok = false, y_log_ok = false;  // log scale when the data spans > 20x
};

constexpr double kWidth = 640, kLeft = 64, kRight = 624, kTop = 34, kBottom = 254;
constexpr double kLegendTop = 302, kLegendRow = 16;

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<double> ticks;

  double Frac(double v) const {
    if (log) {
      v = std::max(v, lo);
      return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    }
    return (v - lo) / (hi - lo);
  }
};

double NiceStep(double raw) {
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

Axis LogAxis(double min, double max) {
  Axis a;
  a.log = true;
  a.lo = std::pow(10, std::floor(std::log10(min)));
  a.hi = std::pow(10, std::ceil(std::log10(max)));
  if (a.hi <= a.lo) a.hi = a.lo * 10;
  const bool sparse = std::log10(a.hi / a.lo) > 3;
  for (double d = a.lo; d <= a.hi * 1.0001; d *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      if ((m == 1.0 || !sparse) && d * m <= a.hi * 1.0001) a.ticks.push_back(d * m);
    }
  }
  return a;
}

// Nice bounds and about five ticks over `values` (which must not be empty).
Axis MakeAxis(const std::vector<double>& values, bool from_zero, bool log_ok) {
  double min = *std::min_element(values.begin(), values.end());
  double max = *std::max_element(values.begin(), values.end());
  double pos_min = max;
  for (double v : values) {
    if (v > 0) pos_min = std::min(pos_min, v);
  }
  if (log_ok && pos_min > 0 && max / pos_min > 20) return LogAxis(pos_min, max);
  if (from_zero) min = std::min(min, 0.0);
  if (max - min < 1e-9) max = min + std::max(1.0, std::abs(min) * 0.1);
  Axis a;
  const double step = NiceStep((max - min) / 5);
  a.lo = std::floor(min / step) * step;
  a.hi = std::ceil(max / step) * step;
  for (double t = a.lo; t <= a.hi + step * 1e-6; t += step) {
    a.ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  }
  return a;
}

std::string TickLabel(double v) {
  if (v != 0 && (std::abs(v) >= 1e6 || std::abs(v) < 1e-3)) return absl::StrFormat("%.0e", v);
  return absl::StrFormat("%.4g", v);
}

std::pair<Axis, Axis> PlotAxes(const Plot& plot) {
  std::vector<double> xs, ys;
  for (const Series& s : plot.series) {
    for (const Mark& m : s.marks) {
      xs.push_back(m.x);
      ys.push_back(m.y);
    }
  }
  for (const RefLine& l : plot.lines) (l.vertical ? xs : ys).push_back(l.at);
  for (const Band& b : plot.bands) {
    (b.vertical ? xs : ys).push_back(b.from);
    (b.vertical ? xs : ys).push_back(b.to);
  }
  if (xs.empty()) xs = {0, 1};
  if (ys.empty()) ys = {0, 1};
  return {MakeAxis(xs, plot.x_from_zero, plot.x_log_ok),
          MakeAxis(ys, plot.y_from_zero, plot.y_log_ok)};
}

double ToX(const Axis& a, double v) { return kLeft + a.Frac(v) * (kRight - kLeft); }
double ToY(const Axis& a, double v) { return kBottom - a.Frac(v) * (kBottom - kTop); }

std::string AxesSvg(const Plot& plot, const Axis& x, const Axis& y) {
  std::string out = "<g class=\"axes\">";
  for (double t : x.ticks) {
    absl::StrAppend(&out, "<line class=\"grid\" x1=\"", Px(ToX(x, t)), "\" x2=\"", Px(ToX(x, t)),
                    "\" y1=\"", Px(kTop), "\" y2=\"", Px(kBottom), "\"/><text class=\"tick\" x=\"",
                    Px(ToX(x, t)), "\" y=\"", Px(kBottom + 14), "\" text-anchor=\"middle\">",
                    TickLabel(t), "</text>");
  }
  for (double t : y.ticks) {
    absl::StrAppend(&out, "<line class=\"grid\" x1=\"", Px(kLeft), "\" x2=\"", Px(kRight),
                    "\" y1=\"", Px(ToY(y, t)), "\" y2=\"", Px(ToY(y, t)),
                    "\"/><text class=\"tick\" x=\"", Px(kLeft - 6), "\" y=\"", Px(ToY(y, t) + 4),
                    "\" text-anchor=\"end\">", TickLabel(t), "</text>");
  }
  absl::StrAppend(&out, "<rect class=\"frame\" x=\"", Px(kLeft), "\" y=\"", Px(kTop), "\" width=\"",
                  Px(kRight - kLeft), "\" height=\"", Px(kBottom - kTop), "\"/>");
  absl::StrAppend(&out, "<text class=\"label\" x=\"", Px((kLeft + kRight) / 2), "\" y=\"",
                  Px(kBottom + 32), "\" text-anchor=\"middle\">", Escape(plot.x_label),
                  x.log ? " (log)" : "", "</text>");
  absl::StrAppend(&out, "<text class=\"label\" transform=\"translate(14 ", Px((kTop + kBottom) / 2),
                  ") rotate(-90)\" text-anchor=\"middle\">", Escape(plot.y_label),
                  y.log ? " (log)" : "", "</text></g>");
  return out;
}

std::string BandsSvg(const Plot& plot, const Axis& x, const Axis& y) {
  std::string out;
  for (const Band& b : plot.bands) {
    double x0 = kLeft, x1 = kRight, y0 = kTop, y1 = kBottom;
    if (b.vertical) {
      x0 = ToX(x, b.from);
      x1 = ToX(x, b.to);
    } else {
      y0 = ToY(y, b.to);
      y1 = ToY(y, b.from);
    }
    absl::StrAppend(&out, "<rect class=\"band\" data-name=\"", Escape(b.name), "\" data-from=\"",
                    Num(b.from), "\" data-to=\"", Num(b.to), "\" x=\"", Px(x0), "\" y=\"", Px(y0),
                    "\" width=\"", Px(std::max(x1 - x0, 1.0)), "\" height=\"",
                    Px(std::max(y1 - y0, 1.0)), "\" fill=\"", b.color, "\"/>");
  }
  return out;
}

std::string RefLinesSvg(const Plot& plot, const Axis& x, const Axis& y) {
  std::string out;
  for (const RefLine& l : plot.lines) {
    const double x1 = l.vertical ? ToX(x, l.at) : kLeft, x2 = l.vertical ? x1 : kRight;
    const double y1 = l.vertical ? kTop : ToY(y, l.at), y2 = l.vertical ? kBottom : y1;
    absl::StrAppend(&out, "<line class=\"ref\" data-name=\"", Escape(l.name), "\" data-at=\"",
                    Num(l.at), "\" x1=\"", Px(x1), "\" x2=\"", Px(x2), "\" y1=\"", Px(y1),
                    "\" y2=\"", Px(y2), "\" stroke=\"", l.color, "\"/>");
  }
  return out;
}

std::string MarkSvg(const Series& s, const Mark& m, const Axis& x, const Axis& y) {
  const std::string color = m.fill.empty() ? s.color : m.fill;
  std::string out = absl::StrCat("<circle class=\"pt\" data-series=\"", Escape(s.name),
                                 "\" data-x=\"", Num(m.x), "\" data-y=\"", Num(m.y), "\"");
  for (const auto& [name, value] : m.attrs) {
    absl::StrAppend(&out, " data-", name, "=\"", Escape(value), "\"");
  }
  absl::StrAppend(&out, " cx=\"", Px(ToX(x, m.x)), "\" cy=\"", Px(ToY(y, m.y)), "\" r=\"",
                  s.line ? "3" : "4.5", "\" fill=\"", m.hollow ? "#ffffff" : color, "\" stroke=\"",
                  color, "\" stroke-width=\"", m.hollow ? "2.5" : "1", "\">");
  if (!m.tip.empty()) absl::StrAppend(&out, "<title>", Escape(m.tip), "</title>");
  return absl::StrCat(out, "</circle>");
}

std::string SeriesSvg(const Series& s, const Axis& x, const Axis& y) {
  std::string out = absl::StrCat("<g class=\"series\" data-series=\"", Escape(s.name), "\">");
  if (s.line && s.marks.size() >= 2) {
    std::vector<std::string> pts;
    for (const Mark& m : s.marks)
      pts.push_back(absl::StrCat(Px(ToX(x, m.x)), ",", Px(ToY(y, m.y))));
    absl::StrAppend(&out, "<polyline class=\"line\" data-series=\"", Escape(s.name),
                    "\" data-points=\"", s.marks.size(), "\" points=\"", absl::StrJoin(pts, " "),
                    "\" fill=\"none\" stroke=\"", s.color, "\"",
                    s.dashed ? " stroke-dasharray=\"6 4\"" : "", "/>");
  }
  if (s.dots) {
    for (const Mark& m : s.marks) absl::StrAppend(&out, MarkSvg(s, m, x, y));
  }
  return absl::StrCat(out, "</g>");
}

std::vector<LegendEntry> LegendOf(const Plot& plot) {
  std::vector<LegendEntry> entries;
  for (const Series& s : plot.series) {
    if (!s.in_legend) continue;
    entries.push_back({s.name, s.color,
                       s.dashed ? LegendEntry::kDash
                       : s.dots ? LegendEntry::kDot
                                : LegendEntry::kLine});
  }
  for (const RefLine& l : plot.lines) entries.push_back({l.name, l.color, LegendEntry::kDash});
  for (const Band& b : plot.bands) {
    if (b.in_legend) entries.push_back({b.name, b.color, LegendEntry::kBand});
  }
  entries.insert(entries.end(), plot.extra_legend.begin(), plot.extra_legend.end());
  return entries;
}

std::string LegendSwatch(const LegendEntry& e, double x, double y) {
  switch (e.kind) {
    case LegendEntry::kDot:
    case LegendEntry::kHollow:
      return absl::StrCat("<circle cx=\"", Px(x + 7), "\" cy=\"", Px(y - 4), "\" r=\"4\" fill=\"",
                          e.kind == LegendEntry::kHollow ? "#ffffff" : e.color, "\" stroke=\"",
                          e.color, "\" stroke-width=\"2\"/>");
    case LegendEntry::kBand:
      return absl::StrCat("<rect x=\"", Px(x), "\" y=\"", Px(y - 9),
                          "\" width=\"14\" height=\"10\"", " fill=\"", e.color, "\"/>");
    default:
      return absl::StrCat("<line x1=\"", Px(x), "\" x2=\"", Px(x + 14), "\" y1=\"", Px(y - 4),
                          "\" y2=\"", Px(y - 4), "\" stroke=\"", e.color, "\" stroke-width=\"2\"",
                          e.kind == LegendEntry::kDash ? " stroke-dasharray=\"4 3\"" : "", "/>");
  }
}

// The legend below the plot, wrapped into rows; returns the SVG and sets the height used.
std::string LegendSvg(const std::vector<LegendEntry>& entries, double* height) {
  std::string out = "<g class=\"legend\">";
  double x = kLeft, y = kLegendTop;
  for (const LegendEntry& e : entries) {
    const double width = 24 + 6.2 * e.name.size();
    if (x + width > kWidth && x > kLeft) {
      x = kLeft;
      y += kLegendRow;
    }
    absl::StrAppend(&out, "<g class=\"entry\" data-name=\"", Escape(e.name), "\">",
                    LegendSwatch(e, x, y), "<text x=\"", Px(x + 18), "\" y=\"", Px(y), "\">",
                    Escape(e.name), "</text></g>");
    x += width + 10;
  }
  *height = y + 8;
  return absl::StrCat(out, "</g>");
}

std::string RenderPlot(const Plot& plot) {
  const auto [x, y] = PlotAxes(plot);
  double height = 0;
  const std::string legend = LegendSvg(LegendOf(plot), &height);
  std::string out = absl::StrCat("<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" ",
                                 "viewBox=\"0 0 ", Px(kWidth), " ", Px(height),
                                 "\" role=\"img\" aria-label=\"", Escape(plot.title), "\">");
  absl::StrAppend(&out, "<text class=\"title\" x=\"", Px(kLeft), "\" y=\"20\">", Escape(plot.title),
                  "</text>");
  absl::StrAppend(&out, BandsSvg(plot, x, y), AxesSvg(plot, x, y), RefLinesSvg(plot, x, y));
  for (const Series& s : plot.series) absl::StrAppend(&out, SeriesSvg(s, x, y));
  return absl::StrCat(out, legend, "</svg>");
}

// ---------------------------------------------------------------------------------------------
// What a test says, prepared once for every panel.

enum class Verdict { kPass, kFail, kNotJudged };

Verdict VerdictOf(const v1::Step& s) {
  if (s.passed()) return Verdict::kPass;
  if (s.interrupted() || !s.client_valid()) return Verdict::kNotJudged;
  return Verdict::kFail;
}

absl::string_view VerdictName(Verdict v) {
  return v == Verdict::kPass ? "pass" : v == Verdict::kFail ? "fail" : "not judged";
}

struct SubjectView {
  const v1::Test* test = nullptr;
  v1::Model model;                          // the resolved model, or the name asked for
  const v1::Step* best_pass = nullptr;      // highest passing rate
  const v1::Step* first_failure = nullptr;  // first failed step in order
  const v1::Step* window_step = nullptr;    // whose windows are plotted
  std::string suffix;                       // appended to panel ids ("" or "-1", "-2")
};

v1::Model ResolveModel(const ReportSubject& subject) {
  if (!subject.model.name().empty()) return subject.model;
  if (!subject.test.model().name().empty()) return subject.test.model();
  v1::Model model;
  model.set_name(subject.test.spec().model());
  model.set_version(subject.test.spec().model_version());
  return model;
}

absl::StatusOr<SubjectView> MakeView(const ReportSubject& subject, const ReportOptions& options,
                                     std::string suffix) {
  SubjectView v{&subject.test, ResolveModel(subject), nullptr, nullptr, nullptr, std::move(suffix)};
  for (const v1::Step& s : subject.test.steps()) {
    const Verdict verdict = VerdictOf(s);
    if (verdict == Verdict::kPass &&
        (v.best_pass == nullptr || s.target_qps() >= v.best_pass->target_qps())) {
      v.best_pass = &s;
    }
    if (verdict == Verdict::kFail && v.first_failure == nullptr) v.first_failure = &s;
    if (options.window_step_index >= 0 && s.index() == options.window_step_index) {
      v.window_step = &s;
    }
  }
  if (subject.test.steps().empty()) return v;
  if (options.window_step_index >= 0 && v.window_step == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("report: window_step_index ",
                                                   options.window_step_index,
                                                   " names no step of test ", subject.test.id()));
  }
  if (v.window_step == nullptr) {
    v.window_step =
        v.best_pass != nullptr ? v.best_pass : &subject.test.steps(subject.test.steps_size() - 1);
  }
  return v;
}

std::string Section(const SubjectView& v, absl::string_view id, absl::string_view title,
                    absl::string_view body) {
  return absl::StrCat("<section class=\"panel\" id=\"", id, v.suffix, "\" data-panel=\"", id,
                      "\"><h3>", title, "</h3><div class=\"plots\">", body, "</div></section>");
}

std::string Note(absl::string_view text) {
  return absl::StrCat("<p class=\"note\">", Escape(text), "</p>");
}

const v1::TestResult* Estimate(const SubjectView& v) {
  return v.test->has_result() && v.test->result().max_sustainable_qps() > 0 ? &v.test->result()
                                                                            : nullptr;
}

// The estimate as a reference line and its confidence interval as a band, on the rate axis.
void AddEstimate(const SubjectView& v, bool vertical, Plot* plot) {
  const v1::TestResult* r = Estimate(v);
  if (r == nullptr) return;
  if (r->confidence_high_qps() > r->confidence_low_qps() && r->confidence_low_qps() > 0) {
    plot->bands.push_back({"confidence interval", "rgba(31,119,180,0.15)", vertical,
                           r->confidence_low_qps(), r->confidence_high_qps()});
  }
  plot->lines.push_back({absl::StrCat(r->at_least() ? "estimate (at least) " : "estimate ",
                                      Qps(r->max_sustainable_qps())),
                         "#1f77b4", vertical, r->max_sustainable_qps()});
}

// The step's verdict in words, led by pass / fail / not judged.
std::string VerdictText(const v1::Step& s) {
  const absl::string_view name = VerdictName(VerdictOf(s));
  if (s.verdict().empty()) return std::string(name);
  if (absl::StartsWith(s.verdict(), name)) return s.verdict();
  return absl::StrCat(name, ": ", s.verdict());
}

std::string StepTip(const v1::Step& s) {
  return absl::StrCat("step ", s.index(), ": ", Qps(s.target_qps()), ", achieved ",
                      Qps(s.achieved_qps()), ", p99 ", Ms(s.latency().p99_ms()), ", ",
                      HealthName(s.health_state()), ", ", VerdictText(s));
}

Mark StepMark(const v1::Step& s, double x, double y) {
  return Mark{
      x,
      y,
      "",
      false,
      StepTip(s),
      {{"step", absl::StrCat(s.index())}, {"verdict", std::string(VerdictName(VerdictOf(s)))}}};
}

// Steps in the order of their offered rate (the x axis of the rate panels).
std::vector<const v1::Step*> ByRate(const v1::Test& test) {
  std::vector<const v1::Step*> steps;
  for (const v1::Step& s : test.steps()) steps.push_back(&s);
  std::stable_sort(steps.begin(), steps.end(), [](const v1::Step* a, const v1::Step* b) {
    return a->target_qps() < b->target_qps();
  });
  return steps;
}

// ---------------------------------------------------------------------------------------------
// Panels

// The running bracket: after each step, the highest rate that passed and the lowest that
// failed so far.
void AddBracket(const v1::Test& test, Plot* plot) {
  Series low{"highest pass so far", "#2ca02c"}, high{"lowest failure so far", "#d62728"};
  low.dashed = high.dashed = true;
  std::optional<double> pass, fail;
  for (int i = 0; i < test.steps_size(); ++i) {
    const v1::Step& s = test.steps(i);
    const Verdict verdict = VerdictOf(s);
    if (verdict == Verdict::kPass) pass = std::max(pass.value_or(0), s.target_qps());
    if (verdict == Verdict::kFail && (!fail || s.target_qps() < *fail)) fail = s.target_qps();
    // Drawn as steps (the bracket holds from one step to the next), so one value shows too.
    if (pass) low.marks.insert(low.marks.end(), {Mark{i + 0.5, *pass}, Mark{i + 1.5, *pass}});
    if (fail) high.marks.insert(high.marks.end(), {Mark{i + 0.5, *fail}, Mark{i + 1.5, *fail}});
  }
  low.dots = high.dots = false;
  if (!low.marks.empty()) plot->series.push_back(std::move(low));
  if (!high.marks.empty()) plot->series.push_back(std::move(high));
}

std::string SearchPanel(const SubjectView& v) {
  Plot plot{"Offered rate of each step, in the order run", "step (order run)",
            "offered rate (qps)"};
  Series steps{"steps", "#555555"};
  for (int i = 0; i < v.test->steps_size(); ++i) {
    const v1::Step& s = v.test->steps(i);
    Mark m = StepMark(s, i + 1.0, s.target_qps());
    m.fill = HealthColor(s.health_state());
    m.hollow = VerdictOf(s) != Verdict::kPass;
    m.attrs.push_back({"health", HealthName(s.health_state())});
    steps.marks.push_back(std::move(m));
  }
  steps.in_legend = false;
  plot.series.push_back(std::move(steps));
  AddBracket(*v.test, &plot);
  AddEstimate(v, /*vertical=*/false, &plot);
  plot.x_from_zero = true;
  plot.extra_legend = {{"pass (filled)", "#555555", LegendEntry::kDot},
                       {"fail / not judged (hollow)", "#555555", LegendEntry::kHollow}};
  for (v1::HealthState h :
       {v1::HEALTH_STATE_HEALTHY, v1::HEALTH_STATE_WARN, v1::HEALTH_STATE_UNHEALTHY,
        v1::HEALTH_STATE_CRITICAL, v1::HEALTH_STATE_OVERLOADED}) {
    plot.extra_legend.push_back({absl::AsciiStrToLower(HealthName(h)), HealthColor(h)});
  }
  return Section(v, "search", "Search", RenderPlot(plot));
}

std::string LatencyPanel(const SubjectView& v) {
  Plot plot{"Latency percentiles (from intended send time) against offered rate",
            "offered rate (qps)", "latency (ms)"};
  plot.y_log_ok = true;
  const std::pair<const char*, std::string> names[] = {
      {"p50", "#1f77b4"}, {"p90", "#2ca02c"}, {"p99", "#d62728"}, {"max", "#7f7f7f"}};
  for (const auto& [name, color] : names) plot.series.push_back({name, color});
  for (const v1::Step* s : ByRate(*v.test)) {
    if (s->latency().max_ms() <= 0) continue;  // nothing completed: no percentile to show
    const double values[] = {s->latency().p50_ms(), s->latency().p90_ms(), s->latency().p99_ms(),
                             s->latency().max_ms()};
    for (int i = 0; i < 4; ++i)
      plot.series[i].marks.push_back(StepMark(*s, s->target_qps(), values[i]));
  }
  const v1::Slo& slo = v.model.slo();
  if (slo.has_p99_latency() && Millis(slo.p99_latency()) > 0) {
    plot.lines.push_back({absl::StrCat("SLO p99 ", Ms(Millis(slo.p99_latency()))), "#d62728", false,
                          Millis(slo.p99_latency())});
  }
  if (slo.has_p50_latency() && Millis(slo.p50_latency()) > 0) {
    plot.lines.push_back({absl::StrCat("SLO p50 ", Ms(Millis(slo.p50_latency()))), "#1f77b4", false,
                          Millis(slo.p50_latency())});
  }
  AddEstimate(v, /*vertical=*/true, &plot);
  return Section(v, "latency", "Latency", RenderPlot(plot));
}

std::string ThroughputPanel(const SubjectView& v) {
  Plot rate{"Achieved against offered rate", "offered rate (qps)", "achieved rate (qps)"};
  Plot errors{"Errors and timeouts against offered rate", "offered rate (qps)",
              "failed requests (% of scheduled)"};
  rate.x_from_zero = errors.x_from_zero = true;
  Series achieved{"achieved", "#1f77b4"}, failed{"error rate", "#d62728"};
  double top = 0;
  for (const v1::Step* s : ByRate(*v.test)) {
    achieved.marks.push_back(StepMark(*s, s->target_qps(), s->achieved_qps()));
    failed.marks.push_back(StepMark(*s, s->target_qps(), s->error_rate() * 100));
    top = std::max({top, s->target_qps(), s->achieved_qps()});
  }
  Series ideal{"achieved = offered", "#999999"};
  ideal.marks = {Mark{0, 0}, Mark{top, top}};
  ideal.dots = false;
  ideal.dashed = true;
  rate.series = {std::move(ideal), std::move(achieved)};
  AddEstimate(v, /*vertical=*/true, &rate);
  errors.series = {std::move(failed)};
  if (v.model.slo().max_error_rate() > 0) {
    errors.lines.push_back(
        {absl::StrFormat("SLO max error rate %.2f%%", v.model.slo().max_error_rate() * 100),
         "#d62728", false, v.model.slo().max_error_rate() * 100});
  }
  AddEstimate(v, /*vertical=*/true, &errors);
  return Section(v, "throughput", "Throughput and errors",
                 absl::StrCat(RenderPlot(rate), RenderPlot(errors)));
}

// Seconds from the first window's start (or the running sum of durations when windows carry
// no start time).
std::vector<double> WindowTimes(const v1::Step& step) {
  std::vector<double> t;
  double sum = 0;
  const bool timed = !step.windows().empty() && IsSet(step.windows(0).start_time());
  for (const v1::StepWindow& w : step.windows()) {
    t.push_back(timed ? Seconds(w.start_time()) - Seconds(step.windows(0).start_time()) : sum);
    sum += Seconds(w.duration()) > 0 ? Seconds(w.duration()) : 1.0;
  }
  return t;
}

// A window plot over time with the warmup windows shaded; windows overlap (they slide), so
// overlapping or touching warmup windows make one band.
Plot WindowPlot(const v1::Step& step, const std::vector<double>& t, std::string title,
                std::string y_label) {
  Plot plot{std::move(title), "window start, seconds into the step", std::move(y_label)};
  plot.x_from_zero = true;
  for (int i = 0; i < step.windows_size(); ++i) {
    const v1::StepWindow& w = step.windows(i);
    if (!w.warmup()) continue;
    const double end = t[i] + (Seconds(w.duration()) > 0 ? Seconds(w.duration()) : 1.0);
    if (!plot.bands.empty() && t[i] <= plot.bands.back().to + 1e-6) {
      plot.bands.back().to = std::max(plot.bands.back().to, end);
      continue;
    }
    plot.bands.push_back(
        {"warmup / settling", "rgba(120,120,120,0.18)", true, t[i], end, plot.bands.empty()});
  }
  return plot;
}

// A series over the step's windows: (time, value(window)) for each window.
template <typename F>
Series WindowSeries(const v1::Step& step, const std::vector<double>& t, std::string name,
                    std::string color, F value) {
  Series s{std::move(name), std::move(color)};
  for (int i = 0; i < step.windows_size(); ++i) {
    const v1::StepWindow& w = step.windows(i);
    s.marks.push_back(Mark{t[i],
                           value(w),
                           "",
                           false,
                           absl::StrCat("window ", w.index(), w.warmup() ? " (warmup)" : ""),
                           {{"window", absl::StrCat(w.index())}}});
  }
  return s;
}

std::string WindowGaugePlot(const v1::Step& step, const std::vector<double>& t) {
  bool gpu = false, queue = false;
  for (const v1::StepWindow& w : step.windows()) {
    gpu = gpu || w.gpu_utilization() > 0;
    queue = queue || w.queue_depth() > 0;
  }
  if (!gpu && !queue) return Note("the predictor's gauges (GPU, queue) were not scraped");
  Plot plot = WindowPlot(step, t, "Scraped predictor gauges", "GPU % / queue depth");
  if (gpu) {
    plot.series.push_back(WindowSeries(step, t, "GPU utilization %", "#9467bd",
                                       [](const auto& w) { return w.gpu_utilization() * 100; }));
  }
  if (queue) {
    plot.series.push_back(WindowSeries(step, t, "queue depth", "#8c564b",
                                       [](const auto& w) { return w.queue_depth(); }));
  }
  return RenderPlot(plot);
}

std::string WindowsPanel(const SubjectView& v) {
  const v1::Step& step = *v.window_step;
  const std::string title =
      absl::StrCat("Windows of step ", step.index(), " (", Qps(step.target_qps()), ", ",
                   VerdictName(VerdictOf(step)), ")");
  if (step.windows().empty()) {
    return Section(v, "windows", Escape(title), Note("this step carries no windows"));
  }
  const std::vector<double> t = WindowTimes(step);
  Plot latency = WindowPlot(step, t, "Latency per window", "latency (ms)");
  latency.y_log_ok = true;
  latency.series = {
      WindowSeries(step, t, "p50", "#1f77b4", [](const auto& w) { return w.latency().p50_ms(); }),
      WindowSeries(step, t, "p99", "#d62728", [](const auto& w) { return w.latency().p99_ms(); })};
  Plot rate = WindowPlot(step, t, "Rate per window", "rate (qps)");
  rate.series = {
      WindowSeries(step, t, "offered", "#7f7f7f", [](const auto& w) { return w.offered_qps(); }),
      WindowSeries(step, t, "achieved", "#1f77b4", [](const auto& w) { return w.achieved_qps(); })};
  Plot errors = WindowPlot(step, t, "Failed requests per window", "requests");
  errors.series = {
      WindowSeries(step, t, "errors + timeouts", "#d62728",
                   [](const auto& w) { return static_cast<double>(w.errors() + w.timeouts()); }),
      WindowSeries(step, t, "dropped + censored", "#ff7f0e",
                   [](const auto& w) { return static_cast<double>(w.dropped() + w.censored()); })};
  return Section(v, "windows", Escape(title),
                 absl::StrCat(RenderPlot(latency), RenderPlot(rate), RenderPlot(errors),
                              WindowGaugePlot(step, t)));
}

constexpr double kCdfPercentiles[] = {0,  5,  10, 20, 30,   40, 50,   60,   70,    75,
                                      80, 85, 90, 95, 97.5, 99, 99.5, 99.9, 99.99, 100};

// The CDF of one step's stored histogram, or a note why there is none.
std::optional<Series> CdfSeries(const v1::Step* step, const std::string& role,
                                const std::string& color, std::string* note) {
  if (step == nullptr) return std::nullopt;
  const std::string name =
      absl::StrCat(role, " (step ", step->index(), ", ", Qps(step->target_qps()), ")");
  auto histogram = LatencyHistogram::Deserialize(step->latency_histogram());
  if (step->latency_histogram().empty() || !histogram.ok() || histogram->count() == 0) {
    absl::StrAppend(note, name, ": no stored latency histogram. ");
    return std::nullopt;
  }
  Series s{name, color};
  for (double p : kCdfPercentiles) {
    const double ms = histogram->Percentile(p) / 1000.0;
    s.marks.push_back(
        Mark{ms, p, "", false, absl::StrFormat("p%g: %s", p, Ms(ms)), {{"percentile", Num(p)}}});
  }
  return s;
}

std::string DistributionPanel(const SubjectView& v) {
  Plot plot{"Latency distribution (cumulative, from the stored histogram)", "latency (ms)",
            "percentile"};
  plot.x_log_ok = true;
  std::string note;
  if (auto s = CdfSeries(v.best_pass, "best pass", "#2ca02c", &note)) plot.series.push_back(*s);
  if (auto s = CdfSeries(v.first_failure, "first failure", "#d62728", &note)) {
    plot.series.push_back(*s);
  }
  if (v.best_pass == nullptr) note += "No step passed. ";
  if (v.first_failure == nullptr) note += "No step failed. ";
  const v1::Slo& slo = v.model.slo();
  if (slo.has_p99_latency() && Millis(slo.p99_latency()) > 0) {
    plot.lines.push_back({absl::StrCat("SLO p99 ", Ms(Millis(slo.p99_latency()))), "#d62728", true,
                          Millis(slo.p99_latency())});
  }
  const std::string body = plot.series.empty() ? "" : RenderPlot(plot);
  return Section(v, "distribution", "Latency distribution",
                 absl::StrCat(note.empty() ? "" : Note(note), body));
}

// The worst measured (non-warmup) window's p99 of a streaming figure, per step; nullopt when
// no window of the step carries it.
template <typename F>
std::optional<double> WorstWindowP99(const v1::Step& step, F figure) {
  std::optional<double> worst;
  for (const v1::StepWindow& w : step.windows()) {
    const double p99 = figure(w).p99_ms();
    if (!w.warmup() && p99 > 0) worst = std::max(worst.value_or(0), p99);
  }
  return worst;
}

// One streaming figure per step against the rate, or a note when no step carries it.
template <typename F>
std::string StreamingPlot(const SubjectView& v, std::string title, std::string series, F figure,
                          const google::protobuf::Duration& slo) {
  Plot plot{title, "offered rate (qps)", "latency (ms)"};
  plot.y_log_ok = true;
  Series s{std::move(series), "#9467bd"};
  for (const v1::Step* step : ByRate(*v.test)) {
    if (auto worst = WorstWindowP99(*step, figure)) {
      s.marks.push_back(StepMark(*step, step->target_qps(), *worst));
    }
  }
  if (s.marks.empty()) return Note(absl::StrCat(title, ": not measured in any window"));
  plot.series.push_back(std::move(s));
  if (Millis(slo) > 0) plot.lines.push_back({"SLO p99", "#d62728", false, Millis(slo)});
  AddEstimate(v, /*vertical=*/true, &plot);
  return RenderPlot(plot);
}

// Empty when no step carries streaming figures (the section is then left out).
std::string StreamingPanel(const SubjectView& v) {
  const auto ttft = [](const v1::StepWindow& w) -> const v1::LatencySummary& { return w.ttft(); };
  const auto itl = [](const v1::StepWindow& w) -> const v1::LatencySummary& {
    return w.inter_token();
  };
  bool any = false;
  for (const v1::Step& s : v.test->steps()) {
    any = any || WorstWindowP99(s, ttft) || WorstWindowP99(s, itl);
  }
  if (!any) return "";
  const v1::Slo& slo = v.model.slo();
  return Section(
      v, "streaming", "Streaming",
      absl::StrCat(
          Note("each step's worst measured window (p99 of that window)"),
          StreamingPlot(v, "Time to first token", "TTFT p99", ttft, slo.ttft_p99()),
          StreamingPlot(v, "Inter-token latency", "inter-token p99", itl, slo.inter_token_p99())));
}

std::string Row(absl::string_view name, absl::string_view value, bool pre = false) {
  return absl::StrCat("<tr><th>", name, "</th><td>", pre ? "<pre>" : "", Escape(value),
                      pre ? "</pre>" : "", "</td></tr>");
}

std::string HardwareText(const v1::Hardware& hw) {
  if (hw.accelerator().empty() && hw.pool().empty()) return "-";
  return absl::StrCat(hw.accelerator().empty() ? "-" : hw.accelerator(), " x",
                      std::max(hw.accelerator_count(), 1), hw.pool().empty() ? "" : ", pool ",
                      hw.pool());
}

std::string ReproducePanel(const SubjectView& v, const ReportOptions& options) {
  const v1::Test& t = *v.test;
  const v1::Model& m = v.model;
  std::string rows = absl::StrCat(
      Row("test id", absl::StrCat(t.id())),
      Row("state", EnumSuffix(v1::TestState_Name(t.state()), "TEST_STATE_")),
      Row("model", absl::StrCat(m.name(), m.version().empty() ? "" : " version ", m.version())),
      Row("framework", m.framework().empty() ? "-" : m.framework()),
      Row("protocol",
          absl::AsciiStrToLower(EnumSuffix(v1::Protocol_Name(m.protocol()), "PROTOCOL_"))),
      Row("endpoints", m.endpoints().empty() ? "-" : absl::StrJoin(m.endpoints(), ", ")),
      Row("hardware", HardwareText(m.hardware())), Row("SLO", ProtoJson(m.slo()), true),
      Row("spec", ProtoJson(t.spec()), true));
  absl::StrAppend(
      &rows, Row("build", options.build.empty() ? "unknown" : options.build),
      Row("attempt", absl::StrCat(t.attempt())), Row("created", FormatTime(t.create_time())),
      Row("started", FormatTime(t.start_time())), Row("ended", FormatTime(t.end_time())),
      Row("request id", t.request_id().empty() ? "-" : t.request_id()));
  if (!t.error().empty()) absl::StrAppend(&rows, Row("error", t.error()));
  if (t.has_result()) {
    absl::StrAppend(&rows, Row("summary", t.result().summary()),
                    Row("verification", t.result().verification()));
  }
  return Section(v, "reproduce", "Reproduce",
                 absl::StrCat("<table class=\"reproduce\">", rows, "</table>"));
}

std::string HeadlineText(const SubjectView& v) {
  const v1::TestResult* r = Estimate(v);
  if (r == nullptr) return absl::StrCat(v.test->steps_size(), " steps; no estimate");
  std::string text =
      absl::StrCat("estimate ", r->at_least() ? "at least " : "", Qps(r->max_sustainable_qps()));
  if (r->confidence_high_qps() > r->confidence_low_qps()) {
    absl::StrAppend(
        &text, absl::StrFormat(" [%.1f, %.1f]", r->confidence_low_qps(), r->confidence_high_qps()));
  }
  return absl::StrCat(text, r->converged() ? ", converged" : ", not converged", "; ",
                      v.test->steps_size(), " steps");
}

std::string SubjectHtml(const SubjectView& v, const ReportOptions& options) {
  const v1::Test& t = *v.test;
  std::string out = absl::StrCat("<article class=\"subject\" data-test-id=\"", t.id(),
                                 "\"><h2>Test ", t.id(), " · ", Escape(v.model.name()),
                                 v.model.version().empty() ? "" : "/", Escape(v.model.version()),
                                 " · ", EnumSuffix(v1::TestState_Name(t.state()), "TEST_STATE_"),
                                 "</h2><p class=\"headline\">", Escape(HeadlineText(v)), "</p>");
  if (t.steps().empty()) {
    absl::StrAppend(&out, "<p class=\"empty\" id=\"empty", v.suffix, "\">no steps yet</p>");
  } else {
    absl::StrAppend(&out, SearchPanel(v), LatencyPanel(v), ThroughputPanel(v), WindowsPanel(v),
                    DistributionPanel(v), StreamingPanel(v));
  }
  return absl::StrCat(out, ReproducePanel(v, options), "</article>");
}

constexpr absl::string_view kStyle = R"css(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:16px;color:#222;background:#fafafa}
h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin:8px 0 2px}h3{font-size:15px;margin:0 0 6px}
.subjects{display:grid;gap:16px}.subjects.n1{grid-template-columns:1fr}.subjects.n2{grid-template-columns:1fr 1fr}
.subject{min-width:0}.panel{background:#fff;border:1px solid #ddd;border-radius:6px;padding:10px;margin:10px 0}
.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:4px 16px;align-items:start}
.plots>.note{grid-column:1/-1;margin:0}svg.plot{width:100%;max-width:760px;height:auto;display:block;margin:4px 0}
svg .grid{stroke:#eee}svg .frame{fill:none;stroke:#999}svg .tick{font-size:10px;fill:#555}
svg .label{font-size:11px;fill:#333}svg .title{font-size:12px;font-weight:600;fill:#222}
svg .ref{stroke-width:1.5;stroke-dasharray:6 4}svg .line{stroke-width:1.5}svg .legend text{font-size:10px;fill:#333}
.note,.empty{color:#666;font-style:italic}.headline{margin:0 0 8px}
table.reproduce{border-collapse:collapse;width:100%}table.reproduce th{text-align:left;vertical-align:top;padding:3px 8px;white-space:nowrap;color:#555}
table.reproduce td{padding:3px 8px;word-break:break-all}table.reproduce pre{margin:0;font-size:12px;white-space:pre-wrap}
)css";

}  // namespace

absl::StatusOr<std::string> RenderReportHtml(const std::vector<ReportSubject>& subjects,
                                             const ReportOptions& options) {
  if (subjects.empty() || subjects.size() > 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "report: subjects must be 1 or 2 tests (one, or two side by side), got ", subjects.size()));
  }
  std::string body, ids;
  for (size_t i = 0; i < subjects.size(); ++i) {
    const std::string suffix = subjects.size() == 1 ? "" : absl::StrCat("-", i + 1);
    auto view = MakeView(subjects[i], options, suffix);
    if (!view.ok()) return view.status();
    absl::StrAppend(&body, SubjectHtml(*view, options));
    absl::StrAppend(&ids, i == 0 ? "" : " and ", subjects[i].test.id());
  }
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>Vanguard report: test",
      subjects.size() == 1 ? " " : "s ", ids, "</title><style>", kStyle,
      "</style></head><body><header><h1>Vanguard capacity report: test",
      subjects.size() == 1 ? " " : "s ", ids, "</h1><p class=\"note\">vanguard build ",
      Escape(options.build.empty() ? "unknown" : options.build),
      "</p></header><main class=\"subjects n", subjects.size(), "\">", body,
      "</main></body></html>\n");
}

}  // namespace vanguard::cli
