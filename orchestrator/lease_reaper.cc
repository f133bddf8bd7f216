// Expired-lease reaper; see lease_reaper.h.
#include "orchestrator/lease_reaper.h"

#include <iostream>
#include <string>

namespace vanguard {

absl::StatusOr<LeaseReaper::Pass> LeaseReaper::RunOnce() {
  const bool grace = options_.outage_grace > absl::ZeroDuration() && grace_due_.load();
  absl::StatusOr<Pass> pass = pool_->Transact([&](pqxx::work& txn) -> absl::StatusOr<Pass> {
    Pass pass;
    if (!txn.exec_params1("SELECT pg_try_advisory_xact_lock($1)", kAdvisoryLockKey)[0].as<bool>()) {
      return pass;  // another replica is reaping right now
    }
    pass.ran = true;
    if (grace) {
      // Touches only lease_expires_at, as heartbeats do.
      pass.extended = static_cast<int>(
          txn.exec_params("UPDATE tests"
                          " SET lease_expires_at = now() + make_interval(secs => $1::float8)"
                          " WHERE state = 'running'"
                          "   AND lease_expires_at < now() + make_interval(secs => $1::float8)",
                          absl::ToDoubleSeconds(options_.outage_grace))
              .affected_rows());
      return pass;
    }
    // The SET expressions all see the row as it was before the update.
    pqxx::result rows = txn.exec_params(
        "UPDATE tests SET"
        "   state = CASE WHEN cancel_requested THEN 'cancelled'"
        "                WHEN attempt >= max_attempts THEN 'failed'"
        "                ELSE 'queued' END,"
        "   error = CASE WHEN cancel_requested THEN 'cancelled; its worker stopped heartbeating'"
        "                WHEN attempt >= max_attempts"
        "                  THEN 'lease expired after ' || attempt || ' attempts'"
        "                ELSE error END,"
        "   finished_at = CASE WHEN cancel_requested OR attempt >= max_attempts THEN now()"
        "                      ELSE NULL END,"
        "   not_before = CASE WHEN cancel_requested OR attempt >= max_attempts THEN not_before"
        "                     ELSE now() + make_interval(secs => $1::float8 * (attempt - 1)) END,"
        "   lease_owner = CASE WHEN cancel_requested OR attempt >= max_attempts"
        "                      THEN lease_owner ELSE NULL END,"
        "   requeue_reason = CASE WHEN cancel_requested OR attempt >= max_attempts"
        "                         THEN requeue_reason"
        "                         ELSE 'lease of ' || coalesce(lease_owner, 'its worker')"
        "                              || ' expired at attempt ' || attempt END,"
        "   lease_expires_at = NULL"
        " WHERE state = 'running' AND lease_expires_at < now()"
        " RETURNING state",
        absl::ToDoubleSeconds(options_.backoff));
    for (const pqxx::row& row : rows) {
      const std::string state = row[0].c_str();
      if (state == "queued") {
        ++pass.requeued;
      } else if (state == "failed") {
        ++pass.failed;
      } else {
        ++pass.cancelled;
      }
    }
    return pass;
  });
  if (!pass.ok()) {
    grace_due_ = true;  // the database is out of reach: so are the workers' heartbeats
  } else if (grace && pass->ran) {
    grace_due_ = false;
  }
  return pass;
}

void LeaseReaper::Start() {
  thread_ = std::thread([this] {
    while (!stop_.WaitForNotificationWithTimeout(options_.interval)) {
      absl::StatusOr<Pass> pass = RunOnce();
      if (!pass.ok()) {
        std::cerr << "lease reaper: " << pass.status() << std::endl;
      } else if (pass->extended > 0) {
        std::cerr << "lease reaper: database reachable again: " << pass->extended
                  << " running tests' leases extended by "
                  << absl::FormatDuration(options_.outage_grace)
                  << " for their workers to renew them" << std::endl;
      } else if (pass->requeued + pass->failed + pass->cancelled > 0) {
        if (options_.on_reaped) options_.on_reaped(pass->requeued, pass->failed, pass->cancelled);
        std::cerr << "lease reaper: expired leases: " << pass->requeued << " requeued, "
                  << pass->failed << " failed, " << pass->cancelled << " cancelled" << std::endl;
      }
    }
  });
}

void LeaseReaper::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

}  // namespace vanguard
