// CI gates on a finished test; see gates.h.
#include "orchestrator/cli/gates.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "orchestrator/cli/compare.h"
#include "orchestrator/cli/render.h"

namespace vanguard::cli {
namespace {

GateVerdict Verdict(bool passed, absl::string_view gate, absl::string_view why) {
  return {passed, absl::StrCat("gate ", gate, ": ", passed ? "passed" : "FAILED", ": ", why)};
}

// Why a test that cannot be judged fails, or nullopt when it can be judged.
std::optional<std::string> Unjudgeable(const v1::Test& finished) {
  if (finished.state() != v1::TEST_STATE_SUCCEEDED) {
    return absl::StrCat("test ", finished.id(), " ended ", TestStateName(finished.state()));
  }
  if (!finished.has_result()) return absl::StrCat("test ", finished.id(), " has no result");
  return std::nullopt;
}

std::string Qps(double qps) { return absl::StrCat(FormatQps(qps), " qps"); }

std::string Percent(double pct) { return absl::StrFormat("%.1f%%", pct); }

}  // namespace

GateVerdict JudgeFailBelow(const v1::Test& finished, double min_qps) {
  const std::string gate = absl::StrCat("--fail_below=", min_qps);
  if (std::optional<std::string> why = Unjudgeable(finished)) return Verdict(false, gate, *why);
  const v1::TestResult& result = finished.result();
  const double qps = result.max_sustainable_qps();
  if (qps >= min_qps) {
    return Verdict(true, gate,
                   absl::StrCat("max sustainable ", result.at_least() ? "at least " : "", Qps(qps),
                                " >= ", Qps(min_qps)));
  }
  if (result.at_least()) {
    return Verdict(false, gate,
                   absl::StrCat("the capacity is only known to be at least ", Qps(qps),
                                " (the top of the range held), below ", Qps(min_qps),
                                "; raise the range's top"));
  }
  return Verdict(false, gate,
                 absl::StrCat("max sustainable ", Qps(qps), " is below ", Qps(min_qps)));
}

GateVerdict JudgeRegression(const v1::Test& finished, const std::optional<v1::Test>& baseline,
                            double max_drop_pct) {
  const std::string gate = absl::StrCat("--fail_if_regressed=", max_drop_pct, "%");
  if (std::optional<std::string> why = Unjudgeable(finished)) return Verdict(false, gate, *why);
  if (!baseline.has_value()) {
    return Verdict(true, gate,
                   absl::StrCat("no earlier succeeded test of ", TestModelRef(finished),
                                " or its model to compare with"));
  }
  const CapacityComparison c = CompareCapacity(baseline->result(), finished.result());
  const std::string against = absl::StrCat("test ", baseline->id(), "'s ", Qps(c.a.estimate), " (",
                                           TestModelRef(*baseline), ")");
  if (!c.change_pct.has_value()) {
    return Verdict(true, gate, absl::StrCat(against, " found no sustainable rate to regress from"));
  }
  const double drop_pct = -*c.change_pct;
  const std::string change = absl::StrCat(Qps(c.b.estimate), " is ", Percent(std::fabs(drop_pct)),
                                          drop_pct > 0 ? " below " : " above ", against);
  if (drop_pct <= max_drop_pct) {
    return Verdict(true, gate, absl::StrCat(change, ", within the ", max_drop_pct, "% allowed"));
  }
  if (!c.beyond_intervals) {
    return Verdict(true, gate,
                   absl::StrCat(change, ", but within the noise (",
                                c.a.stated && c.b.stated ? "the confidence intervals overlap"
                                                         : "a test states no confidence interval",
                                ")"));
  }
  return Verdict(false, gate,
                 absl::StrCat(change, ", more than the ", max_drop_pct,
                              "% allowed and beyond both tests' confidence intervals"));
}

}  // namespace vanguard::cli
