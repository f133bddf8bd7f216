// End to end: the report of a real test, opened in a real browser. Every process runs on
// loopback (simulated predictor, orchestrator on a fresh Postgres database, replayer, worker);
// the `vanguard` tool runs a short sweep and prints the finished test as JSON; the test is
// rendered with RenderReportHtml, and headless Chromium loads the page: its DOM must hold each
// panel with marks, and its screenshot must be a real picture.
//
// Chromium is required (deploy/local/setup installs Debian's `chromium`): without it the
// test fails, it does not skip. Set VANGUARD_REPORT_OUT_DIR to keep report.html and
// report.png there (docs/report-screenshot.png comes from it).
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "orchestrator/cli/report_html.h"
#include "pqxx/pqxx"
#include "tests/e2e/e2e_stack.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard {
namespace {

using ::vanguard::testing::E2eStack;
using ::vanguard::testing::RunBinary;
using ::vanguard::testing::RunResult;

// The first executable `name` on $PATH, or "".
std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path == nullptr ? "" : path, ':')) {
    const std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The text of one panel in a page or a dumped DOM ("" when absent).
std::string PanelHtml(const std::string& html, const std::string& id) {
  const std::string open = absl::StrCat("<section class=\"panel\" id=\"", id, "\"");
  const size_t begin = html.find(open);
  if (begin == std::string::npos) return "";
  return html.substr(begin, html.find("</section>", begin) - begin);
}

int Count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

int Marks(const std::string& html, const std::string& series = "") {
  return Count(html, series.empty()
                         ? "<circle class=\"pt\""
                         : absl::StrCat("<circle class=\"pt\" data-series=\"", series, "\""));
}

// Fills the windows of steps that came without them from the step_windows table (GetTest
// does not return windows; ReportStep stores them there). Returns how many were loaded.
int LoadWindows(const std::string& conninfo, v1::Test* test) {
  pqxx::connection conn(conninfo);
  pqxx::work tx(conn);
  pqxx::result rows = tx.exec_params(
      "SELECT step_index, window_index, warmup, coalesce(extract(epoch FROM start_time), 0),"
      " coalesce(duration_s, 0), offered_qps, achieved_qps, coalesce(p50_ms, 0),"
      " coalesce(p90_ms, 0), coalesce(p99_ms, 0), coalesce(max_ms, 0), scheduled, completed,"
      " errors, timeouts, dropped, censored, coalesce(gpu_utilization, 0),"
      " coalesce(queue_depth, 0), coalesce(health_score, 0)"
      " FROM step_windows WHERE test_id = $1 AND attempt = $2 ORDER BY step_index, window_index",
      test->id(), test->attempt());
  int loaded = 0;
  for (v1::Step& step : *test->mutable_steps()) {
    if (step.windows_size() > 0) continue;
    for (const pqxx::row& r : rows) {
      if (r[0].as<int>() != step.index()) continue;
      v1::StepWindow* w = step.add_windows();
      w->set_index(r[1].as<int>());
      w->set_warmup(r[2].as<bool>());
      const double start = r[3].as<double>(), duration = r[4].as<double>();
      w->mutable_start_time()->set_seconds(static_cast<int64_t>(start));
      w->mutable_start_time()->set_nanos(static_cast<int32_t>((start - std::floor(start)) * 1e9));
      w->mutable_duration()->set_seconds(static_cast<int64_t>(duration));
      w->mutable_duration()->set_nanos(
          static_cast<int32_t>((duration - std::floor(duration)) * 1e9));
      w->set_offered_qps(r[5].as<double>());
      w->set_achieved_qps(r[6].as<double>());
      w->mutable_latency()->set_p50_ms(r[7].as<double>());
      w->mutable_latency()->set_p90_ms(r[8].as<double>());
      w->mutable_latency()->set_p99_ms(r[9].as<double>());
      w->mutable_latency()->set_max_ms(r[10].as<double>());
      w->set_scheduled(r[11].as<int64_t>());
      w->set_completed(r[12].as<int64_t>());
      w->set_errors(r[13].as<int64_t>());
      w->set_timeouts(r[14].as<int64_t>());
      w->set_dropped(r[15].as<int64_t>());
      w->set_censored(r[16].as<int64_t>());
      w->set_gpu_utilization(r[17].as<double>());
      w->set_queue_depth(r[18].as<double>());
      w->set_health_score(r[19].as<double>());
      ++loaded;
    }
  }
  return loaded;
}

class ReportTest : public E2eStack {
 protected:
  void SetUp() override {
    chromium_ = FindOnPath("chromium");
    ASSERT_FALSE(chromium_.empty())
        << "chromium is not on PATH. This test renders the report in headless Chromium and "
           "must not be skipped: run deploy/local/setup (it installs Debian's chromium) or "
           "apt-get install --no-install-recommends chromium";
    MakeOutputDir();
    ASSERT_NO_FATAL_FAILURE(StartStack());
  }

  void TearDown() override {
    E2eStack::TearDown();
    if (remove_dir_ && !dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // $VANGUARD_REPORT_OUT_DIR (kept), else a temporary directory (removed by TearDown).
  void MakeOutputDir() {
    if (const char* out = std::getenv("VANGUARD_REPORT_OUT_DIR"); out != nullptr && *out) {
      dir_ = out;
      std::filesystem::create_directories(dir_);
      return;
    }
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/vg-report.XXXXXX");
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    remove_dir_ = true;
  }

  // Runs headless Chromium on the page with `args` before its URL.
  RunResult Chromium(std::vector<std::string> args, const std::string& page) {
    std::vector<std::string> all = {"--headless=new", "--no-sandbox", "--disable-gpu",
                                    absl::StrCat("--user-data-dir=", dir_, "/chromium-profile")};
    all.insert(all.end(), args.begin(), args.end());
    all.push_back(absl::StrCat("file://", page));
    auto r = RunBinary(chromium_, all, {}, absl::Seconds(120));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : RunResult{};
  }

  std::string chromium_;
  std::string dir_;
  bool remove_dir_ = false;
};

TEST_F(ReportTest, ChromiumShowsEveryPanelOfARealSweep) {
  RunResult reg =
      Vanguard({"models", "register", "--name=e2e", "--version=v1",
                absl::StrCat("--endpoint=http://", sim_->address()), "--protocol=kserve_v2_rest",
                "--p99_ms=100", "--max_error_rate=0.01", "--warmup=1s", "--output=json"});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  // Half the capacity up to 1.5 times it: passes, then the first failure ends the sweep.
  RunResult sub = Vanguard({"submit", "--model=e2e", "--version=v1", "--rates=200,300,450,600",
                            "--step_duration=2s", "--step_warmup=1s", "--wait", "--output=json"},
                           absl::Seconds(240));
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;

  // What `vanguard get ID --output=json` prints is the proto's JSON mapping: it parses back.
  v1::Test submitted;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(sub.out, &submitted).ok()) << sub.out;
  RunResult get = Vanguard({"get", absl::StrCat(submitted.id()), "--output=json"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  cli::ReportSubject subject;
  auto parsed = google::protobuf::util::JsonStringToMessage(get.out, &subject.test);
  ASSERT_TRUE(parsed.ok()) << parsed << "\n" << get.out;
  const v1::Test& test = subject.test;
  ASSERT_EQ(test.state(), v1::TEST_STATE_SUCCEEDED) << get.out;
  ASSERT_GE(test.steps_size(), 2);
  bool passed = false, failed = false;
  for (const v1::Step& s : test.steps()) {
    EXPECT_FALSE(s.latency_histogram().empty()) << "step " << s.index();
    (s.passed() ? passed : failed) = true;
  }
  ASSERT_TRUE(passed && failed) << get.out;
  const int loaded = LoadWindows(db_->conninfo(), &subject.test);
  std::cerr << "windows loaded from step_windows (GetTest returns none): " << loaded << "\n";

  absl::StatusOr<std::string> html = cli::RenderReportHtml({subject}, {.build = "e2e"});
  ASSERT_TRUE(html.ok()) << html.status();
  const std::string page = absl::StrCat(dir_, "/report.html");
  std::ofstream(page, std::ios::binary) << *html;

  RunResult dom = Chromium({"--dump-dom"}, page);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  ASSERT_NE(dom.out.find("Vanguard capacity report"), std::string::npos) << dom.out.substr(0, 500);
  // The browser parsed every mark the page holds, and each panel has some.
  EXPECT_EQ(Marks(dom.out), Marks(*html));
  for (const char* id : {"search", "latency", "throughput", "windows", "distribution"}) {
    EXPECT_GT(Marks(PanelHtml(dom.out, id)), 0) << "panel " << id;
  }
  EXPECT_EQ(Marks(PanelHtml(dom.out, "search"), "steps"), test.steps_size());
  EXPECT_EQ(Marks(PanelHtml(dom.out, "throughput"), "achieved"), test.steps_size());
  EXPECT_GT(Marks(PanelHtml(dom.out, "windows"), "p99"), 1);
  const std::string distribution = PanelHtml(dom.out, "distribution");
  EXPECT_GT(Count(distribution, "data-series=\"best pass"), 0) << distribution;
  EXPECT_GT(Count(distribution, "data-series=\"first failure"), 0) << distribution;
  EXPECT_EQ(PanelHtml(dom.out, "streaming"), "");  // KServe v2: no tokens
  const std::string reproduce = PanelHtml(dom.out, "reproduce");
  EXPECT_NE(reproduce.find(absl::StrCat("<td>", test.id(), "</td>")), std::string::npos);
  EXPECT_NE(reproduce.find(sim_->address()), std::string::npos);
  EXPECT_EQ(Count(dom.out, "<script"), 0);

  const std::string png = absl::StrCat(dir_, "/report.png");
  RunResult shot = Chromium(
      {absl::StrCat("--screenshot=", png), "--window-size=1400,3000", "--hide-scrollbars"}, page);
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  const std::string image = ReadFile(png);
  ASSERT_GE(image.size(), 8u) << "no screenshot at " << png;
  EXPECT_EQ(image.substr(0, 8), "\x89PNG\r\n\x1a\n");
  // A blank 1400x3000 page compresses to a few kB; plotted panels do not.
  EXPECT_GT(image.size(), 50'000u) << png;
}

}  // namespace
}  // namespace vanguard
