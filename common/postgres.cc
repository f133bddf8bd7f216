// Connection pool and libpqxx error mapping; see postgres.h. Any thread may call.
#include "common/postgres.h"

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace vanguard {
namespace {

std::string Describe(const std::exception& e) {
  absl::string_view what = e.what();
  what = absl::StripAsciiWhitespace(what);
  // libpq prefixes server messages with the severity ("ERROR:  ..."), which says nothing.
  absl::ConsumePrefix(&what, "ERROR:");
  return std::string(absl::StripLeadingAsciiWhitespace(what));
}

}  // namespace

absl::Status PostgresErrorToStatus(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const pqxx::unique_violation& e) {
    return absl::AlreadyExistsError(Describe(e));
  } catch (const pqxx::foreign_key_violation& e) {
    return absl::FailedPreconditionError(Describe(e));
  } catch (const pqxx::check_violation& e) {
    return absl::InvalidArgumentError(Describe(e));
  } catch (const pqxx::not_null_violation& e) {
    return absl::InvalidArgumentError(Describe(e));
  } catch (const pqxx::data_exception& e) {
    return absl::InvalidArgumentError(Describe(e));
  } catch (const pqxx::broken_connection& e) {
    return absl::UnavailableError(absl::StrCat("database connection lost: ", Describe(e)));
  } catch (const pqxx::in_doubt_error& e) {
    return absl::UnavailableError(
        absl::StrCat("database connection lost during commit (outcome unknown): ", Describe(e)));
  } catch (const pqxx::statement_completion_unknown& e) {
    return absl::UnavailableError(
        absl::StrCat("database connection lost (outcome unknown): ", Describe(e)));
  } catch (const pqxx::transaction_rollback& e) {
    return absl::AbortedError(Describe(e));
  } catch (const pqxx::sql_error& e) {
    const std::string& state = e.sqlstate();
    // Class 08: connection exception; 57P0x: server shutting down or backend terminated.
    if (absl::StartsWith(state, "08") || absl::StartsWith(state, "57P")) {
      return absl::UnavailableError(absl::StrCat("database unavailable: ", Describe(e)));
    }
    if (absl::StartsWith(state, "40")) return absl::AbortedError(Describe(e));
    if (absl::StartsWith(state, "23")) return absl::FailedPreconditionError(Describe(e));
    return absl::InternalError(absl::StrCat("database error: ", Describe(e)));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("database error: ", Describe(e)));
  } catch (...) {
    return absl::InternalError("database error: unknown exception");
  }
}

std::string WithConnectTimeout(const std::string& conninfo, absl::Duration timeout) {
  if (absl::StrContains(conninfo, "connect_timeout")) return conninfo;
  int64_t seconds = std::max<int64_t>(1, std::ceil(absl::ToDoubleSeconds(timeout)));
  if (absl::StartsWith(conninfo, "postgresql://") || absl::StartsWith(conninfo, "postgres://")) {
    return absl::StrCat(conninfo, absl::StrContains(conninfo, "?") ? "&" : "?",
                        "connect_timeout=", seconds);
  }
  return absl::StrCat(conninfo, " connect_timeout=", seconds);
}

absl::StatusOr<std::unique_ptr<pqxx::connection>> ConnectPostgres(const std::string& conninfo,
                                                                  absl::Duration connect_timeout) {
  try {
    return std::make_unique<pqxx::connection>(WithConnectTimeout(conninfo, connect_timeout));
  } catch (const pqxx::broken_connection& e) {
    return absl::UnavailableError(absl::StrCat("cannot connect to PostgreSQL: ", Describe(e)));
  } catch (...) {
    return PostgresErrorToStatus(std::current_exception());
  }
}

PostgresPool::Handle::~Handle() {
  if (pool_ != nullptr) pool_->Release(std::move(conn_));
}

absl::StatusOr<std::unique_ptr<PostgresPool>> PostgresPool::Create(Options options) {
  if (options.conninfo.empty()) {
    return absl::InvalidArgumentError("database conninfo: must not be empty");
  }
  if (options.size < 1) return absl::InvalidArgumentError("database pool size: must be >= 1");
  return std::unique_ptr<PostgresPool>(new PostgresPool(std::move(options)));
}

absl::StatusOr<PostgresPool::Handle> PostgresPool::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    auto can_proceed = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return !idle_.empty() || open_ < options_.size;
    };
    if (!mu_.AwaitWithTimeout(absl::Condition(&can_proceed), options_.acquire_timeout)) {
      return absl::UnavailableError(
          absl::StrCat("all ", options_.size, " database connections are busy"));
    }
    if (!idle_.empty()) {
      std::unique_ptr<pqxx::connection> conn = std::move(idle_.back());
      idle_.pop_back();
      return Handle(this, std::move(conn));
    }
    ++open_;  // reserve the slot while connecting outside the lock
  }
  absl::StatusOr<std::unique_ptr<pqxx::connection>> conn =
      ConnectPostgres(options_.conninfo, options_.connect_timeout);
  if (!conn.ok()) {
    absl::MutexLock lock(&mu_);
    --open_;
    return conn.status();
  }
  return Handle(this, *std::move(conn));
}

void PostgresPool::Release(std::unique_ptr<pqxx::connection> conn) {
  if (conn != nullptr && !conn->is_open()) conn.reset();  // closed outside the lock
  absl::MutexLock lock(&mu_);
  if (conn != nullptr) {
    idle_.push_back(std::move(conn));
  } else {
    --open_;
  }
}

}  // namespace vanguard
