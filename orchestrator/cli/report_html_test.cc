#include "orchestrator/cli/report_html.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/histogram.h"
#include "gtest/gtest.h"

namespace vanguard::cli {
namespace {

// The text of one panel: from its opening tag to its closing tag ("" when absent).
std::string PanelHtml(const std::string& html, const std::string& id) {
  const std::string open = absl::StrCat("<section class=\"panel\" id=\"", id, "\"");
  const size_t begin = html.find(open);
  if (begin == std::string::npos) return "";
  return html.substr(begin, html.find("</section>", begin) - begin);
}

// How many times `needle` occurs in `haystack`.
int Count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

// Marks of one series (every plotted point is a <circle class="pt" data-series=...>).
int Marks(const std::string& panel, const std::string& series) {
  return Count(panel, absl::StrCat("<circle class=\"pt\" data-series=\"", series, "\""));
}

std::string Histogram(double center_ms) {
  LatencyHistogram h;
  for (int i = 0; i < 100; ++i)
    h.Record(static_cast<int64_t>(center_ms * 1000 * (0.5 + i / 100.0)));
  return h.Serialize();
}

void AddWindows(v1::Step* step, int n) {
  for (int i = 0; i < n; ++i) {
    v1::StepWindow* w = step->add_windows();
    w->set_index(i);
    w->set_warmup(i < 2);
    w->mutable_start_time()->set_seconds(1700000000 + i);
    w->mutable_duration()->set_seconds(1);
    w->set_offered_qps(step->target_qps());
    w->set_achieved_qps(step->achieved_qps());
    w->mutable_latency()->set_p50_ms(5 + i);
    w->mutable_latency()->set_p99_ms(20 + i);
    w->set_errors(i);
    w->set_queue_depth(0.5 * i);
  }
}

v1::Step* AddStep(v1::Test* test, double qps, bool passed, v1::HealthState health) {
  v1::Step* s = test->add_steps();
  s->set_index(test->steps_size() - 1);
  s->set_target_qps(qps);
  s->set_achieved_qps(passed ? qps : qps * 0.8);
  s->mutable_latency()->set_p50_ms(qps / 20);
  s->mutable_latency()->set_p90_ms(qps / 10);
  s->mutable_latency()->set_p99_ms(qps / 5);
  s->mutable_latency()->set_max_ms(qps / 2);
  s->set_error_rate(passed ? 0 : 0.05);
  s->set_health_state(health);
  s->set_passed(passed);
  s->set_client_valid(true);
  s->set_verdict(passed ? "p99 within SLO" : "p99 over SLO");
  s->set_latency_histogram(Histogram(qps / 20));
  AddWindows(s, 5);
  return s;
}

// A finished sweep: 100, 200, 300 pass; 400 fails; estimate 300 in [300, 400].
ReportSubject Sweep(int64_t id = 7) {
  ReportSubject subject;
  v1::Test& t = subject.test;
  t.set_id(id);
  t.set_state(v1::TEST_STATE_SUCCEEDED);
  t.mutable_spec()->set_model("resnet");
  t.mutable_spec()->mutable_sweep()->set_min_qps(100);
  t.mutable_spec()->mutable_sweep()->set_max_qps(400);
  AddStep(&t, 100, true, v1::HEALTH_STATE_HEALTHY);
  AddStep(&t, 200, true, v1::HEALTH_STATE_HEALTHY);
  AddStep(&t, 300, true, v1::HEALTH_STATE_WARN);
  AddStep(&t, 400, false, v1::HEALTH_STATE_OVERLOADED);
  t.mutable_result()->set_max_sustainable_qps(300);
  t.mutable_result()->set_confidence_low_qps(300);
  t.mutable_result()->set_confidence_high_qps(400);
  subject.model.set_name("resnet");
  subject.model.set_version("v3");
  subject.model.add_endpoints("http://10.0.0.5:8000");
  subject.model.mutable_hardware()->set_accelerator("nvidia-l40");
  subject.model.mutable_slo()->mutable_p99_latency()->set_nanos(70'000'000);
  return subject;
}

std::string Render(const std::vector<ReportSubject>& subjects, ReportOptions options = {}) {
  absl::StatusOr<std::string> html = RenderReportHtml(subjects, options);
  EXPECT_TRUE(html.ok()) << html.status();
  return html.ok() ? *html : "";
}

TEST(ReportHtmlTest, RejectsNoSubjectsAndThree) {
  EXPECT_EQ(RenderReportHtml({}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<ReportSubject> three(3);
  EXPECT_EQ(RenderReportHtml(three, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ReportHtmlTest, EveryPanelPlotsOneMarkPerDatum) {
  const std::string html = Render({Sweep()}, {.build = "1.2.3"});
  const std::string search = PanelHtml(html, "search");
  EXPECT_EQ(Marks(search, "steps"), 4);
  EXPECT_NE(search.find("data-x=\"4\" data-y=\"400\" data-step=\"3\" data-verdict=\"fail\""),
            std::string::npos)
      << search;
  // The bracket as steps: the highest pass from step 0 on, the one failure over its own step.
  EXPECT_NE(search.find("data-series=\"highest pass so far\" data-points=\"8\""),
            std::string::npos);
  EXPECT_NE(search.find("data-series=\"lowest failure so far\" data-points=\"2\""),
            std::string::npos);
  EXPECT_NE(
      search.find("400.0 qps, achieved 320.0 qps, p99 80.0 ms, OVERLOADED, fail: p99 over SLO"),
      std::string::npos);

  const std::string latency = PanelHtml(html, "latency");
  for (const char* series : {"p50", "p90", "p99", "max"}) EXPECT_EQ(Marks(latency, series), 4);
  EXPECT_NE(latency.find("class=\"ref\" data-name=\"SLO p99 70.0 ms\" data-at=\"70\""),
            std::string::npos);
  EXPECT_NE(latency.find("class=\"band\" data-name=\"confidence interval\" data-from=\"300\" "
                         "data-to=\"400\""),
            std::string::npos);

  const std::string throughput = PanelHtml(html, "throughput");
  EXPECT_EQ(Marks(throughput, "achieved"), 4);
  EXPECT_EQ(Marks(throughput, "error rate"), 4);
  EXPECT_NE(throughput.find("data-series=\"achieved = offered\""), std::string::npos);

  // The best pass (300 qps, step 2) is the step whose windows are shown.
  const std::string windows = PanelHtml(html, "windows");
  EXPECT_NE(windows.find("Windows of step 2"), std::string::npos);
  for (const char* series :
       {"p50", "p99", "offered", "achieved", "errors + timeouts", "queue depth"}) {
    EXPECT_EQ(Marks(windows, series), 5) << series;
  }
  EXPECT_EQ(Marks(windows, "GPU utilization %"), 0);  // never scraped
  // The two warmup windows make one band in each of the four plots.
  EXPECT_EQ(Count(windows, "class=\"band\""), 4);
  EXPECT_EQ(Count(windows, "data-name=\"warmup / settling\" data-from=\"0\" data-to=\"2\""), 4);

  const std::string distribution = PanelHtml(html, "distribution");
  EXPECT_EQ(Marks(distribution, "best pass (step 2, 300.0 qps)"), 20);
  EXPECT_EQ(Marks(distribution, "first failure (step 3, 400.0 qps)"), 20);

  EXPECT_EQ(PanelHtml(html, "streaming"), "");  // no streaming figures
  const std::string reproduce = PanelHtml(html, "reproduce");
  for (const char* text : {"resnet version v3", "http://10.0.0.5:8000", "nvidia-l40", "1.2.3",
                           "&quot;max_qps&quot;: 400"}) {
    EXPECT_NE(reproduce.find(text), std::string::npos) << text;
  }
  EXPECT_EQ(Count(html, "<section"), Count(html, "</section>"));
  EXPECT_EQ(Count(html, "<svg"), Count(html, "</svg>"));
  EXPECT_EQ(Count(html, "<script"), 0);
}

TEST(ReportHtmlTest, StreamingPanelAppearsWhenWindowsCarryTokenLatencies) {
  ReportSubject subject = Sweep();
  subject.model.mutable_slo()->mutable_ttft_p99()->set_nanos(200'000'000);
  for (v1::Step& step : *subject.test.mutable_steps()) {
    for (v1::StepWindow& w : *step.mutable_windows()) {
      w.mutable_ttft()->set_p99_ms(step.target_qps() / 3);
      w.mutable_inter_token()->set_p99_ms(step.target_qps() / 30);
    }
  }
  const std::string streaming = PanelHtml(Render({subject}), "streaming");
  EXPECT_EQ(Marks(streaming, "TTFT p99"), 4);
  EXPECT_EQ(Marks(streaming, "inter-token p99"), 4);
  EXPECT_NE(streaming.find("data-name=\"SLO p99\" data-at=\"200\""), std::string::npos);

  // A figure no window carries is named, not drawn as an empty plot.
  for (v1::Step& step : *subject.test.mutable_steps()) {
    for (v1::StepWindow& w : *step.mutable_windows()) w.clear_inter_token();
  }
  const std::string ttft_only = PanelHtml(Render({subject}), "streaming");
  EXPECT_EQ(Marks(ttft_only, "TTFT p99"), 4);
  EXPECT_EQ(Count(ttft_only, "<svg"), 1);
  EXPECT_NE(ttft_only.find("Inter-token latency: not measured in any window"), std::string::npos);
}

TEST(ReportHtmlTest, TextFromTheTestIsEscaped) {
  ReportSubject subject = Sweep();
  subject.model.set_name("<script>alert(1)</script>");
  subject.model.add_endpoints("http://x/?a=1&b=\"2\"");
  subject.test.set_error("step 'x' failed <b>");
  subject.test.mutable_steps(3)->set_verdict("p99 > SLO <img src=x>");
  subject.test.mutable_spec()->mutable_labels()->insert({"team", "</pre><script>"});
  const std::string html = Render({subject});
  EXPECT_EQ(Count(html, "<script"), 0);
  EXPECT_EQ(Count(html, "<img"), 0);
  EXPECT_EQ(Count(html, "<b>"), 0);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("a=1&amp;b=&quot;2&quot;"), std::string::npos);
  EXPECT_NE(html.find("step &#39;x&#39; failed &lt;b&gt;"), std::string::npos);
}

TEST(ReportHtmlTest, QueuedTestWithNoStepsSaysSo) {
  ReportSubject subject;
  subject.test.set_id(9);
  subject.test.set_state(v1::TEST_STATE_QUEUED);
  subject.test.mutable_spec()->set_model("bert");
  const std::string html = Render({subject});
  EXPECT_NE(html.find("no steps yet"), std::string::npos);
  EXPECT_NE(html.find("Test 9 · bert · QUEUED"), std::string::npos);
  EXPECT_EQ(Count(html, "class=\"pt\""), 0);
  EXPECT_EQ(PanelHtml(html, "search"), "");
  EXPECT_NE(PanelHtml(html, "reproduce"), "");
  EXPECT_TRUE(absl::EndsWith(html, "</html>\n"));
  // An empty subject (not even a spec) renders too.
  EXPECT_TRUE(RenderReportHtml({ReportSubject{}}, {}).ok());
}

TEST(ReportHtmlTest, UnjudgedStepsAreNeitherPassNorFirstFailure) {
  ReportSubject subject = Sweep();
  v1::Test& t = subject.test;
  // Step 1 (200 qps) had an invalid client; a step at 350 was interrupted.
  t.mutable_steps(1)->set_passed(false);
  t.mutable_steps(1)->set_client_valid(false);
  AddStep(&t, 350, false, v1::HEALTH_STATE_HEALTHY)->set_interrupted(true);
  const std::string html = Render({subject});
  const std::string search = PanelHtml(html, "search");
  EXPECT_EQ(Marks(search, "steps"), 5);
  EXPECT_EQ(Count(search, "data-verdict=\"not judged\""), 2);
  EXPECT_EQ(Count(search, "data-verdict=\"fail\""), 1);
  const std::string distribution = PanelHtml(html, "distribution");
  EXPECT_EQ(Marks(distribution, "first failure (step 3, 400.0 qps)"), 20);
}

TEST(ReportHtmlTest, TwoTestsSideBySide) {
  ReportSubject b = Sweep(8);
  b.test.mutable_steps()->RemoveLast();
  const std::string html = Render({Sweep(7), b});
  EXPECT_NE(html.find("class=\"subjects n2\""), std::string::npos);
  EXPECT_NE(html.find("tests 7 and 8"), std::string::npos);
  EXPECT_EQ(PanelHtml(html, "search"), "");  // ids carry the subject's position
  EXPECT_EQ(Marks(PanelHtml(html, "search-1"), "steps"), 4);
  EXPECT_EQ(Marks(PanelHtml(html, "search-2"), "steps"), 3);
  EXPECT_NE(PanelHtml(html, "reproduce-2").find("<td>8</td>"), std::string::npos);
}

TEST(ReportHtmlTest, StepWithoutHistogramIsNamedNotPlotted) {
  ReportSubject subject = Sweep();
  subject.test.mutable_steps(2)->clear_latency_histogram();  // the best pass
  const std::string distribution = PanelHtml(Render({subject}), "distribution");
  EXPECT_NE(distribution.find("best pass (step 2, 300.0 qps): no stored latency histogram"),
            std::string::npos);
  EXPECT_EQ(Marks(distribution, "best pass (step 2, 300.0 qps)"), 0);
  EXPECT_EQ(Marks(distribution, "first failure (step 3, 400.0 qps)"), 20);

  subject.test.mutable_steps(3)->set_latency_histogram("garbage");
  const std::string none = PanelHtml(Render({subject}), "distribution");
  EXPECT_EQ(Count(none, "class=\"pt\""), 0);
  EXPECT_NE(none.find("first failure (step 3, 400.0 qps): no stored latency histogram"),
            std::string::npos);
}

TEST(ReportHtmlTest, WindowStepIndexChoosesTheStep) {
  const std::string windows = PanelHtml(Render({Sweep()}, {.window_step_index = 3}), "windows");
  EXPECT_NE(windows.find("Windows of step 3 (400.0 qps, fail)"), std::string::npos);

  absl::StatusOr<std::string> missing = RenderReportHtml({Sweep()}, {.window_step_index = 12});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);

  ReportSubject no_windows = Sweep();
  no_windows.test.mutable_steps(2)->clear_windows();
  EXPECT_NE(PanelHtml(Render({no_windows}), "windows").find("this step carries no windows"),
            std::string::npos);
}

}  // namespace
}  // namespace vanguard::cli
