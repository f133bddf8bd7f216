// Test schedules; see schedule_repository.h. Any thread may call.
#include "orchestrator/schedule_repository.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "orchestrator/cron_expression.h"
#include "orchestrator/lease_reaper.h"
#include "orchestrator/proto_json.h"

namespace vanguard {
namespace {

constexpr char kSelectSchedule[] =
    "SELECT s.id, s.model, s.name, coalesce(o.team, 'default') AS team, s.spec::text AS spec,"
    "       s.on_new_version, s.interval_seconds, s.cron,"
    "       (extract(epoch FROM s.next_run_at) * 1000000)::bigint AS next_run_us,"
    "       coalesce(s.last_test_id, 0) AS last_test_id,"
    "       (extract(epoch FROM s.created_at) * 1000000)::bigint AS created_us,"
    "       (extract(epoch FROM s.updated_at) * 1000000)::bigint AS updated_us"
    "  FROM test_schedules s LEFT JOIN model_owners o ON o.name = s.model ";

int64_t Micros(absl::Time t) { return absl::ToUnixMicros(t); }

absl::StatusOr<v1::TestSchedule> ScheduleFromRow(const pqxx::row& row) {
  v1::TestSchedule s;
  s.set_id(row["id"].as<int64_t>());
  s.set_model(row["model"].c_str());
  s.set_name(row["name"].c_str());
  s.set_team(row["team"].c_str());
  RETURN_IF_ERROR(ProtoFromJson(row["spec"].c_str(), s.mutable_spec()));
  s.set_on_new_version(row["on_new_version"].as<bool>());
  if (!row["interval_seconds"].is_null()) {
    *s.mutable_interval() = DurationFromSeconds(row["interval_seconds"].as<double>());
  } else if (!row["cron"].is_null()) {
    s.set_cron(row["cron"].c_str());
  }
  if (!row["next_run_us"].is_null()) {
    *s.mutable_next_run_time() = TimestampFromMicros(row["next_run_us"].as<int64_t>());
  }
  s.set_last_test_id(row["last_test_id"].as<int64_t>());
  *s.mutable_create_time() = TimestampFromMicros(row["created_us"].as<int64_t>());
  *s.mutable_update_time() = TimestampFromMicros(row["updated_us"].as<int64_t>());
  return s;
}

// When a schedule set at `now` is first due: now + interval, the cron expression's next
// minute, or never (on_new_version only). INVALID_ARGUMENT for a cron expression that does
// not parse.
absl::StatusOr<std::optional<int64_t>> FirstRunMicros(const v1::TestSchedule& schedule,
                                                      absl::Time now) {
  if (schedule.repeat_case() == v1::TestSchedule::kCron) {
    ASSIGN_OR_RETURN(CronExpression cron, CronExpression::Parse(schedule.cron()));
    return Micros(cron.NextAfter(now));
  }
  if (schedule.has_interval() && DurationToSeconds(schedule.interval()) > 0) {
    return Micros(now + absl::Seconds(DurationToSeconds(schedule.interval())));
  }
  return std::nullopt;
}

// When a due schedule whose pass ran at `now` is next due: one interval later, or the cron
// expression's next minute after `now` (runs missed while no orchestrator ran are not made
// up). A cron expression written with SQL that does not parse sets `error`, and the schedule
// is tried again in a day.
absl::Time NextRun(const pqxx::row& due, absl::Time now, std::string& error) {
  if (due["cron"].is_null()) return now + absl::Seconds(due["interval_seconds"].as<double>());
  absl::StatusOr<CronExpression> cron = CronExpression::Parse(due["cron"].c_str());
  if (cron.ok()) return cron->NextAfter(now);
  error = absl::StrCat("schedule ", due["id"].as<int64_t>(), ": ", cron.status().message(),
                       "; retried in a day");
  return now + absl::Hours(24);
}

}  // namespace

absl::StatusOr<v1::TestSchedule> ScheduleRepository::Set(const v1::TestSchedule& schedule,
                                                         const std::string& created_by,
                                                         absl::Time now) {
  ASSIGN_OR_RETURN(std::string spec, ProtoToJson(schedule.spec()));
  ASSIGN_OR_RETURN(const std::optional<int64_t> first_run_us, FirstRunMicros(schedule, now));
  const std::optional<double> interval =
      schedule.has_interval() && DurationToSeconds(schedule.interval()) > 0
          ? std::optional<double>(DurationToSeconds(schedule.interval()))
          : std::nullopt;
  const std::optional<std::string> cron =
      schedule.repeat_case() == v1::TestSchedule::kCron
          ? std::optional<std::string>(CronExpression::Parse(schedule.cron())->text())
          : std::nullopt;
  return pool_->Transact([&](pqxx::work& txn) -> absl::StatusOr<v1::TestSchedule> {
    const int64_t id =
        txn.exec_params1(
               "INSERT INTO test_schedules AS s (model, name, spec, on_new_version,"
               "   interval_seconds, cron, next_run_at, created_by)"
               " VALUES ($1, $2, $3::jsonb, $4, $5::float8, $6::text,"
               "   to_timestamp($7::bigint / 1e6), $8)"
               " ON CONFLICT (model, name) DO UPDATE SET"
               "   spec = EXCLUDED.spec, on_new_version = EXCLUDED.on_new_version,"
               "   interval_seconds = EXCLUDED.interval_seconds, cron = EXCLUDED.cron,"
               "   next_run_at = EXCLUDED.next_run_at, updated_at = now()"
               " RETURNING id",
               schedule.model(), schedule.name(), spec, schedule.on_new_version(), interval, cron,
               first_run_us, created_by)[0]
            .as<int64_t>();
    return ScheduleFromRow(txn.exec_params1(absl::StrCat(kSelectSchedule, "WHERE s.id = $1"), id));
  });
}

absl::StatusOr<v1::TestSchedule> ScheduleRepository::Get(int64_t id) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<v1::TestSchedule> {
    pqxx::nontransaction txn(conn);
    pqxx::result rows = txn.exec_params(absl::StrCat(kSelectSchedule, "WHERE s.id = $1"), id);
    if (rows.empty()) return absl::NotFoundError(absl::StrCat("schedule ", id, " does not exist"));
    return ScheduleFromRow(rows[0]);
  });
}

absl::StatusOr<std::vector<v1::TestSchedule>> ScheduleRepository::List(const std::string& model,
                                                                       const std::string& team) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<std::vector<v1::TestSchedule>> {
    pqxx::nontransaction txn(conn);
    pqxx::result rows = txn.exec_params(
        absl::StrCat(kSelectSchedule,
                     "WHERE ($1::text = '' OR s.model = $1::text)"
                     "   AND ($2::text = '' OR coalesce(o.team, 'default') = $2::text)"
                     " ORDER BY s.model, s.name"),
        model, team);
    std::vector<v1::TestSchedule> schedules;
    schedules.reserve(rows.size());
    for (const pqxx::row& row : rows) {
      ASSIGN_OR_RETURN(v1::TestSchedule s, ScheduleFromRow(row));
      schedules.push_back(std::move(s));
    }
    return schedules;
  });
}

absl::Status ScheduleRepository::Delete(int64_t id) {
  absl::StatusOr<bool> deleted = pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<bool> {
    pqxx::nontransaction txn(conn);
    return txn.exec_params("DELETE FROM test_schedules WHERE id = $1", id).affected_rows() > 0;
  });
  if (!deleted.ok()) return deleted.status();
  if (!*deleted) return absl::NotFoundError(absl::StrCat("schedule ", id, " does not exist"));
  return absl::OkStatus();
}

absl::StatusOr<ScheduleRepository::EnqueuePass> ScheduleRepository::EnqueueDue(absl::Time now,
                                                                               int limit) {
  return pool_->Transact([&](pqxx::work& txn) -> absl::StatusOr<EnqueuePass> {
    EnqueuePass pass;
    if (!txn.exec_params1("SELECT pg_try_advisory_xact_lock($1)", LeaseReaper::kAdvisoryLockKey)[0]
             .as<bool>()) {
      return pass;  // another replica is reaping or enqueuing right now
    }
    pass.ran = true;
    pqxx::result due = txn.exec_params(
        "SELECT s.id, s.interval_seconds, s.cron,"
        "  (SELECT m.id FROM models m WHERE m.name = s.model AND NOT m.deprecated"
        "    ORDER BY m.created_at DESC, m.id DESC LIMIT 1) AS model_id,"
        "  EXISTS (SELECT 1 FROM tests t WHERE t.id = s.last_test_id"
        "            AND t.state IN ('queued', 'running')) AS busy"
        " FROM test_schedules s"
        " WHERE s.next_run_at <= to_timestamp($1::bigint / 1e6)"
        " ORDER BY s.next_run_at, s.id LIMIT $2 FOR UPDATE OF s",
        Micros(now), limit);
    for (const pqxx::row& row : due) {
      const int64_t id = row["id"].as<int64_t>();
      if (row["busy"].as<bool>()) {
        ++pass.skipped;  // next_run_at stays: queued as soon as the previous test ends
        continue;
      }
      std::string error;
      const absl::Time next = NextRun(row, now, error);
      if (!error.empty() || row["model_id"].is_null()) {
        ++pass.skipped;
        if (!error.empty()) pass.errors.push_back(std::move(error));
      } else {
        txn.exec_params("SELECT vanguard_enqueue_scheduled_test($1, $2)", id,
                        row["model_id"].as<int64_t>());
        ++pass.queued;
      }
      txn.exec_params(
          "UPDATE test_schedules SET next_run_at = to_timestamp($2::bigint / 1e6) WHERE id = $1",
          id, Micros(next));
    }
    return pass;
  });
}

}  // namespace vanguard
