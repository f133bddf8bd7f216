// `vanguard submit` flags to a TestSpec; see submit_flags.h.
#include "orchestrator/cli/submit_flags.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace vanguard::cli {
namespace {

constexpr absl::Duration kDefaultStepDuration = absl::Seconds(10);

absl::StatusOr<v1::Schedule> ParseSchedule(absl::string_view text) {
  return ParseEnumFlag("schedule", text, "SCHEDULE_", &v1::Schedule_Parse,
                       "is not one of constant, poisson");
}

absl::StatusOr<v1::EndpointPolicy> ParseEndpointPolicy(absl::string_view text) {
  return ParseEnumFlag("endpoint_policy", text, "ENDPOINT_POLICY_", &v1::EndpointPolicy_Parse,
                       "is not one of round_robin, random, p2c, single");
}

// --strategy=binary|adaptive search between --min_qps and --max_qps; ladder climbs from
// --min_qps (default 2) with --max_qps as the ceiling of its coarse ramp.
absl::Status ParseSearch(const FlagSet& flags, const std::string& strategy, v1::TestSpec* spec) {
  for (const char* sweep_only : {"rates", "steps", "stop_after_failures"}) {
    if (flags.Has(sweep_only)) {
      return FlagError(sweep_only, absl::StrCat("belongs to --strategy=sweep, not ", strategy));
    }
  }
  if (flags.Has("confirm_best") && strategy != "adaptive") {
    return FlagError("confirm_best",
                     absl::StrCat("belongs to --strategy=adaptive, not ", strategy));
  }
  const bool ladder = strategy == "ladder";
  if (!ladder) {
    for (const char* name : {"min_qps", "max_qps"}) {
      if (!flags.Has(name)) {
        return FlagError(name, absl::StrCat("is required with --strategy=", strategy));
      }
    }
  }
  ASSIGN_OR_RETURN(std::optional<double> min_qps, flags.Number("min_qps"));
  ASSIGN_OR_RETURN(std::optional<double> max_qps, flags.Number("max_qps"));
  if (min_qps.has_value() && *min_qps <= 0) {
    return BadValue("min_qps", *flags.Text("min_qps"), "must be positive");
  }
  if (max_qps.has_value() && *max_qps <= min_qps.value_or(0)) {
    return BadValue("max_qps", *flags.Text("max_qps"), "must be above --min_qps");
  }
  if (strategy == "binary") {
    spec->mutable_binary_search()->set_min_qps(*min_qps);
    spec->mutable_binary_search()->set_max_qps(*max_qps);
  } else if (strategy == "adaptive") {
    spec->mutable_adaptive()->set_min_qps(*min_qps);
    spec->mutable_adaptive()->set_max_qps(*max_qps);
    ASSIGN_OR_RETURN(bool confirm_best, flags.Bool("confirm_best"));
    spec->mutable_adaptive()->set_confirm_best(confirm_best);
  } else {
    v1::LadderStrategy* l = spec->mutable_ladder();
    if (min_qps.has_value()) l->set_start_qps(*min_qps);
    if (max_qps.has_value()) l->set_max_qps(*max_qps);
  }
  return absl::OkStatus();
}

// --rates=R1,R2,...: the sweep's explicit rates (replacing the spec file's).
absl::Status ParseSweepRates(const FlagSet& flags, v1::SweepStrategy* sweep) {
  const std::string text = *flags.Text("rates");
  ASSIGN_OR_RETURN(std::vector<std::string> entries, SplitList("rates", text));
  sweep->clear_rates_qps();
  sweep->clear_min_qps();
  sweep->clear_max_qps();
  sweep->clear_steps();
  for (const std::string& entry : entries) {
    double rate = 0;
    if (!absl::SimpleAtod(entry, &rate) || !std::isfinite(rate)) {
      return BadValue("rates", entry, "is not a number (rates are requests/s, e.g. 100,200)");
    }
    if (rate <= 0) return BadValue("rates", entry, "must be positive");
    sweep->add_rates_qps(rate);
  }
  return absl::OkStatus();
}

// --min_qps, --max_qps and --steps together: an evenly spaced sweep.
absl::Status ParseSweepRange(const FlagSet& flags, v1::SweepStrategy* sweep) {
  for (const char* name : {"min_qps", "max_qps", "steps"}) {
    if (!flags.Has(name)) {
      return FlagError(name, "is required with --min_qps/--max_qps/--steps (give all three)");
    }
  }
  ASSIGN_OR_RETURN(std::optional<double> min_qps, flags.Number("min_qps"));
  ASSIGN_OR_RETURN(std::optional<double> max_qps, flags.Number("max_qps"));
  ASSIGN_OR_RETURN(std::optional<int64_t> steps, flags.Integer("steps", 1, 10000));
  if (*min_qps <= 0) return BadValue("min_qps", *flags.Text("min_qps"), "must be positive");
  if (*max_qps < *min_qps) {
    return BadValue("max_qps", *flags.Text("max_qps"), "must not be below --min_qps");
  }
  if (*max_qps > *min_qps && *steps < 2) {
    return BadValue("steps", *flags.Text("steps"),
                    "must be at least 2 when --max_qps exceeds --min_qps");
  }
  sweep->clear_rates_qps();
  sweep->set_min_qps(*min_qps);
  sweep->set_max_qps(*max_qps);
  sweep->set_steps(static_cast<int32_t>(*steps));
  return absl::OkStatus();
}

// The sweep: --rates, or --min_qps, --max_qps and --steps (or the spec file's).
absl::Status ParseSweepStrategy(const FlagSet& flags, v1::TestSpec* spec) {
  if (flags.Has("confirm_best")) {
    return FlagError("confirm_best", "belongs to --strategy=adaptive, not sweep");
  }
  const bool has_rates = flags.Has("rates");
  const bool has_range = flags.Has("min_qps") || flags.Has("max_qps") || flags.Has("steps");
  if (has_rates && has_range) {
    return absl::InvalidArgumentError(
        "--rates cannot be combined with --min_qps/--max_qps/--steps; give one or the other");
  }
  if (has_rates) RETURN_IF_ERROR(ParseSweepRates(flags, spec->mutable_sweep()));
  if (has_range) RETURN_IF_ERROR(ParseSweepRange(flags, spec->mutable_sweep()));
  ASSIGN_OR_RETURN(std::optional<int64_t> stop_after,
                   flags.Integer("stop_after_failures", 1, 1000));
  if (stop_after.has_value()) {
    spec->mutable_sweep()->set_stop_after_failures(static_cast<int32_t>(*stop_after));
  }
  if (spec->strategy_case() == v1::TestSpec::STRATEGY_NOT_SET) {
    return absl::InvalidArgumentError(
        "submit needs a sweep: --rates=R1,R2,... or --min_qps, --max_qps and --steps");
  }
  const v1::SweepStrategy& sweep = spec->sweep();
  if (spec->has_sweep() && sweep.rates_qps().empty() && sweep.steps() == 0) {
    return absl::InvalidArgumentError(
        "submit needs the sweep's rates: --rates=R1,R2,... or --min_qps, --max_qps and --steps");
  }
  return absl::OkStatus();
}

// --strategy=replica_loss: --min_qps, --max_qps and --remove_url, optionally --restore_url,
// --removed_endpoint, --after_loss and --max_recovery (the worker checks the model's
// endpoints).
absl::Status ParseReplicaLoss(const FlagSet& flags, v1::TestSpec* spec) {
  for (const char* other : {"rates", "steps", "stop_after_failures", "confirm_best"}) {
    if (flags.Has(other)) return FlagError(other, "belongs to another strategy, not replica_loss");
  }
  v1::ReplicaLossStrategy* loss = spec->mutable_replica_loss();
  ASSIGN_OR_RETURN(std::optional<double> min_qps, flags.Number("min_qps"));
  ASSIGN_OR_RETURN(std::optional<double> max_qps, flags.Number("max_qps"));
  if (min_qps.has_value()) loss->set_min_qps(*min_qps);
  if (max_qps.has_value()) loss->set_max_qps(*max_qps);
  if (!(loss->min_qps() > 0)) {
    return FlagError("min_qps", "is required with --strategy=replica_loss and must be positive");
  }
  if (!(loss->max_qps() > loss->min_qps())) {
    return FlagError("max_qps", "is required with --strategy=replica_loss, above --min_qps");
  }
  ASSIGN_OR_RETURN(std::optional<std::string> remove, flags.NonEmptyText("remove_url"));
  if (remove.has_value()) loss->set_remove_url(*remove);
  if (loss->remove_url().empty()) {
    return FlagError("remove_url",
                     "is required with --strategy=replica_loss (the URL the worker POSTs to "
                     "take a replica away, e.g. http://host:port/admin/down?seconds=30)");
  }
  ASSIGN_OR_RETURN(std::optional<std::string> restore, flags.NonEmptyText("restore_url"));
  if (restore.has_value()) loss->set_restore_url(*restore);
  ASSIGN_OR_RETURN(std::optional<std::string> removed, flags.NonEmptyText("removed_endpoint"));
  if (removed.has_value()) loss->set_removed_endpoint(*removed);
  ASSIGN_OR_RETURN(std::optional<absl::Duration> after, flags.Duration("after_loss"));
  if (after.has_value()) {
    if (*after <= absl::ZeroDuration()) {
      return BadValue("after_loss", *flags.Text("after_loss"), "must be positive");
    }
    SetProtoDuration(*after, loss->mutable_after_loss());
  }
  ASSIGN_OR_RETURN(std::optional<absl::Duration> recovery, flags.Duration("max_recovery"));
  if (recovery.has_value()) {
    if (*recovery < absl::ZeroDuration()) {
      return BadValue("max_recovery", *flags.Text("max_recovery"), "must not be negative");
    }
    SetProtoDuration(*recovery, loss->mutable_max_recovery());
  }
  return absl::OkStatus();
}

// --strategy=version_transition: --min_qps, --max_qps and --restart_url (one URL per endpoint,
// comma-separated, in the model's endpoint order), optionally --per_replica and
// --max_recovery (the worker checks the count against the model's endpoints).
absl::Status ParseVersionTransition(const FlagSet& flags, v1::TestSpec* spec) {
  for (const char* other : {"rates", "steps", "stop_after_failures", "confirm_best"}) {
    if (flags.Has(other)) {
      return FlagError(other, "belongs to another strategy, not version_transition");
    }
  }
  v1::VersionTransitionStrategy* transition = spec->mutable_version_transition();
  ASSIGN_OR_RETURN(std::optional<double> min_qps, flags.Number("min_qps"));
  ASSIGN_OR_RETURN(std::optional<double> max_qps, flags.Number("max_qps"));
  if (min_qps.has_value()) transition->set_min_qps(*min_qps);
  if (max_qps.has_value()) transition->set_max_qps(*max_qps);
  if (!(transition->min_qps() > 0)) {
    return FlagError("min_qps",
                     "is required with --strategy=version_transition and must be positive");
  }
  if (!(transition->max_qps() > transition->min_qps())) {
    return FlagError("max_qps", "is required with --strategy=version_transition, above --min_qps");
  }
  if (std::optional<std::string> urls = flags.Text("restart_url"); urls.has_value()) {
    ASSIGN_OR_RETURN(std::vector<std::string> entries, SplitList("restart_url", *urls));
    transition->clear_restart_urls();
    for (std::string& url : entries) transition->add_restart_urls(std::move(url));
  }
  if (transition->restart_urls().empty()) {
    return FlagError("restart_url",
                     "is required with --strategy=version_transition: one URL per endpoint, "
                     "comma-separated in the model's endpoint order (e.g. "
                     "http://host:port/admin/restart?warmup_s=5&factor=4)");
  }
  ASSIGN_OR_RETURN(std::optional<absl::Duration> part, flags.Duration("per_replica"));
  if (part.has_value()) {
    if (*part <= absl::ZeroDuration()) {
      return BadValue("per_replica", *flags.Text("per_replica"), "must be positive");
    }
    SetProtoDuration(*part, transition->mutable_per_replica());
  }
  ASSIGN_OR_RETURN(std::optional<absl::Duration> recovery, flags.Duration("max_recovery"));
  if (recovery.has_value()) {
    if (*recovery < absl::ZeroDuration()) {
      return BadValue("max_recovery", *flags.Text("max_recovery"), "must not be negative");
    }
    SetProtoDuration(*recovery, transition->mutable_max_recovery());
  }
  return absl::OkStatus();
}

// The strategy a spec file already chose, when it chose one that has its own flags.
std::string SpecStrategy(const v1::TestSpec& spec) {
  if (spec.has_replica_loss()) return "replica_loss";
  if (spec.has_version_transition()) return "version_transition";
  return "sweep";
}

absl::Status ParseSweep(const FlagSet& flags, v1::TestSpec* spec) {
  const std::string strategy = flags.Text("strategy").value_or(SpecStrategy(*spec));
  const SubmitStrategy* chosen = nullptr;
  for (const SubmitStrategy& s : SubmitStrategies()) {
    if (s.name == strategy) chosen = &s;
  }
  if (chosen == nullptr) {
    std::vector<std::string> names;
    for (const SubmitStrategy& s : SubmitStrategies()) names.push_back(s.name);
    return BadValue("strategy", strategy,
                    absl::StrCat("must be one of ", absl::StrJoin(names, ", ")));
  }
  for (const SubmitStrategy& s : SubmitStrategies()) {
    for (const std::string& name : s.own_flags) {
      if (flags.Has(name) && std::find(chosen->own_flags.begin(), chosen->own_flags.end(), name) ==
                                 chosen->own_flags.end()) {
        return FlagError(name, absl::StrCat("belongs to --strategy=", s.name, ", not ", strategy));
      }
    }
  }
  return chosen->parse(flags, spec);
}

// A duration flag that must be positive when given.
absl::StatusOr<std::optional<absl::Duration>> PositiveDuration(const FlagSet& flags,
                                                               const std::string& name) {
  ASSIGN_OR_RETURN(std::optional<absl::Duration> d, flags.Duration(name));
  if (d.has_value() && *d <= absl::ZeroDuration()) {
    return BadValue(name, *flags.Text(name), "must be positive");
  }
  return d;
}

// Step duration (default 10 s), warmup, request timeout, schedule, endpoint policy, trace
// and horizon.
absl::Status ParseStepSettings(const FlagSet& flags, v1::TestSpec& spec) {
  ASSIGN_OR_RETURN(std::optional<absl::Duration> step_duration,
                   PositiveDuration(flags, "step_duration"));
  if (step_duration.has_value()) {
    SetProtoDuration(*step_duration, spec.mutable_step_duration());
  } else if (!HasDuration(spec.step_duration())) {
    SetProtoDuration(kDefaultStepDuration, spec.mutable_step_duration());
  }
  ASSIGN_OR_RETURN(std::optional<absl::Duration> step_warmup, flags.Duration("step_warmup"));
  if (step_warmup.has_value()) SetProtoDuration(*step_warmup, spec.mutable_step_warmup());
  ASSIGN_OR_RETURN(std::optional<absl::Duration> request_timeout,
                   PositiveDuration(flags, "request_timeout"));
  if (request_timeout.has_value())
    SetProtoDuration(*request_timeout, spec.mutable_request_timeout());
  if (std::optional<std::string> schedule = flags.Text("schedule"); schedule.has_value()) {
    ASSIGN_OR_RETURN(v1::Schedule parsed, ParseSchedule(*schedule));
    spec.set_schedule(parsed);
  }
  if (std::optional<std::string> policy = flags.Text("endpoint_policy"); policy.has_value()) {
    ASSIGN_OR_RETURN(v1::EndpointPolicy parsed, ParseEndpointPolicy(*policy));
    spec.set_endpoint_policy(parsed);
  }
  if (std::optional<std::string> trace = flags.Text("trace"); trace.has_value()) {
    if (trace->empty()) return BadValue("trace", *trace, "must name a trace file");
    spec.set_trace(*trace);
  }
  ASSIGN_OR_RETURN(std::optional<absl::Duration> horizon,
                   PositiveDuration(flags, "sustain_horizon"));
  if (horizon.has_value()) SetProtoDuration(*horizon, spec.mutable_sustain_horizon());
  return absl::OkStatus();
}

// An integer, or a named class for the usual sources of tests.
absl::Status ParsePriority(const FlagSet& flags, v1::TestSpec& spec) {
  static const auto* const kPriorityClasses = new std::map<std::string, int32_t>{
      {"oncall", 200}, {"adhoc", 200}, {"ci", 100}, {"scheduled", 0}};
  std::optional<std::string> priority_text = flags.Text("priority");
  if (!priority_text.has_value()) return absl::OkStatus();
  auto named =
      kPriorityClasses->find(absl::AsciiStrToLower(absl::StripAsciiWhitespace(*priority_text)));
  if (named != kPriorityClasses->end()) {
    spec.set_priority(named->second);
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<int64_t>> priority = flags.Integer(
      "priority", std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  if (!priority.ok()) {
    return BadValue("priority", *priority_text,
                    "is not an integer or a class (oncall/adhoc 200, ci 100, scheduled 0)");
  }
  spec.set_priority(static_cast<int32_t>(**priority));
  return absl::OkStatus();
}

// --fail_below=QPS and --fail_if_regressed=P[%]; both judge the finished test, so they need
// --wait or --watch.
absl::StatusOr<GateOptions> ParseGates(const FlagSet& flags, FollowMode follow) {
  GateOptions gates;
  ASSIGN_OR_RETURN(gates.fail_below_qps, flags.Number("fail_below"));
  if (gates.fail_below_qps.has_value() && *gates.fail_below_qps <= 0) {
    return BadValue("fail_below", *flags.Text("fail_below"), "must be positive (requests/s)");
  }
  if (std::optional<std::string> text = flags.Text("fail_if_regressed")) {
    absl::string_view number = absl::StripAsciiWhitespace(*text);
    absl::ConsumeSuffix(&number, "%");
    double pct = 0;
    if (!absl::SimpleAtod(number, &pct) || !std::isfinite(pct) || pct < 0 || pct >= 100) {
      return BadValue("fail_if_regressed", *text, "is not a percentage in [0, 100), e.g. 5%");
    }
    gates.fail_if_regressed_pct = pct;
  }
  if (gates.Any() && follow == FollowMode::kNone) {
    return FlagError(gates.fail_below_qps.has_value() ? "fail_below" : "fail_if_regressed",
                     "needs --wait or --watch (the gate judges the finished test)");
  }
  return gates;
}

}  // namespace

const std::vector<SubmitStrategy>& SubmitStrategies() {
  auto search = [](const std::string& name) {
    return
        [name](const FlagSet& flags, v1::TestSpec* spec) { return ParseSearch(flags, name, spec); };
  };
  static const auto* const kStrategies = new std::vector<SubmitStrategy>{
      {"sweep", "the default; --rates, or --min_qps --max_qps --steps", ParseSweepStrategy},
      {"binary", "binary search between --min_qps and --max_qps", search("binary")},
      {"adaptive", "Algorithm 1 between --min_qps and --max_qps", search("adaptive")},
      {"ladder", "seed 003's ladder from --min_qps (default 2), ceiling --max_qps",
       search("ladder")},
      {"replica_loss",
       "survivor capacity: the largest rate between --min_qps and --max_qps for which losing "
       "one replica (--remove_url POSTed mid-hold) keeps the SLO",
       ParseReplicaLoss,
       {"remove_url", "restore_url", "removed_endpoint", "after_loss", "max_recovery"}},
      {"version_transition",
       "rolling update: the highest rate between --min_qps and --max_qps at which restarting "
       "the replicas one by one on a new version (--restart_url per endpoint) keeps the SLO",
       ParseVersionTransition,
       {"restart_url", "per_replica", "max_recovery"}},
  };
  return *kStrategies;
}

absl::StatusOr<SubmitOptions> ParseSubmitFlags(const FlagSet& flags) {
  SubmitOptions options;
  v1::TestSpec& spec = options.spec;
  if (std::optional<std::string> path = flags.Text("spec_file"); path.has_value()) {
    RETURN_IF_ERROR(ReadJsonMessage("spec_file", *path, &spec));
  }
  ASSIGN_OR_RETURN(std::optional<std::string> model, flags.NonEmptyText("model"));
  if (model.has_value()) spec.set_model(*model);
  ASSIGN_OR_RETURN(std::optional<std::string> version, flags.NonEmptyText("model_version"));
  if (version.has_value()) spec.set_model_version(*version);
  if (spec.model().empty()) return FlagError("model", "is required (the registered model name)");

  RETURN_IF_ERROR(ParseSweep(flags, &spec));
  RETURN_IF_ERROR(ParseStepSettings(flags, spec));
  RETURN_IF_ERROR(ParsePriority(flags, spec));
  ASSIGN_OR_RETURN(std::optional<int64_t> max_attempts, flags.Integer("max_attempts", 1, 100));
  if (max_attempts.has_value()) spec.set_max_attempts(static_cast<int32_t>(*max_attempts));
  ASSIGN_OR_RETURN(std::optional<int64_t> replayers, flags.Integer("replayers", 1, 1024));
  if (replayers.has_value()) spec.set_replayers(static_cast<int32_t>(*replayers));

  ASSIGN_OR_RETURN(std::optional<std::string> request_id, flags.NonEmptyText("request_id"));
  if (request_id.has_value()) options.request_id = *request_id;

  ASSIGN_OR_RETURN(bool wait, flags.Bool("wait"));
  ASSIGN_OR_RETURN(bool watch, flags.Bool("watch"));
  options.follow = watch ? FollowMode::kStream : wait ? FollowMode::kPoll : FollowMode::kNone;
  ASSIGN_OR_RETURN(options.gates, ParseGates(flags, options.follow));
  return options;
}

}  // namespace vanguard::cli
