// Tests of command_line.h: which command the words select, how flags become a TestSpec or a
// Model, and that every bad value is a usage error naming the flag.
#include "orchestrator/cli/command_line.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/cli/command_table.h"
#include "orchestrator/cli/submit_flags.h"
#include "orchestrator/cli/usage.h"
#include "vanguard/v1/model.pb.h"
#include "vanguard/v1/orchestrator.pb.h"

namespace vanguard::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

absl::StatusOr<ParsedCommand> Parse(const std::vector<std::string>& words, const GivenFlags& flags,
                                    const Environment& env = {}) {
  absl::StatusOr<CommandWords> command = IdentifyCommand(words);
  if (!command.ok()) return command.status();
  return ParseCommand(*command, flags, env);
}

// Expects a usage error whose message contains `fragment` (usually the flag's name).
void ExpectUsageError(const std::vector<std::string>& words, const GivenFlags& flags,
                      const std::string& fragment) {
  absl::StatusOr<ParsedCommand> parsed = Parse(words, flags);
  ASSERT_FALSE(parsed.ok()) << "accepted " << ::testing::PrintToString(flags);
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(fragment));
}

std::string WriteTempFile(const std::string& text) {
  std::string path = ::testing::TempDir() + "/vanguard_cli_XXXXXX";
  const int fd = mkstemp(path.data());
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

int64_t Millis(const google::protobuf::Duration& d) {
  return d.seconds() * 1000 + d.nanos() / 1'000'000;
}

const GivenFlags kSubmitBase = {{"model", "resnet50"}, {"rates", "100,200,300"}};

GivenFlags With(GivenFlags flags, const GivenFlags& more) {
  for (const auto& [k, v] : more) flags[k] = v;
  return flags;
}

TEST(IdentifyCommandTest, FindsTwoWordCommandsAndKeepsTheirArguments) {
  absl::StatusOr<CommandWords> command = IdentifyCommand({"models", "get", "resnet50"});
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->name, "models get");
  EXPECT_THAT(command->args, ElementsAre("resnet50"));

  command = IdentifyCommand({"get", "7"});
  ASSERT_TRUE(command.ok());
  EXPECT_EQ(command->name, "get");
  EXPECT_THAT(command->args, ElementsAre("7"));
}

TEST(IdentifyCommandTest, MissingOrUnknownCommandIsAnError) {
  EXPECT_THAT(std::string(IdentifyCommand({}).status().message()), HasSubstr("missing command"));
  EXPECT_THAT(std::string(IdentifyCommand({"sumbit"}).status().message()), HasSubstr("sumbit"));
  EXPECT_THAT(std::string(IdentifyCommand({"models"}).status().message()),
              HasSubstr("register, get, list or deprecate"));
  EXPECT_THAT(std::string(IdentifyCommand({"tokens"}).status().message()),
              HasSubstr("create, revoke or list"));
  EXPECT_THAT(std::string(IdentifyCommand({"models", "delete"}).status().message()),
              HasSubstr("models delete"));
}

TEST(UsageTextTest, ListsEveryCommand) {
  const std::string usage = UsageText();
  for (const char* command : {"models register", "models get", "models list", "submit", "get ID",
                              "list", "cancel ID", "watch ID"}) {
    EXPECT_THAT(usage, HasSubstr(command));
  }
}

TEST(SubmitSpecTest, RatesBecomeTheSweepWithDefaultStepDuration) {
  absl::StatusOr<ParsedCommand> parsed = Parse({"submit"}, kSubmitBase);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const v1::TestSpec& spec = parsed->Options<SubmitOptions>().spec;
  EXPECT_EQ(spec.model(), "resnet50");
  EXPECT_EQ(spec.model_version(), "");
  ASSERT_EQ(spec.strategy_case(), v1::TestSpec::kSweep);
  EXPECT_THAT(spec.sweep().rates_qps(), ElementsAre(100, 200, 300));
  EXPECT_EQ(spec.sweep().steps(), 0);
  EXPECT_EQ(Millis(spec.step_duration()), 10'000);
  EXPECT_FALSE(spec.has_step_warmup());  // the model's default applies
  EXPECT_EQ(parsed->Options<SubmitOptions>().follow, FollowMode::kNone);
}

TEST(SubmitSpecTest, MinMaxStepsBecomeAnEvenSweep) {
  absl::StatusOr<ParsedCommand> parsed =
      Parse({"submit"}, {{"model", "m"}, {"min_qps", "50"}, {"max_qps", "450.5"}, {"steps", "5"}});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const v1::SweepStrategy& sweep = parsed->Options<SubmitOptions>().spec.sweep();
  EXPECT_TRUE(sweep.rates_qps().empty());
  EXPECT_EQ(sweep.min_qps(), 50);
  EXPECT_EQ(sweep.max_qps(), 450.5);
  EXPECT_EQ(sweep.steps(), 5);
}

TEST(SubmitSpecTest, StrategyFlagSelectsTheSearch) {
  absl::StatusOr<ParsedCommand> adaptive = Parse(
      {"submit"}, {{"model", "m"}, {"strategy", "adaptive"}, {"min_qps", "10"}, {"max_qps", "90"}});
  ASSERT_TRUE(adaptive.ok()) << adaptive.status();
  EXPECT_EQ(adaptive->Options<SubmitOptions>().spec.adaptive().min_qps(), 10);
  EXPECT_EQ(adaptive->Options<SubmitOptions>().spec.adaptive().max_qps(), 90);
  EXPECT_FALSE(adaptive->Options<SubmitOptions>().spec.has_sweep());
  EXPECT_FALSE(adaptive->Options<SubmitOptions>().spec.adaptive().confirm_best());
  absl::StatusOr<ParsedCommand> confirming = Parse({"submit"}, {{"model", "m"},
                                                                {"strategy", "adaptive"},
                                                                {"min_qps", "10"},
                                                                {"max_qps", "90"},
                                                                {"confirm_best", "true"}});
  ASSERT_TRUE(confirming.ok()) << confirming.status();
  EXPECT_TRUE(confirming->Options<SubmitOptions>().spec.adaptive().confirm_best());
  ExpectUsageError({"submit"},
                   {{"model", "m"},
                    {"strategy", "binary"},
                    {"min_qps", "1"},
                    {"max_qps", "2"},
                    {"confirm_best", "true"}},
                   "--confirm_best");
  ExpectUsageError({"submit"}, {{"model", "m"}, {"rates", "1,2"}, {"confirm_best", "true"}},
                   "--confirm_best");

  absl::StatusOr<ParsedCommand> binary = Parse(
      {"submit"}, {{"model", "m"}, {"strategy", "binary"}, {"min_qps", "1"}, {"max_qps", "2"}});
  ASSERT_TRUE(binary.ok()) << binary.status();
  EXPECT_EQ(binary->Options<SubmitOptions>().spec.binary_search().max_qps(), 2);

  absl::StatusOr<ParsedCommand> ladder =
      Parse({"submit"}, {{"model", "m"}, {"strategy", "ladder"}});
  ASSERT_TRUE(ladder.ok()) << ladder.status();
  EXPECT_TRUE(ladder->Options<SubmitOptions>().spec.has_ladder());

  ExpectUsageError({"submit"}, {{"model", "m"}, {"strategy", "adaptive"}, {"min_qps", "10"}},
                   "--max_qps");
  ExpectUsageError({"submit"}, {{"model", "m"}, {"strategy", "guess"}}, "--strategy");
  ExpectUsageError({"submit"}, {{"model", "m"}, {"strategy", "binary"}, {"rates", "1,2"}},
                   "--rates");
}

TEST(SubmitSpecTest, ReplicaLossTakesItsRatesAndHooks) {
  const GivenFlags base = {{"model", "m"},
                           {"strategy", "replica_loss"},
                           {"min_qps", "50"},
                           {"max_qps", "300"},
                           {"remove_url", "http://r2:8000/admin/down"}};
  absl::StatusOr<ParsedCommand> parsed = Parse({"submit"}, base);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const v1::ReplicaLossStrategy& loss = parsed->Options<SubmitOptions>().spec.replica_loss();
  EXPECT_EQ(loss.min_qps(), 50);
  EXPECT_EQ(loss.max_qps(), 300);
  EXPECT_EQ(loss.remove_url(), "http://r2:8000/admin/down");
  EXPECT_FALSE(loss.has_after_loss());

  auto with = [&](const GivenFlags& more) { return With(base, more); };
  parsed = Parse({"submit"}, with({{"restore_url", "http://r2:8000/admin/up"},
                                   {"removed_endpoint", "http://r2:8000"},
                                   {"after_loss", "12s"},
                                   {"max_recovery", "3s"}}));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const v1::ReplicaLossStrategy& full = parsed->Options<SubmitOptions>().spec.replica_loss();
  EXPECT_EQ(full.restore_url(), "http://r2:8000/admin/up");
  EXPECT_EQ(full.removed_endpoint(), "http://r2:8000");
  EXPECT_EQ(Millis(full.after_loss()), 12'000);
  EXPECT_EQ(Millis(full.max_recovery()), 3'000);

  GivenFlags no_url = base;
  no_url.erase("remove_url");
  ExpectUsageError({"submit"}, no_url, "--remove_url");
  ExpectUsageError({"submit"}, with({{"max_qps", "50"}}), "--max_qps");
  ExpectUsageError({"submit"}, with({{"min_qps", "-1"}}), "--min_qps");
  ExpectUsageError({"submit"}, with({{"after_loss", "0s"}}), "--after_loss");
  ExpectUsageError({"submit"}, with({{"rates", "1,2"}}), "--rates");
  // Its flags belong to it alone.
  ExpectUsageError({"submit"}, {{"model", "m"}, {"rates", "1"}, {"remove_url", "http://x:1/"}},
                   "--remove_url");
}

TEST(SubmitSpecTest, VersionTransitionTakesItsRatesAndRestartUrls) {
  const GivenFlags base = {
      {"model", "m"},
      {"strategy", "version_transition"},
      {"min_qps", "50"},
      {"max_qps", "300"},
      {"restart_url", "http://r0:8000/admin/restart?factor=4, http://r1:8000/admin/restart"}};
  absl::StatusOr<ParsedCommand> parsed = Parse({"submit"}, base);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const v1::VersionTransitionStrategy& transition =
      parsed->Options<SubmitOptions>().spec.version_transition();
  EXPECT_EQ(transition.min_qps(), 50);
  EXPECT_EQ(transition.max_qps(), 300);
  EXPECT_THAT(transition.restart_urls(),
              ::testing::ElementsAre("http://r0:8000/admin/restart?factor=4",
                                     "http://r1:8000/admin/restart"));
  EXPECT_FALSE(transition.has_per_replica());

  auto with = [&](const GivenFlags& more) { return With(base, more); };
  parsed = Parse({"submit"}, with({{"per_replica", "8s"}, {"max_recovery", "3s"}}));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const v1::VersionTransitionStrategy& full =
      parsed->Options<SubmitOptions>().spec.version_transition();
  EXPECT_EQ(Millis(full.per_replica()), 8'000);
  EXPECT_EQ(Millis(full.max_recovery()), 3'000);

  GivenFlags no_url = base;
  no_url.erase("restart_url");
  ExpectUsageError({"submit"}, no_url, "--restart_url");
  ExpectUsageError({"submit"}, with({{"restart_url", "http://r0:1/,"}}), "--restart_url");
  ExpectUsageError({"submit"}, with({{"max_qps", "50"}}), "--max_qps");
  ExpectUsageError({"submit"}, with({{"per_replica", "0s"}}), "--per_replica");
  ExpectUsageError({"submit"}, with({{"remove_url", "http://x:1/"}}), "--remove_url");
  // Its own flags belong to it (max_recovery to it and replica_loss) alone.
  ExpectUsageError({"submit"}, {{"model", "m"}, {"rates", "1"}, {"restart_url", "http://x:1/"}},
                   "--restart_url");
  ExpectUsageError({"submit"}, {{"model", "m"}, {"rates", "1"}, {"max_recovery", "1s"}},
                   "--max_recovery");
}

TEST(SubmitSpecTest, DurationsScheduleAndOtherFlags) {
  absl::StatusOr<ParsedCommand> parsed =
      Parse({"submit"}, With(kSubmitBase, {{"model_version", "v3"},
                                           {"step_duration", "1m30s"},
                                           {"step_warmup", "500ms"},
                                           {"request_timeout", "2s"},
                                           {"schedule", "poisson"},
                                           {"endpoint_policy", "p2c"},
                                           {"trace", "/traces/mix.vtrace"},
                                           {"sustain_horizon", "10m"},
                                           {"priority", "-4"},
                                           {"max_attempts", "5"},
                                           {"replayers", "4"},
                                           {"stop_after_failures", "2"},
                                           {"request_id", "ci-123"},
                                           {"wait", "true"}}));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const v1::TestSpec& spec = parsed->Options<SubmitOptions>().spec;
  EXPECT_EQ(spec.model_version(), "v3");
  EXPECT_EQ(Millis(spec.step_duration()), 90'000);
  EXPECT_EQ(Millis(spec.step_warmup()), 500);
  EXPECT_EQ(spec.step_warmup().nanos(), 500'000'000);
  EXPECT_EQ(Millis(spec.request_timeout()), 2'000);
  EXPECT_EQ(spec.schedule(), v1::SCHEDULE_POISSON);
  EXPECT_EQ(spec.endpoint_policy(), v1::ENDPOINT_POLICY_P2C);
  EXPECT_EQ(spec.trace(), "/traces/mix.vtrace");
  EXPECT_EQ(Millis(spec.sustain_horizon()), 600'000);
  EXPECT_EQ(spec.priority(), -4);
  EXPECT_EQ(spec.max_attempts(), 5);
  EXPECT_EQ(spec.replayers(), 4);
  EXPECT_EQ(spec.sweep().stop_after_failures(), 2);
  EXPECT_EQ(parsed->Options<SubmitOptions>().request_id, "ci-123");
  EXPECT_EQ(parsed->Options<SubmitOptions>().follow, FollowMode::kPoll);
}

TEST(SubmitSpecTest, WatchWinsOverWait) {
  absl::StatusOr<ParsedCommand> parsed =
      Parse({"submit"}, With(kSubmitBase, {{"wait", "true"}, {"watch", "true"}}));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->Options<SubmitOptions>().follow, FollowMode::kStream);
}

TEST(SubmitSpecTest, SpecFileIsReadAndFlagsOverrideIt) {
  const std::string path = WriteTempFile(R"({
    "model": "bert", "model_version": "v1",
    "sweep": {"rates_qps": [10, 20], "stop_after_failures": 3},
    "step_duration": "30s", "priority": 7, "labels": {"team": "search"}
  })");
  absl::StatusOr<ParsedCommand> parsed =
      Parse({"submit"}, {{"spec_file", path}, {"rates", "40,80"}, {"model_version", "v2"}});
  std::remove(path.c_str());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const v1::TestSpec& spec = parsed->Options<SubmitOptions>().spec;
  EXPECT_EQ(spec.model(), "bert");
  EXPECT_EQ(spec.model_version(), "v2");
  EXPECT_THAT(spec.sweep().rates_qps(), ElementsAre(40, 80));
  EXPECT_EQ(spec.sweep().stop_after_failures(), 3);
  EXPECT_EQ(Millis(spec.step_duration()), 30'000);  // not replaced by the 10 s default
  EXPECT_EQ(spec.priority(), 7);
  EXPECT_EQ(spec.labels().at("team"), "search");
}

TEST(SubmitSpecTest, SpecFileWithUnknownFieldIsAUsageError) {
  const std::string path = WriteTempFile(R"({"model": "bert", "step_durration": "30s"})");
  ExpectUsageError({"submit"}, {{"spec_file", path}, {"rates", "1"}}, "--spec_file");
  std::remove(path.c_str());
  ExpectUsageError({"submit"}, {{"spec_file", "/nonexistent/spec.json"}}, "--spec_file");
}

TEST(SubmitSpecTest, InvalidValuesNameTheFlag) {
  ExpectUsageError({"submit"}, {{"rates", "100"}}, "--model");
  ExpectUsageError({"submit"}, {{"model", "m"}}, "--rates");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"rates", "100,abc"}}), "--rates: 'abc'");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"rates", "100,,200"}}), "--rates");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"rates", "-5"}}), "--rates");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"min_qps", "10"}}), "cannot be combined");
  ExpectUsageError({"submit"}, {{"model", "m"}, {"min_qps", "10"}, {"max_qps", "20"}}, "--steps");
  ExpectUsageError({"submit"},
                   {{"model", "m"}, {"min_qps", "30"}, {"max_qps", "20"}, {"steps", "3"}},
                   "--max_qps");
  ExpectUsageError({"submit"},
                   {{"model", "m"}, {"min_qps", "10"}, {"max_qps", "20"}, {"steps", "1"}},
                   "--steps");
  ExpectUsageError({"submit"},
                   {{"model", "m"}, {"min_qps", "10"}, {"max_qps", "20"}, {"steps", "2.5"}},
                   "--steps: '2.5' is not an integer");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"step_duration", "10"}}),
                   "--step_duration: '10' is not a duration");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"step_duration", "0s"}}), "--step_duration");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"step_warmup", "-2s"}}), "--step_warmup");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"request_timeout", "soon"}}),
                   "--request_timeout");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"schedule", "bursty"}}), "--schedule");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"endpoint_policy", "least_conn"}}),
                   "--endpoint_policy");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"sustain_horizon", "-5m"}}),
                   "--sustain_horizon");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"priority", "high"}}), "--priority");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"max_attempts", "0"}}), "--max_attempts");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"replayers", "0"}}), "--replayers");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"stop_after_failures", "0"}}),
                   "--stop_after_failures");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"wait", "maybe"}}), "--wait");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"model", ""}}), "--model");
  ExpectUsageError({"submit", "extra"}, kSubmitBase, "unexpected argument 'extra'");
}

TEST(ParseDurationFlagTest, AcceptsAbslDurationsAndRejectsOthers) {
  EXPECT_EQ(*ParseDurationFlag("x", "10s"), absl::Seconds(10));
  EXPECT_EQ(*ParseDurationFlag("x", "500ms"), absl::Milliseconds(500));
  EXPECT_EQ(*ParseDurationFlag("x", "1h2m"), absl::Minutes(62));
  for (const char* bad : {"", "10", "ten seconds", "inf", "-1s"}) {
    absl::StatusOr<absl::Duration> d = ParseDurationFlag("step_warmup", bad);
    EXPECT_FALSE(d.ok()) << bad;
    EXPECT_THAT(std::string(d.status().message()), HasSubstr("--step_warmup")) << bad;
  }
}

TEST(GlobalOptionsTest, DefaultsEnvironmentAndFlags) {
  absl::StatusOr<ParsedCommand> parsed = Parse({"get", "7"}, {});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->global.orchestrator, "127.0.0.1:50051");
  EXPECT_EQ(parsed->global.rpc_timeout, absl::Seconds(10));
  EXPECT_EQ(parsed->global.output, OutputFormat::kTable);
  EXPECT_EQ(parsed->global.bearer_token, "");
  EXPECT_EQ(parsed->Options<int64_t>(), 7);

  parsed = Parse({"get", "7"}, {}, Environment{"orch:9000", "s3cret"});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->global.orchestrator, "orch:9000");
  EXPECT_EQ(parsed->global.bearer_token, "s3cret");

  parsed = Parse({"get", "7"}, {{"orchestrator", "other:1"}, {"timeout", "3s"}, {"output", "json"}},
                 Environment{"orch:9000", std::nullopt});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->global.orchestrator, "other:1");
  EXPECT_EQ(parsed->global.rpc_timeout, absl::Seconds(3));
  EXPECT_EQ(parsed->global.output, OutputFormat::kJson);

  for (const auto& [text, format] :
       std::vector<std::pair<std::string, OutputFormat>>{{"csv", OutputFormat::kCsv},
                                                         {"YAML", OutputFormat::kYaml},
                                                         {"table", OutputFormat::kTable}}) {
    parsed = Parse({"list"}, {{"output", text}});
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status();
    EXPECT_EQ(parsed->global.output, format) << text;
  }
}

TEST(GlobalOptionsTest, InvalidValuesNameTheFlag) {
  ExpectUsageError({"get", "7"}, {{"timeout", "10"}}, "--timeout");
  ExpectUsageError({"get", "7"}, {{"timeout", "0s"}}, "--timeout");
  ExpectUsageError({"get", "7"}, {{"output", "xml"}}, "--output: 'xml'");
  ExpectUsageError({"watch", "7"}, {{"output", "csv"}},
                   "--output: 'csv' is not printed by 'watch' (use table, json or yaml)");
  ExpectUsageError({"tokens", "create"}, {{"name", "a"}, {"role", "admin"}, {"output", "csv"}},
                   "'csv' is not printed by 'tokens create'");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"watch", "true"}, {"output", "csv"}}),
                   "csv cannot stream");
  ExpectUsageError({"get", "7"}, {{"orchestrator", ""}}, "--orchestrator");
}

TEST(CommandArgsTest, TestIdsMustBePositiveIntegers) {
  ExpectUsageError({"get"}, {}, "needs a test ID");
  ExpectUsageError({"get", "abc"}, {}, "'abc' is not a test id");
  ExpectUsageError({"cancel", "0"}, {}, "'0' is not a test id");
  ExpectUsageError({"watch", "1", "2"}, {}, "unexpected argument '2'");
  ExpectUsageError({"models", "get"}, {}, "needs a model NAME");
}

TEST(CommandArgsTest, FlagsOfOtherCommandsAreRejected) {
  ExpectUsageError({"get", "7"}, {{"rates", "100"}}, "--rates is not used by 'get'");
  ExpectUsageError({"models", "list"}, {{"wait", "true"}}, "--wait is not used by 'models list'");
  ExpectUsageError({"list"}, {{"model_version", "v1"}}, "--version is not used by 'list'");
}

TEST(ListTest, StateModelAndLimit) {
  absl::StatusOr<ParsedCommand> parsed =
      Parse({"list"}, {{"state", "Running"}, {"model", "bert"}, {"limit", "5"}});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Options<v1::ListTestsRequest>().state(), v1::TEST_STATE_RUNNING);
  EXPECT_EQ(parsed->Options<v1::ListTestsRequest>().model(), "bert");
  EXPECT_EQ(parsed->Options<v1::ListTestsRequest>().page_size(), 5);

  parsed = Parse({"list"}, {});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->Options<v1::ListTestsRequest>().state(), v1::TEST_STATE_UNSPECIFIED);
  EXPECT_EQ(parsed->Options<v1::ListTestsRequest>().page_size(), 50);

  ExpectUsageError({"list"}, {{"state", "done"}}, "--state: 'done'");
  ExpectUsageError({"list"}, {{"limit", "0"}}, "--limit");
  ExpectUsageError({"list"}, {{"limit", "many"}}, "--limit");
}

const GivenFlags kRegisterBase = {{"name", "resnet50"},
                                  {"model_version", "v3"},
                                  {"endpoint", "http://127.0.0.1:8000, http://127.0.0.1:8001"},
                                  {"p99_ms", "100"}};

TEST(RegisterModelTest, FlagsBecomeTheModel) {
  absl::StatusOr<ParsedCommand> parsed = Parse(
      {"models", "register"}, With(kRegisterBase, {{"protocol", "openai_chat"},
                                                   {"served_name", "rn50"},
                                                   {"framework", "onnx"},
                                                   {"p50_ms", "20.5"},
                                                   {"max_error_rate", "0.01"},
                                                   {"min_achieved_ratio", "0.95"},
                                                   {"warmup", "5s"},
                                                   {"accelerator", "nvidia-l40"},
                                                   {"accelerator_count", "2"},
                                                   {"pool", "gpu-a"},
                                                   {"request_template", R"({"messages": []})"}}));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const v1::Model& model = parsed->Options<v1::Model>();
  EXPECT_EQ(model.name(), "resnet50");
  EXPECT_EQ(model.version(), "v3");
  EXPECT_THAT(model.endpoints(), ElementsAre("http://127.0.0.1:8000", "http://127.0.0.1:8001"));
  EXPECT_EQ(model.protocol(), v1::PROTOCOL_OPENAI_CHAT);
  EXPECT_EQ(model.served_name(), "rn50");
  EXPECT_EQ(model.framework(), "onnx");
  EXPECT_EQ(Millis(model.slo().p99_latency()), 100);
  EXPECT_EQ(model.slo().p50_latency().nanos(), 20'500'000);
  EXPECT_EQ(model.slo().max_error_rate(), 0.01);
  EXPECT_EQ(model.slo().min_achieved_ratio(), 0.95);
  EXPECT_EQ(model.default_warmup().seconds(), 5);
  EXPECT_EQ(model.hardware().accelerator(), "nvidia-l40");
  EXPECT_EQ(model.hardware().accelerator_count(), 2);
  EXPECT_EQ(model.hardware().pool(), "gpu-a");
  EXPECT_EQ(model.request_template(), R"({"messages": []})");
}

TEST(RegisterModelTest, ProtocolDefaultsToKserveRest) {
  absl::StatusOr<ParsedCommand> parsed = Parse({"models", "register"}, kRegisterBase);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Options<v1::Model>().protocol(), v1::PROTOCOL_KSERVE_V2_REST);
}

TEST(RegisterModelTest, FromFileWithFlagOverrides) {
  const std::string path = WriteTempFile(R"({
    "name": "bert", "version": "v1", "protocol": "PROTOCOL_KSERVE_V2_GRPC",
    "endpoints": ["10.0.0.5:8001"], "slo": {"p99_latency": "0.250s", "max_error_rate": 0.02}
  })");
  absl::StatusOr<ParsedCommand> parsed =
      Parse({"models", "register"}, {{"from_file", path}, {"model_version", "v2"}});
  std::remove(path.c_str());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Options<v1::Model>().name(), "bert");
  EXPECT_EQ(parsed->Options<v1::Model>().version(), "v2");
  EXPECT_EQ(parsed->Options<v1::Model>().protocol(), v1::PROTOCOL_KSERVE_V2_GRPC);
  EXPECT_THAT(parsed->Options<v1::Model>().endpoints(), ElementsAre("10.0.0.5:8001"));
  EXPECT_EQ(Millis(parsed->Options<v1::Model>().slo().p99_latency()), 250);
  EXPECT_EQ(parsed->Options<v1::Model>().slo().max_error_rate(), 0.02);
}

TEST(RegisterModelTest, InvalidValuesNameTheFlag) {
  const std::vector<std::string> reg = {"models", "register"};
  GivenFlags missing_name = kRegisterBase;
  missing_name.erase("name");
  ExpectUsageError(reg, missing_name, "--name");
  GivenFlags missing_version = kRegisterBase;
  missing_version.erase("model_version");
  ExpectUsageError(reg, missing_version, "--version");
  GivenFlags missing_endpoint = kRegisterBase;
  missing_endpoint.erase("endpoint");
  ExpectUsageError(reg, missing_endpoint, "--endpoint");
  GivenFlags missing_p99 = kRegisterBase;
  missing_p99.erase("p99_ms");
  ExpectUsageError(reg, missing_p99, "--p99_ms");

  ExpectUsageError(reg, With(kRegisterBase, {{"protocol", "soap"}}), "--protocol: 'soap'");
  ExpectUsageError(reg, With(kRegisterBase, {{"endpoint", "127.0.0.1:8000"}}), "--endpoint");
  ExpectUsageError(reg, With(kRegisterBase, {{"p99_ms", "fast"}}), "--p99_ms: 'fast'");
  ExpectUsageError(reg, With(kRegisterBase, {{"p99_ms", "0"}}), "--p99_ms");
  ExpectUsageError(reg, With(kRegisterBase, {{"p50_ms", "200"}}), "--p50_ms");
  ExpectUsageError(reg, With(kRegisterBase, {{"max_error_rate", "5"}}), "--max_error_rate");
  ExpectUsageError(reg, With(kRegisterBase, {{"min_achieved_ratio", "0"}}), "--min_achieved_ratio");
  ExpectUsageError(reg, With(kRegisterBase, {{"warmup", "5"}}), "--warmup: '5'");
  ExpectUsageError(reg, With(kRegisterBase, {{"accelerator_count", "-1"}}), "--accelerator_count");
  ExpectUsageError(reg, With(kRegisterBase, {{"request_template", "{not json"}}),
                   "--request_template");
  ExpectUsageError(reg, With(kRegisterBase, {{"from_file", "/nonexistent.json"}}), "--from_file");
}

FlagKind TestKinds(absl::string_view name) {
  if (name == "wait" || name == "watch") return FlagKind::kBool;
  if (name == "model" || name == "model_version" || name == "output") return FlagKind::kValued;
  return FlagKind::kUnknown;
}

TEST(PrepareArgvTest, RewritesVersionToModelVersion) {
  absl::StatusOr<PreparedArgv> prepared = PrepareArgv(
      {"vanguard", "models", "get", "m", "--version=v2", "--output", "json"}, TestKinds);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_THAT(prepared->argv, ElementsAre("vanguard", "models", "get", "m", "--model_version=v2",
                                          "--output", "json"));
  prepared = PrepareArgv({"vanguard", "submit", "--version", "v3", "--wait"}, TestKinds);
  ASSERT_TRUE(prepared.ok());
  EXPECT_THAT(prepared->argv, ElementsAre("vanguard", "submit", "--model_version=v3", "--wait"));
  EXPECT_FALSE(prepared->help_requested);
}

TEST(PrepareArgvTest, RecordsWhichFlagsWereGiven) {
  absl::StatusOr<PreparedArgv> prepared = PrepareArgv(
      {"vanguard", "submit", "--model=", "--version", "v3", "--nowait", "-output", "json"},
      TestKinds);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_THAT(prepared->given_names, ElementsAre("model", "model_version", "output", "wait"));
}

TEST(PrepareArgvTest, UnknownFlagsBadBoolsAndMissingValuesAreUsageErrors) {
  EXPECT_THAT(
      std::string(PrepareArgv({"v", "get", "1", "--modle=x"}, TestKinds).status().message()),
      HasSubstr("unknown flag --modle"));
  EXPECT_THAT(std::string(PrepareArgv({"v", "--wait=maybe"}, TestKinds).status().message()),
              HasSubstr("--wait: 'maybe'"));
  EXPECT_THAT(std::string(PrepareArgv({"v", "--model"}, TestKinds).status().message()),
              HasSubstr("--model needs a value"));
  EXPECT_THAT(std::string(PrepareArgv({"v", "--version"}, TestKinds).status().message()),
              HasSubstr("--version needs a value"));
  EXPECT_TRUE(PrepareArgv({"v", "--nowait", "-watch", "--", "--anything"}, TestKinds).ok());
}

TEST(PrepareArgvTest, DetectsHelp) {
  for (const char* help : {"--help", "-help", "-h"}) {
    absl::StatusOr<PreparedArgv> prepared = PrepareArgv({"v", "submit", help}, TestKinds);
    ASSERT_TRUE(prepared.ok());
    EXPECT_TRUE(prepared->help_requested) << help;
  }
}

TEST(RegisterModelTest, StreamingAndGaugeLimitsBecomeSloFields) {
  absl::StatusOr<ParsedCommand> parsed =
      Parse({"models", "register"}, {{"name", "llm"},
                                     {"model_version", "v1"},
                                     {"endpoint", "http://127.0.0.1:8000"},
                                     {"p99_ms", "2000"},
                                     {"ttft_p99_ms", "250"},
                                     {"inter_token_p99_ms", "40"},
                                     {"max_gpu_utilization", "0.9"},
                                     {"max_queue_depth", "8"}});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(Millis(parsed->Options<v1::Model>().slo().ttft_p99()), 250);
  EXPECT_EQ(Millis(parsed->Options<v1::Model>().slo().inter_token_p99()), 40);
  EXPECT_DOUBLE_EQ(parsed->Options<v1::Model>().slo().max_gpu_utilization(), 0.9);
  EXPECT_DOUBLE_EQ(parsed->Options<v1::Model>().slo().max_queue_depth(), 8);
  const GivenFlags base = {{"name", "llm"},
                           {"model_version", "v1"},
                           {"endpoint", "http://127.0.0.1:8000"},
                           {"p99_ms", "2000"}};
  ExpectUsageError({"models", "register"}, With(base, {{"max_gpu_utilization", "1.5"}}),
                   "--max_gpu_utilization");
  ExpectUsageError({"models", "register"}, With(base, {{"ttft_p99_ms", "0"}}), "--ttft_p99_ms");
}

TEST(SubmitSpecTest, PriorityTakesIntegersOrNamedClasses) {
  for (const auto& [text, want] : std::vector<std::pair<std::string, int32_t>>{
           {"oncall", 200}, {"CI", 100}, {"scheduled", 0}, {"-5", -5}, {"7", 7}}) {
    absl::StatusOr<ParsedCommand> parsed =
        Parse({"submit"}, With(kSubmitBase, {{"priority", text}}));
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status();
    EXPECT_EQ(parsed->Options<SubmitOptions>().spec.priority(), want) << text;
  }
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"priority", "urgent"}}), "--priority");
}

TEST(TokensTest, CreateNeedsANameAndAKnownRole) {
  absl::StatusOr<ParsedCommand> parsed =
      Parse({"tokens", "create"}, {{"name", "ci"}, {"role", "Submitter"}});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->spec->Name(), "tokens create");
  EXPECT_EQ(parsed->Options<v1::CreateTokenRequest>().name(), "ci");
  EXPECT_EQ(parsed->Options<v1::CreateTokenRequest>().role(), v1::ROLE_SUBMITTER);

  ExpectUsageError({"tokens", "create"}, {{"role", "worker"}}, "--name");
  ExpectUsageError({"tokens", "create"}, {{"name", "ci"}}, "--role");
  ExpectUsageError({"tokens", "create"}, {{"name", "ci"}, {"role", "root"}}, "'root'");
  ExpectUsageError({"tokens", "create"}, {{"name", "ci"}, {"role", "worker"}, {"model", "x"}},
                   "--model");
}

TEST(TokensTest, RevokeTakesTheNameListTakesAll) {
  absl::StatusOr<ParsedCommand> parsed = Parse({"tokens", "revoke", "ci"}, {});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Options<v1::RevokeTokenRequest>().name(), "ci");
  ExpectUsageError({"tokens", "revoke"}, {}, "token NAME");

  parsed = Parse({"tokens", "list"}, {{"all", "true"}});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->Options<v1::ListTokensRequest>().include_revoked());
}

TEST(ModelsDeprecateTest, NeedsNameAndVersion) {
  absl::StatusOr<ParsedCommand> parsed =
      Parse({"models", "deprecate", "resnet50"}, {{"model_version", "v2"}});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Options<v1::DeprecateModelRequest>().name(), "resnet50");
  EXPECT_EQ(parsed->Options<v1::DeprecateModelRequest>().version(), "v2");
  ExpectUsageError({"models", "deprecate", "resnet50"}, {}, "--version");
}

TEST(SplitArgvTest, WordsAndFlagsInAnyOrder) {
  absl::StatusOr<CommandLine> line = SplitArgv({"vanguard", "--output", "json", "models", "get",
                                                "bert", "--version", "v7", "--orchestrator=o:1"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_THAT(line->words, ElementsAre("models", "get", "bert"));
  EXPECT_THAT(line->flags, UnorderedElementsAre(Pair("output", "json"), Pair("model_version", "v7"),
                                                Pair("orchestrator", "o:1")));
  EXPECT_FALSE(line->help_requested);
}

TEST(SplitArgvTest, BoolFlagsNegationsRepeatsAndDoubleDash) {
  absl::StatusOr<CommandLine> line =
      SplitArgv({"vanguard", "submit", "--wait", "--nowatch", "-confirm_best=false", "--model=a",
                 "--model=b", "--", "--not-a-flag"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_THAT(line->words, ElementsAre("submit", "--not-a-flag"));
  EXPECT_THAT(line->flags, UnorderedElementsAre(Pair("wait", "true"), Pair("watch", "false"),
                                                Pair("confirm_best", "false"), Pair("model", "b")));
}

TEST(SplitArgvTest, UnknownFlagIsAUsageErrorAndHelpIsNoted) {
  absl::StatusOr<CommandLine> line = SplitArgv({"vanguard", "get", "1", "--bogus"});
  ASSERT_FALSE(line.ok());
  EXPECT_THAT(std::string(line.status().message()), HasSubstr("unknown flag --bogus"));
  line = SplitArgv({"vanguard", "submit", "-h"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_TRUE(line->help_requested);
  EXPECT_THAT(line->words, ElementsAre("submit"));
}

TEST(SubmitSpecTest, GatesNeedAFollowedTest) {
  absl::StatusOr<ParsedCommand> parsed = Parse(
      {"submit"},
      With(kSubmitBase, {{"wait", "true"}, {"fail_below", "250"}, {"fail_if_regressed", "5%"}}));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const GateOptions& gates = parsed->Options<SubmitOptions>().gates;
  EXPECT_EQ(gates.fail_below_qps, 250);
  EXPECT_EQ(gates.fail_if_regressed_pct, 5);
  parsed = Parse({"submit"}, With(kSubmitBase, {{"watch", "true"}, {"fail_if_regressed", "7.5"}}));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Options<SubmitOptions>().gates.fail_if_regressed_pct, 7.5);
  EXPECT_FALSE(parsed->Options<SubmitOptions>().gates.fail_below_qps.has_value());

  ExpectUsageError({"submit"}, With(kSubmitBase, {{"fail_below", "250"}}),
                   "--fail_below: needs --wait or --watch");
  ExpectUsageError({"submit"}, With(kSubmitBase, {{"fail_if_regressed", "5%"}}),
                   "--fail_if_regressed: needs --wait or --watch");
  const GivenFlags wait = With(kSubmitBase, {{"wait", "true"}});
  ExpectUsageError({"submit"}, With(wait, {{"fail_below", "0"}}), "--fail_below: '0'");
  ExpectUsageError({"submit"}, With(wait, {{"fail_below", "lots"}}), "--fail_below: 'lots'");
  for (const char* bad : {"five", "-1%", "100%", "5%%", ""}) {
    ExpectUsageError({"submit"}, With(wait, {{"fail_if_regressed", bad}}),
                     "is not a percentage in [0, 100)");
  }
}

TEST(ParseCommandTest, RequiredFlagsAreNamedWithTheirChoices) {
  ExpectUsageError({"tokens", "create"}, {{"name", "ci"}},
                   "--role: is required (reader, submitter, worker or admin)");
  ExpectUsageError({"tokens", "create"}, {{"name", " "}, {"role", "admin"}},
                   "--name: must not be empty");
}

TEST(ParseCommandTest, HelpTakesACommandAndCompletionAShell) {
  absl::StatusOr<ParsedCommand> parsed = Parse({"help", "models", "register"}, {});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_NE(parsed->Options<const CommandSpec*>(), nullptr);
  EXPECT_EQ(parsed->Options<const CommandSpec*>()->Name(), "models register");
  ExpectUsageError({"help", "frobnicate"}, {}, "unknown command 'frobnicate'");
  ExpectUsageError({"help", "get", "7"}, {}, "unexpected argument '7'");
  parsed = Parse({"completion", "zsh"}, {});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Options<std::string>(), "zsh");
  ExpectUsageError({"completion", "fish"}, {}, "'fish' is not bash or zsh");
  ExpectUsageError({"completion"}, {}, "needs a shell");
}

}  // namespace
}  // namespace vanguard::cli
