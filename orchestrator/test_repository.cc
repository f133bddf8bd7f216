// The test queue, steps and results tables; see test_repository.h. Any thread may call.
#include "orchestrator/test_repository.h"

#include <cctype>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "orchestrator/proto_json.h"

namespace vanguard {
namespace {

// Columns every read of a test selects, from `tests t JOIN models m`.
constexpr char kTestColumns[] =
    " t.id, t.team, t.request_id, t.spec::text AS spec, t.state, t.attempt, t.error, t.lease_owner,"
    " t.cancel_requested, t.requeue_reason,"
    " (extract(epoch FROM t.created_at) * 1000000)::bigint AS created_us,"
    " (extract(epoch FROM t.started_at) * 1000000)::bigint AS started_us,"
    " (extract(epoch FROM t.finished_at) * 1000000)::bigint AS finished_us,"
    " t.model_id, m.spec::text AS model_spec,"
    " (extract(epoch FROM m.created_at) * 1000000)::bigint AS model_created_us ";

v1::TestState TestStateFromDb(const std::string& s) {
  if (s == "queued") return v1::TEST_STATE_QUEUED;
  if (s == "running") return v1::TEST_STATE_RUNNING;
  if (s == "succeeded") return v1::TEST_STATE_SUCCEEDED;
  if (s == "failed") return v1::TEST_STATE_FAILED;
  if (s == "cancelled") return v1::TEST_STATE_CANCELLED;
  return v1::TEST_STATE_UNSPECIFIED;
}

// "HEALTH_STATE_OVERLOADED" -> "overloaded", for the steps.health_state column.
std::string HealthStateToDb(v1::HealthState state) {
  std::string name = v1::HealthState_Name(state);
  constexpr absl::string_view kPrefix = "HEALTH_STATE_";
  if (name.rfind(kPrefix.data(), 0) == 0) name = name.substr(kPrefix.size());
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name.empty() ? "unspecified" : name;
}

// Builds a Test from a row with kTestColumns and a `result` column (jsonb text or NULL).
// `models` (optional) parses each model version's JSON once: versions are immutable.
absl::StatusOr<v1::Test> TestFromRow(const pqxx::row& row, ModelCache* models = nullptr) {
  v1::Test test;
  test.set_id(row["id"].as<int64_t>());
  test.set_team(row["team"].c_str());
  if (!row["request_id"].is_null()) test.set_request_id(row["request_id"].c_str());
  RETURN_IF_ERROR(ProtoFromJson(row["spec"].c_str(), test.mutable_spec()));
  test.set_state(TestStateFromDb(row["state"].c_str()));
  test.set_attempt(row["attempt"].as<int32_t>());
  if (!row["error"].is_null()) test.set_error(row["error"].c_str());
  if (!row["lease_owner"].is_null()) test.set_lease_owner(row["lease_owner"].c_str());
  test.set_cancel_requested(row["cancel_requested"].as<bool>());
  if (!row["requeue_reason"].is_null()) test.set_requeue_reason(row["requeue_reason"].c_str());
  *test.mutable_create_time() = TimestampFromMicros(row["created_us"].as<int64_t>());
  if (!row["started_us"].is_null()) {
    *test.mutable_start_time() = TimestampFromMicros(row["started_us"].as<int64_t>());
  }
  if (!row["finished_us"].is_null()) {
    *test.mutable_end_time() = TimestampFromMicros(row["finished_us"].as<int64_t>());
  }
  const int64_t model_id = row["model_id"].as<int64_t>();
  if (models == nullptr || !models->Lookup(model_id, test.mutable_model())) {
    RETURN_IF_ERROR(ProtoFromJson(row["model_spec"].c_str(), test.mutable_model()));
    *test.mutable_model()->mutable_create_time() =
        TimestampFromMicros(row["model_created_us"].as<int64_t>());
    if (models != nullptr) models->Insert(model_id, test.model());
  }
  test.mutable_model()->set_team(test.team());  // a test's team is its model's
  if (!row["result"].is_null()) {
    RETURN_IF_ERROR(ProtoFromJson(row["result"].c_str(), test.mutable_result()));
  }
  return test;
}

// A window stored before migration 0008 (no detail), rebuilt from the columns of
// step_windows; `row` has the columns LoadWindows selects.
v1::StepWindow WindowFromColumns(const pqxx::row& row) {
  v1::StepWindow w;
  w.set_index(row["window_index"].as<int32_t>());
  w.set_warmup(row["warmup"].as<bool>());
  if (!row["start_us"].is_null()) {
    *w.mutable_start_time() = TimestampFromMicros(row["start_us"].as<int64_t>());
  }
  if (!row["duration_s"].is_null()) {
    *w.mutable_duration() = DurationFromSeconds(row["duration_s"].as<double>());
  }
  w.set_offered_qps(row["offered_qps"].as<double>());
  w.set_achieved_qps(row["achieved_qps"].as<double>());
  const auto set = [&row](const char* column, auto setter) {
    if (!row[column].is_null()) setter(row[column].as<double>());
  };
  v1::LatencySummary* latency = w.mutable_latency();
  set("p50_ms", [&](double v) { latency->set_p50_ms(v); });
  set("p90_ms", [&](double v) { latency->set_p90_ms(v); });
  set("p99_ms", [&](double v) { latency->set_p99_ms(v); });
  set("max_ms", [&](double v) { latency->set_max_ms(v); });
  w.set_scheduled(row["scheduled"].as<int64_t>());
  w.set_completed(row["completed"].as<int64_t>());
  w.set_errors(row["errors"].as<int64_t>());
  w.set_timeouts(row["timeouts"].as<int64_t>());
  w.set_dropped(row["dropped"].as<int64_t>());
  w.set_censored(row["censored"].as<int64_t>());
  set("ttft_p99_ms", [&](double v) { w.mutable_ttft()->set_p99_ms(v); });
  set("inter_token_p99_ms", [&](double v) { w.mutable_inter_token()->set_p99_ms(v); });
  set("gpu_utilization", [&](double v) { w.set_gpu_utilization(v); });
  set("queue_depth", [&](double v) { w.set_queue_depth(v); });
  set("health_score", [&](double v) { w.set_health_score(v); });
  v1::HealthState state = v1::HEALTH_STATE_UNSPECIFIED;
  std::string name = absl::StrCat("HEALTH_STATE_", row["health_state"].c_str());
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (v1::HealthState_Parse(name, &state)) w.set_health_state(state);
  return w;
}

// Adds the stored windows of this attempt to test's steps (ordered by window index).
absl::Status LoadWindows(pqxx::transaction_base& txn, v1::Test* test) {
  if (test->steps_size() == 0) return absl::OkStatus();
  pqxx::result rows = txn.exec_params(
      "SELECT step_index, detail::text AS detail, window_index, warmup,"
      "   (extract(epoch FROM start_time) * 1000000)::bigint AS start_us, duration_s,"
      "   offered_qps, achieved_qps, p50_ms, p90_ms, p99_ms, max_ms, scheduled, completed,"
      "   errors, timeouts, dropped, censored, ttft_p99_ms, inter_token_p99_ms,"
      "   gpu_utilization, queue_depth, health_score, health_state"
      " FROM step_windows WHERE test_id = $1 AND attempt = $2"
      " ORDER BY step_index, window_index",
      test->id(), test->attempt());
  absl::flat_hash_map<int32_t, v1::Step*> steps;
  for (v1::Step& step : *test->mutable_steps()) steps[step.index()] = &step;
  for (const pqxx::row& row : rows) {
    auto it = steps.find(row["step_index"].as<int32_t>());
    if (it == steps.end()) continue;  // a window whose step was never stored
    v1::StepWindow* w = it->second->add_windows();
    if (row["detail"].is_null()) {
      *w = WindowFromColumns(row);
    } else {
      RETURN_IF_ERROR(ProtoFromJson(row["detail"].c_str(), w));
    }
  }
  return absl::OkStatus();
}

enum class WithWindows { kNo, kYes };

// The full test (steps of the current attempt included, with their windows if asked) as
// `txn` sees it.
absl::StatusOr<v1::Test> LoadTest(pqxx::transaction_base& txn, int64_t id,
                                  WithWindows windows = WithWindows::kNo) {
  pqxx::result rows =
      txn.exec_params(absl::StrCat("SELECT", kTestColumns,
                                   ", r.detail::text AS result"
                                   " FROM tests t JOIN models m ON m.id = t.model_id"
                                   " LEFT JOIN results r ON r.test_id = t.id"
                                   " WHERE t.id = $1"),
                      id);
  if (rows.empty()) return absl::NotFoundError(absl::StrCat("test ", id, " does not exist"));
  ASSIGN_OR_RETURN(v1::Test test, TestFromRow(rows[0]));
  pqxx::result steps = txn.exec_params(
      "SELECT detail::text AS detail, histogram FROM steps"
      " WHERE test_id = $1 AND attempt = $2 ORDER BY step_index",
      id, test.attempt());
  for (const pqxx::row& row : steps) {
    v1::Step* step = test.add_steps();
    RETURN_IF_ERROR(ProtoFromJson(row["detail"].c_str(), step));
    if (!row["histogram"].is_null()) {
      pqxx::binarystring histogram(row["histogram"]);
      step->set_latency_histogram(histogram.str());
    }
  }
  if (windows == WithWindows::kYes) RETURN_IF_ERROR(LoadWindows(txn, &test));
  return test;
}

// The token a fenced statement compares tests.lease_token_id with: 0 for none (token ids
// start at 1), so the statements need no nullable parameter.
int64_t TokenParam(LeaseToken token) { return token.value_or(0); }

// SQL condition: the call's token ($n) may act on the lease (see LeaseToken).
std::string TokenMayAct(int n) {
  return absl::StrCat("($", n, "::bigint = 0 OR lease_token_id IS NULL OR lease_token_id = $", n,
                      "::bigint)");
}

// Whether a call with `token` may act on a lease recorded with `holder` (NULL: none).
bool TokenMatches(LeaseToken token, const pqxx::field& holder) {
  return !token.has_value() || holder.is_null() || holder.as<int64_t>() == *token;
}

// Why a fenced write (heartbeat, step, complete, release) by `attempt` on test `id` was
// refused, in the order of the contract in test_repository.h.
absl::Status LeaseNotHeld(pqxx::transaction_base& txn, int64_t id, int32_t attempt,
                          const std::string* worker_id, LeaseToken token) {
  pqxx::result rows = txn.exec_params(
      "SELECT state, attempt, lease_owner, lease_token_id FROM tests WHERE id = $1", id);
  if (rows.empty()) return absl::NotFoundError(absl::StrCat("test ", id, " does not exist"));
  const pqxx::row& row = rows[0];
  const int32_t current = row["attempt"].as<int32_t>();
  const std::string state = row["state"].c_str();
  if (current != attempt) {
    return absl::FailedPreconditionError(absl::StrCat("lease lost: test ", id, " is at attempt ",
                                                      current, " (", state, "), not attempt ",
                                                      attempt));
  }
  if (!TokenMatches(token, row["lease_token_id"])) {
    return absl::PermissionDeniedError(absl::StrCat(
        "test ", id, " attempt ", attempt,
        " was leased by another worker token; only the token that leased a test may act on it"));
  }
  if (state != "running") {
    return absl::FailedPreconditionError(absl::StrCat("test ", id, " is ", state, ", not running"));
  }
  if (worker_id != nullptr) {
    const std::string owner = row["lease_owner"].is_null() ? "" : row["lease_owner"].c_str();
    if (owner != *worker_id) {
      return absl::FailedPreconditionError(absl::StrCat("lease lost: test ", id, " attempt ",
                                                        attempt, " is leased to ", owner, ", not ",
                                                        *worker_id));
    }
  }
  return absl::FailedPreconditionError(
      absl::StrCat("lease of test ", id, " attempt ", attempt, " is not held"));
}

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

}  // namespace

bool ModelCache::Lookup(int64_t model_id, v1::Model* model) {
  absl::MutexLock lock(&mu_);
  auto it = models_.find(model_id);
  if (it == models_.end()) return false;
  *model = it->second;
  return true;
}

void ModelCache::Insert(int64_t model_id, const v1::Model& model) {
  absl::MutexLock lock(&mu_);
  if (models_.size() >= kMaxModels) models_.clear();
  models_.emplace(model_id, model);
}

std::string TestStateToDb(v1::TestState state) {
  switch (state) {
    case v1::TEST_STATE_QUEUED:
      return "queued";
    case v1::TEST_STATE_RUNNING:
      return "running";
    case v1::TEST_STATE_SUCCEEDED:
      return "succeeded";
    case v1::TEST_STATE_FAILED:
      return "failed";
    case v1::TEST_STATE_CANCELLED:
      return "cancelled";
    default:
      return "";
  }
}

namespace {

// The team's test with this request_id, if any.
std::optional<int64_t> TestWithRequestId(pqxx::work& txn, const std::string& team,
                                         const std::string& request_id) {
  if (request_id.empty()) return std::nullopt;
  pqxx::result rows =
      txn.exec_params("SELECT id FROM tests WHERE team = $1 AND request_id = $2", team, request_id);
  if (rows.empty()) return std::nullopt;
  return rows[0][0].as<int64_t>();
}

// RESOURCE_EXHAUSTED when the team already has `max_unfinished` tests queued or running.
// Locks the team's quota row (creating it) until the transaction ends, so that concurrent
// submits of one team count one after the other.
absl::Status CheckUnfinished(pqxx::work& txn, const std::string& team, int max_unfinished) {
  txn.exec_params("INSERT INTO team_quotas (team) VALUES ($1) ON CONFLICT (team) DO NOTHING", team);
  txn.exec_params("SELECT 1 FROM team_quotas WHERE team = $1 FOR UPDATE", team);
  const int64_t unfinished =
      txn.exec_params1(
             "SELECT count(*) FROM tests WHERE team = $1 AND state IN ('queued', 'running')",
             team)[0]
          .as<int64_t>();
  if (unfinished < max_unfinished) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat("team ", team, "'s quota max_concurrent_tests refuses this test: the team has ",
                   unfinished, " tests queued or running, the limit is ", max_unfinished));
}

}  // namespace

absl::StatusOr<v1::Test> TestRepository::Submit(const v1::TestSpec& spec, int64_t model_id,
                                                const std::string& request_id,
                                                const SubmitOwner& owner) {
  ASSIGN_OR_RETURN(std::string json, ProtoToJson(spec));
  return pool_->Transact([&](pqxx::work& txn) -> absl::StatusOr<v1::Test> {
    // A repeated submit is answered before any quota: it queues nothing.
    if (std::optional<int64_t> earlier = TestWithRequestId(txn, owner.team, request_id)) {
      return LoadTest(txn, *earlier);
    }
    if (owner.max_unfinished > 0) {
      RETURN_IF_ERROR(CheckUnfinished(txn, owner.team, owner.max_unfinished));
    }
    pqxx::result inserted = txn.exec_params(
        "INSERT INTO tests (team, request_id, model_id, spec, priority, max_attempts, not_before)"
        " VALUES ($7, NULLIF($1::text, ''), $2, $3::jsonb, $4, $5,"
        "   CASE WHEN $6::bigint = 0 THEN now() ELSE to_timestamp($6::bigint / 1e6) END)"
        " ON CONFLICT (team, request_id) DO NOTHING RETURNING id",
        request_id, model_id, json, spec.priority(), spec.max_attempts(),
        spec.has_not_before()
            ? spec.not_before().seconds() * 1'000'000 + spec.not_before().nanos() / 1000
            : int64_t{0},
        owner.team);
    int64_t id;
    if (!inserted.empty()) {
      id = inserted[0][0].as<int64_t>();
    } else {
      // A concurrent submit with the same request_id won: that test is the answer.
      id = txn.exec_params1("SELECT id FROM tests WHERE team = $1 AND request_id = $2", owner.team,
                            request_id)[0]
               .as<int64_t>();
    }
    return LoadTest(txn, id);
  });
}

absl::StatusOr<std::string> TestRepository::TeamOf(int64_t id) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<std::string> {
    pqxx::nontransaction txn(conn);
    pqxx::result rows = txn.exec_params("SELECT team FROM tests WHERE id = $1", id);
    if (rows.empty()) return absl::NotFoundError(absl::StrCat("test ", id, " does not exist"));
    return std::string(rows[0][0].c_str());
  });
}

absl::StatusOr<v1::Test> TestRepository::Get(int64_t id, const GetOptions& options) {
  // Repeatable read: the test row, its steps, their windows and its result from one
  // snapshot.
  return pool_->Transact<pqxx::repeatable_read>([&](pqxx::transaction<pqxx::repeatable_read>& txn) {
    return LoadTest(txn, id, options.windows ? WithWindows::kYes : WithWindows::kNo);
  });
}

absl::StatusOr<std::vector<v1::Test>> TestRepository::List(const ListFilter& filter) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<std::vector<v1::Test>> {
    pqxx::nontransaction txn(conn);
    pqxx::result rows =
        txn.exec_params(absl::StrCat("SELECT", kTestColumns,
                                     ", r.detail::text AS result"
                                     " FROM tests t JOIN models m ON m.id = t.model_id"
                                     " LEFT JOIN results r ON r.test_id = t.id"
                                     " WHERE ($1::text = '' OR t.state = $1::text)"
                                     "   AND ($2::text = '' OR m.name = $2::text)"
                                     " ORDER BY t.created_at DESC, t.id DESC LIMIT $3"),
                        TestStateToDb(filter.state), filter.model, filter.limit);
    std::vector<v1::Test> tests;
    tests.reserve(rows.size());
    for (const pqxx::row& row : rows) {
      ASSIGN_OR_RETURN(v1::Test test, TestFromRow(row));
      tests.push_back(std::move(test));
    }
    return tests;
  });
}

absl::StatusOr<v1::Test> TestRepository::Cancel(int64_t id) {
  return pool_->Transact([&](pqxx::work& txn) -> absl::StatusOr<v1::Test> {
    // SET expressions see the row as it was: a queued test ends now, a running one is
    // flagged for its worker.
    pqxx::result updated = txn.exec_params(
        "UPDATE tests SET"
        "   state = CASE WHEN state = 'queued' THEN 'cancelled' ELSE state END,"
        "   finished_at = CASE WHEN state = 'queued' THEN now() ELSE finished_at END,"
        "   cancel_requested = true"
        " WHERE id = $1 AND state IN ('queued', 'running') RETURNING id",
        id);
    if (updated.empty()) {
      pqxx::result rows = txn.exec_params("SELECT state FROM tests WHERE id = $1", id);
      if (rows.empty()) return absl::NotFoundError(absl::StrCat("test ", id, " does not exist"));
      return absl::FailedPreconditionError(
          absl::StrCat("test ", id, " already ", rows[0][0].c_str(), "; nothing to cancel"));
    }
    return LoadTest(txn, id);
  });
}

const std::string& TestRepository::LeaseSql() {
  // One statement: pick and lock the best ready row (skipping rows other leasers hold),
  // then take it and return everything the worker needs. The attempt bump is the fencing
  // token. Run on its own (autocommit), so a lease is one round trip to the database.
  // The steps the previous attempt completed (those before its first interrupted step, if
  // any; they include what it resumed from) move to the new attempt with their windows, in
  // the same statement, so the test's steps are listed once and a lost lease reply or a
  // crash between two leases loses none. Step.attempt in `detail` keeps who measured each.
  static const std::string* const sql = new std::string(absl::StrCat(
      "WITH leased AS ("
      "  UPDATE tests SET state = 'running', lease_owner = $1,"
      "    lease_token_id = NULLIF($3::bigint, 0),"
      "    lease_expires_at = now() + make_interval(secs => $2::float8),"
      "    attempt = attempt + 1, started_at = now()"
      "  WHERE id = (SELECT id FROM tests"
      "              WHERE state = 'queued' AND not_before <= now()"
      "              ORDER BY priority DESC, created_at, id"
      "              LIMIT 1 FOR UPDATE SKIP LOCKED)"
      "  RETURNING *),"
      " resumed AS ("
      "  UPDATE steps s SET attempt = l.attempt FROM leased l"
      "  WHERE s.test_id = l.id AND s.attempt = l.attempt - 1"
      "    AND s.step_index < coalesce((SELECT min(i.step_index) FROM steps i"
      "        WHERE i.test_id = l.id AND i.attempt = l.attempt - 1"
      "          AND coalesce((i.detail->>'interrupted')::boolean, false)), 2147483647)"
      "  RETURNING s.test_id, s.attempt, s.step_index),"
      " resumed_windows AS ("
      "  UPDATE step_windows w SET attempt = r.attempt FROM resumed r"
      "  WHERE w.test_id = r.test_id AND w.attempt = r.attempt - 1"
      "    AND w.step_index = r.step_index)"
      " SELECT",
      kTestColumns, ", NULL::text AS result FROM leased t JOIN models m ON m.id = t.model_id"));
  return *sql;
}

absl::StatusOr<std::optional<v1::Test>> TestRepository::Lease(const std::string& worker_id,
                                                              absl::Duration lease_duration,
                                                              LeaseToken token) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<std::optional<v1::Test>> {
    conn.prepare("vanguard_lease", LeaseSql());  // declared once per connection
    pqxx::nontransaction txn(conn);
    pqxx::result rows =
        txn.exec_prepared("vanguard_lease", worker_id, Seconds(lease_duration), TokenParam(token));
    if (rows.empty()) return std::optional<v1::Test>();
    ASSIGN_OR_RETURN(v1::Test test, TestFromRow(rows[0], &model_cache_));
    if (test.attempt() > 1) {
      // The steps it resumes from (moved to this attempt by the lease, now committed; only
      // this lease's holder may add to them), without histograms and windows.
      pqxx::result steps = txn.exec_params(
          "SELECT detail::text FROM steps WHERE test_id = $1 AND attempt = $2"
          " ORDER BY step_index",
          test.id(), test.attempt());
      for (const pqxx::row& row : steps)
        RETURN_IF_ERROR(ProtoFromJson(row[0].c_str(), test.add_steps()));
    }
    return std::optional<v1::Test>(std::move(test));
  });
}

absl::StatusOr<bool> TestRepository::Heartbeat(int64_t test_id, int32_t attempt,
                                               const std::string& worker_id,
                                               absl::Duration lease_duration, LeaseToken token) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<bool> {
    // Touches only lease_expires_at (not indexed), so the update stays HOT. One statement,
    // autocommit, prepared: one round trip.
    static const std::string* const sql = new std::string(
        absl::StrCat("UPDATE tests SET lease_expires_at = now() + make_interval(secs => $4::float8)"
                     " WHERE id = $1 AND attempt = $2 AND lease_owner = $3 AND state = 'running'"
                     "   AND ",
                     TokenMayAct(5), " RETURNING cancel_requested"));
    conn.prepare("vanguard_heartbeat", *sql);
    pqxx::nontransaction txn(conn);
    pqxx::result rows = txn.exec_prepared("vanguard_heartbeat", test_id, attempt, worker_id,
                                          Seconds(lease_duration), TokenParam(token));
    if (rows.empty()) return LeaseNotHeld(txn, test_id, attempt, &worker_id, token);
    return rows[0][0].as<bool>();
  });
}

namespace {

// ReportStep's one statement (autocommit, prepared): the fence row lock (FOR SHARE) keeps the
// test from being completed or re-leased while the step and its windows are written. $1 test,
// $2 attempt, $3-$19 the step's columns, $20 histogram, $21 detail JSON, $22 windows JSON,
// $23 the lease token.
const std::string& ReportStepSql() {
  static const std::string* const sql = new std::string(absl::StrCat(
      "WITH fence AS ("
      "  SELECT id FROM tests WHERE id = $1 AND attempt = $2 AND state = 'running' AND ",
      TokenMayAct(23),
      "  FOR SHARE),"
      " step AS ("
      " INSERT INTO steps (test_id, attempt, step_index, target_qps, achieved_qps, p50_ms,"
      "   p90_ms, p99_ms, p999_ms, max_ms, error_rate, scheduled, completed, errors,"
      "   timeouts, dropped, health_state, passed, client_valid, histogram, detail)"
      " SELECT id, $2::integer, $3::integer, $4::float8, $5::float8, $6::float8, $7::float8,"
      "   $8::float8, $9::float8, $10::float8, $11::float8, $12::bigint, $13::bigint,"
      "   $14::bigint, $15::bigint, $16::bigint, $17::text, $18::boolean, $19::boolean,"
      "   NULLIF($20::bytea, ''::bytea), $21::jsonb"
      " FROM fence"
      " ON CONFLICT (test_id, attempt, step_index) DO UPDATE SET"
      "   target_qps = EXCLUDED.target_qps, achieved_qps = EXCLUDED.achieved_qps,"
      "   p50_ms = EXCLUDED.p50_ms, p90_ms = EXCLUDED.p90_ms, p99_ms = EXCLUDED.p99_ms,"
      "   p999_ms = EXCLUDED.p999_ms, max_ms = EXCLUDED.max_ms,"
      "   error_rate = EXCLUDED.error_rate, scheduled = EXCLUDED.scheduled,"
      "   completed = EXCLUDED.completed, errors = EXCLUDED.errors,"
      "   timeouts = EXCLUDED.timeouts, dropped = EXCLUDED.dropped,"
      "   health_state = EXCLUDED.health_state, passed = EXCLUDED.passed,"
      "   client_valid = EXCLUDED.client_valid, histogram = EXCLUDED.histogram,"
      "   detail = EXCLUDED.detail, recorded_at = now()"
      " RETURNING test_id, attempt, step_index),"
      // Windows in proto JSON: int64 as strings, enums by name, Duration as "1.5s".
      " windows AS ("
      " INSERT INTO step_windows (test_id, attempt, step_index, window_index, warmup,"
      "   start_time, duration_s, offered_qps, achieved_qps, p50_ms, p90_ms, p99_ms, max_ms,"
      "   scheduled, completed, errors, timeouts, dropped, censored, ttft_p99_ms,"
      "   inter_token_p99_ms, gpu_utilization, queue_depth, health_score, health_state,"
      "   detail)"
      " SELECT s.test_id, s.attempt, s.step_index, coalesce((w->>'index')::integer, 0),"
      "   coalesce((w->>'warmup')::boolean, false), (w->>'start_time')::timestamptz,"
      "   rtrim(w->>'duration', 's')::float8,"
      "   coalesce((w->>'offered_qps')::float8, 0), coalesce((w->>'achieved_qps')::float8, 0),"
      "   (w#>>'{latency,p50_ms}')::float8, (w#>>'{latency,p90_ms}')::float8,"
      "   (w#>>'{latency,p99_ms}')::float8, (w#>>'{latency,max_ms}')::float8,"
      "   coalesce((w->>'scheduled')::bigint, 0), coalesce((w->>'completed')::bigint, 0),"
      "   coalesce((w->>'errors')::bigint, 0), coalesce((w->>'timeouts')::bigint, 0),"
      "   coalesce((w->>'dropped')::bigint, 0), coalesce((w->>'censored')::bigint, 0),"
      "   (w#>>'{ttft,p99_ms}')::float8, (w#>>'{inter_token,p99_ms}')::float8,"
      "   (w->>'gpu_utilization')::float8, (w->>'queue_depth')::float8,"
      "   (w->>'health_score')::float8,"
      "   lower(replace(coalesce(w->>'health_state', 'HEALTH_STATE_UNSPECIFIED'),"
      "                 'HEALTH_STATE_', '')),"
      "   w"
      " FROM step s, jsonb_array_elements(coalesce($22::jsonb->'windows', '[]'::jsonb)) w"
      " ON CONFLICT (test_id, attempt, step_index, window_index) DO UPDATE SET"
      "   warmup = EXCLUDED.warmup, start_time = EXCLUDED.start_time,"
      "   duration_s = EXCLUDED.duration_s, offered_qps = EXCLUDED.offered_qps,"
      "   achieved_qps = EXCLUDED.achieved_qps, p50_ms = EXCLUDED.p50_ms,"
      "   p90_ms = EXCLUDED.p90_ms, p99_ms = EXCLUDED.p99_ms, max_ms = EXCLUDED.max_ms,"
      "   scheduled = EXCLUDED.scheduled, completed = EXCLUDED.completed,"
      "   errors = EXCLUDED.errors, timeouts = EXCLUDED.timeouts,"
      "   dropped = EXCLUDED.dropped, censored = EXCLUDED.censored,"
      "   ttft_p99_ms = EXCLUDED.ttft_p99_ms, inter_token_p99_ms = EXCLUDED.inter_token_p99_ms,"
      "   gpu_utilization = EXCLUDED.gpu_utilization, queue_depth = EXCLUDED.queue_depth,"
      "   health_score = EXCLUDED.health_score, health_state = EXCLUDED.health_state,"
      "   detail = EXCLUDED.detail, recorded_at = now())"
      " SELECT step_index FROM step"));
  return *sql;
}

}  // namespace

absl::Status TestRepository::ReportStep(int64_t test_id, int32_t attempt, const v1::Step& step,
                                        LeaseToken token) {
  v1::Step detail = step;
  detail.set_attempt(attempt);
  detail.clear_latency_histogram();  // kept in its own bytea column, not base64 in jsonb
  detail.clear_windows();            // kept in step_windows
  ASSIGN_OR_RETURN(std::string json, ProtoToJson(detail));
  std::string windows_json = "{}";
  if (step.windows_size() > 0) {
    v1::Step windows;
    *windows.mutable_windows() = step.windows();
    ASSIGN_OR_RETURN(windows_json, ProtoToJson(windows));
  }
  const pqxx::binarystring histogram(step.latency_histogram());
  return pool_->Run([&](pqxx::connection& conn) -> absl::Status {
    conn.prepare("vanguard_report_step", ReportStepSql());
    pqxx::nontransaction txn(conn);
    pqxx::result rows = txn.exec_prepared(
        "vanguard_report_step", test_id, attempt, step.index(), step.target_qps(),
        step.achieved_qps(), step.latency().p50_ms(), step.latency().p90_ms(),
        step.latency().p99_ms(), step.latency().p999_ms(), step.latency().max_ms(),
        step.error_rate(), step.scheduled(), step.completed(), step.errors(), step.timeouts(),
        step.dropped(), HealthStateToDb(step.health_state()), step.passed(), step.client_valid(),
        histogram, json, windows_json, TokenParam(token));
    if (rows.empty()) return LeaseNotHeld(txn, test_id, attempt, nullptr, token);
    return absl::OkStatus();
  });
}

absl::Status TestRepository::ReportProgress(int64_t test_id, int32_t attempt,
                                            const std::string& worker_id,
                                            const v1::TestProgress& progress, LeaseToken token) {
  v1::TestProgress detail = progress;
  detail.set_attempt(attempt);
  detail.clear_windows();  // kept in their own column, merged with the step's earlier ones
  detail.clear_update_time();
  ASSIGN_OR_RETURN(std::string detail_json, ProtoToJson(detail));
  v1::TestProgress batch;
  *batch.mutable_windows() = progress.windows();
  ASSIGN_OR_RETURN(std::string batch_json, ProtoToJson(batch));
  const double error_rate =
      progress.step_scheduled() > 0
          ? static_cast<double>(progress.step_errors()) / progress.step_scheduled()
          : -1;
  return pool_->Run([&](pqxx::connection& conn) -> absl::Status {
    // One statement (autocommit, prepared). The fence locks the test row (FOR SHARE) so the
    // test cannot complete (which deletes the row) while it is written. The step's earlier
    // windows are kept when the attempt and step are the same; the latest 60 stay. Proto
    // JSON omits zeros, hence the coalesce on fields of a window that exists.
    static const std::string* const sql = new std::string(absl::StrCat(
        "WITH fence AS ("
        "  SELECT id FROM tests WHERE id = $1 AND attempt = $2 AND lease_owner = $3"
        "    AND state = 'running' AND ",
        TokenMayAct(14),
        "  FOR SHARE),"
        " prev AS ("
        "  SELECT windows FROM test_progress"
        "  WHERE test_id = $1 AND attempt = $2 AND step_index = $4),"
        " merged AS ("
        "  SELECT coalesce(jsonb_agg(e.w ORDER BY e.o), '[]'::jsonb) AS windows FROM ("
        "    SELECT x.w, x.o FROM jsonb_array_elements("
        "        coalesce((SELECT windows FROM prev), '[]'::jsonb)"
        "        || coalesce($13::jsonb->'windows', '[]'::jsonb)) WITH ORDINALITY AS x(w, o)"
        "    ORDER BY x.o DESC LIMIT 60) e),"
        " latest AS (SELECT windows -> -1 AS w FROM merged)"
        " INSERT INTO test_progress (test_id, attempt, step_index, offered_qps, achieved_qps,"
        "   p50_ms, p99_ms, settling, error_rate, health_state, elapsed_s, step_elapsed_s,"
        "   step_remaining_s, test_remaining_s, detail, windows, updated_at)"
        " SELECT f.id, $2::integer, $4::integer, $5::float8,"
        "   CASE WHEN l.w IS NOT NULL THEN coalesce((l.w->>'achieved_qps')::float8, 0) END,"
        "   CASE WHEN l.w IS NOT NULL THEN coalesce((l.w#>>'{latency,p50_ms}')::float8, 0) END,"
        "   CASE WHEN l.w IS NOT NULL THEN coalesce((l.w#>>'{latency,p99_ms}')::float8, 0) END,"
        "   CASE WHEN l.w IS NOT NULL THEN coalesce((l.w->>'warmup')::boolean, false) END,"
        "   NULLIF($6::float8, -1), $7::text, $8::float8, $9::float8, $10::float8,"
        "   NULLIF($11::float8, -1), $12::jsonb, m.windows, now()"
        " FROM fence f, merged m, latest l"
        " ON CONFLICT (test_id) DO UPDATE SET"
        "   attempt = EXCLUDED.attempt, step_index = EXCLUDED.step_index,"
        "   offered_qps = EXCLUDED.offered_qps, achieved_qps = EXCLUDED.achieved_qps,"
        "   p50_ms = EXCLUDED.p50_ms, p99_ms = EXCLUDED.p99_ms, settling = EXCLUDED.settling,"
        "   error_rate = EXCLUDED.error_rate, health_state = EXCLUDED.health_state,"
        "   elapsed_s = EXCLUDED.elapsed_s, step_elapsed_s = EXCLUDED.step_elapsed_s,"
        "   step_remaining_s = EXCLUDED.step_remaining_s,"
        "   test_remaining_s = EXCLUDED.test_remaining_s, detail = EXCLUDED.detail,"
        "   windows = EXCLUDED.windows, updated_at = EXCLUDED.updated_at"
        " RETURNING test_id"));
    conn.prepare("vanguard_report_progress", *sql);
    pqxx::nontransaction txn(conn);
    pqxx::result rows = txn.exec_prepared(
        "vanguard_report_progress", test_id, attempt, worker_id, progress.step_index(),
        progress.offered_qps(), error_rate, HealthStateToDb(progress.health_state()),
        DurationToSeconds(progress.elapsed()), DurationToSeconds(progress.step_elapsed()),
        DurationToSeconds(progress.step_remaining()),
        progress.has_test_remaining() ? DurationToSeconds(progress.test_remaining()) : -1.0,
        detail_json, batch_json, TokenParam(token));
    if (rows.empty()) return LeaseNotHeld(txn, test_id, attempt, &worker_id, token);
    return absl::OkStatus();
  });
}

absl::StatusOr<std::optional<v1::TestProgress>> TestRepository::LatestProgress(int64_t test_id,
                                                                               absl::Time after) {
  const int64_t after_us = after == absl::InfinitePast() ? std::numeric_limits<int64_t>::min()
                                                         : absl::ToUnixMicros(after);
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<std::optional<v1::TestProgress>> {
    pqxx::nontransaction txn(conn);
    pqxx::result rows = txn.exec_params(
        "SELECT detail::text AS detail, jsonb_build_object('windows', windows)::text AS"
        "   windows, (extract(epoch FROM updated_at) * 1000000)::bigint AS updated_us"
        " FROM test_progress"
        " WHERE test_id = $1 AND (extract(epoch FROM updated_at) * 1000000)::bigint > $2",
        test_id, after_us);
    if (rows.empty()) return std::optional<v1::TestProgress>();
    v1::TestProgress progress, windows;
    RETURN_IF_ERROR(ProtoFromJson(rows[0]["detail"].c_str(), &progress));
    RETURN_IF_ERROR(ProtoFromJson(rows[0]["windows"].c_str(), &windows));
    *progress.mutable_windows() = std::move(*windows.mutable_windows());
    *progress.mutable_update_time() = TimestampFromMicros(rows[0]["updated_us"].as<int64_t>());
    return std::optional<v1::TestProgress>(std::move(progress));
  });
}

absl::StatusOr<v1::Test> TestRepository::Complete(int64_t test_id, int32_t attempt,
                                                  const std::optional<v1::TestResult>& result,
                                                  const std::string& error, LeaseToken token) {
  return pool_->Transact([&](pqxx::work& txn) -> absl::StatusOr<v1::Test> {
    pqxx::result rows = txn.exec_params(
        absl::StrCat("SELECT cancel_requested,"
                     "   extract(epoch FROM now() - started_at)::float8 AS elapsed_s"
                     " FROM tests WHERE id = $1 AND attempt = $2 AND state = 'running' AND ",
                     TokenMayAct(3), " FOR UPDATE"),
        test_id, attempt, TokenParam(token));
    if (rows.empty()) return LeaseNotHeld(txn, test_id, attempt, nullptr, token);
    const bool cancel_requested = rows[0]["cancel_requested"].as<bool>();
    const double elapsed_s =
        rows[0]["elapsed_s"].is_null() ? 0.0 : rows[0]["elapsed_s"].as<double>();

    if (result.has_value()) {
      v1::TestResult stored = *result;
      if (stored.steps_taken() == 0) {
        stored.set_steps_taken(txn.exec_params1("SELECT count(*) FROM steps"
                                                " WHERE test_id = $1 AND attempt = $2",
                                                test_id, attempt)[0]
                                   .as<int32_t>());
      }
      if (!stored.has_test_duration()) {
        *stored.mutable_test_duration() = DurationFromSeconds(elapsed_s);
      }
      ASSIGN_OR_RETURN(std::string json, ProtoToJson(stored));
      txn.exec_params(
          "INSERT INTO results (test_id, model_id, max_sustainable_qps, converged,"
          "   confidence_low_qps, confidence_high_qps, steps_taken, test_seconds, detail)"
          " SELECT id, model_id, $2::float8, $3::boolean, NULLIF($4::float8, 0),"
          "   NULLIF($5::float8, 0), $6::integer, $7::float8, $8::jsonb"
          " FROM tests WHERE id = $1"
          " ON CONFLICT (test_id) DO UPDATE SET"
          "   max_sustainable_qps = EXCLUDED.max_sustainable_qps,"
          "   converged = EXCLUDED.converged,"
          "   confidence_low_qps = EXCLUDED.confidence_low_qps,"
          "   confidence_high_qps = EXCLUDED.confidence_high_qps,"
          "   steps_taken = EXCLUDED.steps_taken, test_seconds = EXCLUDED.test_seconds,"
          "   detail = EXCLUDED.detail, recorded_at = now()",
          test_id, stored.max_sustainable_qps(), stored.converged(), stored.confidence_low_qps(),
          stored.confidence_high_qps(), stored.steps_taken(),
          DurationToSeconds(stored.test_duration()), json);
    }
    const char* state = cancel_requested     ? "cancelled"
                        : result.has_value() ? "succeeded"
                                             : "failed";
    txn.exec_params(
        "UPDATE tests SET state = $2, error = NULLIF($3::text, ''), finished_at = now(),"
        "   lease_expires_at = NULL"
        " WHERE id = $1",
        test_id, state, error);
    txn.exec_params("DELETE FROM test_progress WHERE test_id = $1", test_id);
    return LoadTest(txn, test_id);
  });
}

absl::StatusOr<v1::Test> TestRepository::Release(int64_t test_id, int32_t attempt,
                                                 const std::string& worker_id,
                                                 const std::string& reason, LeaseToken token) {
  // Why the release over the limit ($6) fails the test; `releases` counts those before it.
  constexpr char kOverLimit[] =
      "'lease given back ' || (releases + 1) || ' times; a test may be given back '"
      " || $6::integer || ' times (workers kept stopping while running it); last: ' || $4";
  return pool_->Transact([&](pqxx::work& txn) -> absl::StatusOr<v1::Test> {
    // Mirrors the reaper's requeue (lease_reaper.cc), minus its backoff: the worker left in
    // good order, so the test may run again at once. max_attempts grows by one so that the
    // release does not use up an attempt (attempt stays the fencing token and only grows);
    // `releases` bounds how often that happens. The SET expressions all see the row as it
    // was before the update.
    constexpr char kEnds[] = "(cancel_requested OR releases >= $6::integer)";
    pqxx::result rows = txn.exec_params(
        absl::StrCat(
            "UPDATE tests SET"
            "   state = CASE WHEN cancel_requested THEN 'cancelled'"
            "                WHEN releases >= $6::integer THEN 'failed' ELSE 'queued' END,"
            "   error = CASE WHEN cancel_requested"
            "                THEN 'cancelled; its worker released the lease'"
            "                WHEN releases >= $6::integer THEN ",
            kOverLimit, " ELSE error END,", "   finished_at = CASE WHEN ", kEnds,
            " THEN now() ELSE NULL END,", "   not_before = CASE WHEN ", kEnds,
            " THEN not_before ELSE now() END,", "   max_attempts = CASE WHEN ", kEnds,
            " THEN max_attempts ELSE max_attempts + 1 END,", "   lease_owner = CASE WHEN ", kEnds,
            " THEN lease_owner ELSE NULL END,", "   requeue_reason = CASE WHEN ", kEnds,
            " THEN requeue_reason ELSE $4 END,",
            "   releases = releases + 1,"
            "   lease_expires_at = NULL"
            " WHERE id = $1 AND attempt = $2 AND lease_owner = $3 AND state = 'running' AND ",
            TokenMayAct(5), " RETURNING id"),
        test_id, attempt, worker_id, reason, TokenParam(token), kMaxLeaseReleases);
    if (rows.empty()) return LeaseNotHeld(txn, test_id, attempt, &worker_id, token);
    txn.exec_params("DELETE FROM test_progress WHERE test_id = $1", test_id);
    return LoadTest(txn, test_id);
  });
}

}  // namespace vanguard
