// PostgreSQL access shared by every component that talks to the database: a small pool of
// libpqxx connections and the mapping of libpqxx exceptions to absl::Status codes, so no
// exception ever crosses a module boundary.
//
//   ASSIGN_OR_RETURN(auto pool, PostgresPool::Create({.conninfo = url, .size = 8}));
//   absl::StatusOr<int64_t> n = pool->Transact([&](pqxx::work& txn) -> absl::StatusOr<int64_t> {
//     return txn.exec_params1("SELECT count(*) FROM tests WHERE state = $1", "queued")[0]
//         .as<int64_t>();
//   });
//
// Codes: unique_violation -> ALREADY_EXISTS; lost or refused connection, server shutdown,
// commit outcome unknown -> UNAVAILABLE; check/not-null/data errors -> INVALID_ARGUMENT;
// foreign-key violation -> FAILED_PRECONDITION; serialization failure/deadlock -> ABORTED;
// anything else -> INTERNAL. A connection that broke is dropped, not returned to the pool,
// and the next Acquire opens a fresh one, so the process survives a database restart.
#ifndef VANGUARD_COMMON_POSTGRES_H_
#define VANGUARD_COMMON_POSTGRES_H_

#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pqxx/pqxx"

namespace vanguard {

// Maps an exception thrown by libpqxx (or anything else) to a Status; see the file comment.
absl::Status PostgresErrorToStatus(std::exception_ptr error);

// Returns conninfo (libpq "key=value" form or a postgresql:// URL) with connect_timeout set
// to timeout (rounded up to whole seconds, at least 1) unless it already names one.
std::string WithConnectTimeout(const std::string& conninfo, absl::Duration timeout);

// Opens one connection. UNAVAILABLE (with libpq's message) when the server cannot be reached.
absl::StatusOr<std::unique_ptr<pqxx::connection>> ConnectPostgres(const std::string& conninfo,
                                                                  absl::Duration connect_timeout);

// A bounded set of connections opened on demand. Thread-safe: any thread may call.
class PostgresPool {
 public:
  struct Options {
    std::string conninfo;
    int size = 8;
    // libpq connect_timeout for each new connection.
    absl::Duration connect_timeout = absl::Seconds(5);
    // How long Acquire waits for a busy pool before giving up with UNAVAILABLE.
    absl::Duration acquire_timeout = absl::Seconds(10);
  };

  // A connection borrowed from the pool; returned when destroyed unless Discard()ed.
  class Handle {
   public:
    Handle(Handle&& other) noexcept
        : pool_(std::exchange(other.pool_, nullptr)), conn_(std::move(other.conn_)) {}
    Handle& operator=(Handle&&) = delete;
    ~Handle();
    pqxx::connection& operator*() const { return *conn_; }
    pqxx::connection* operator->() const { return conn_.get(); }
    // The connection is (possibly) broken: close it instead of reusing it.
    void Discard() { conn_.reset(); }

   private:
    friend class PostgresPool;
    Handle(PostgresPool* pool, std::unique_ptr<pqxx::connection> conn)
        : pool_(pool), conn_(std::move(conn)) {}
    PostgresPool* pool_;
    std::unique_ptr<pqxx::connection> conn_;
  };

  // INVALID_ARGUMENT for an empty conninfo or a size < 1. Connects lazily.
  static absl::StatusOr<std::unique_ptr<PostgresPool>> Create(Options options);

  // Waits for a free connection (opening one if the pool is not full). UNAVAILABLE when the
  // server cannot be reached or no connection frees up within acquire_timeout.
  absl::StatusOr<Handle> Acquire();

  // Runs fn(pqxx::connection&) -> absl::Status or absl::StatusOr<T> on a pooled connection.
  // Exceptions become a Status; a connection that broke is discarded.
  template <typename Fn>
  std::invoke_result_t<Fn&, pqxx::connection&> Run(Fn&& fn);

  // Runs fn(pqxx::transaction<Isolation>&) in one transaction, committing when fn returns OK
  // and rolling back otherwise.
  template <pqxx::isolation_level Isolation = pqxx::read_committed, typename Fn>
  auto Transact(Fn&& fn);

  const Options& options() const { return options_; }

 private:
  explicit PostgresPool(Options options) : options_(std::move(options)) {}
  void Release(std::unique_ptr<pqxx::connection> conn);

  const Options options_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;  // idle + lent out + being opened
};

template <typename Fn>
std::invoke_result_t<Fn&, pqxx::connection&> PostgresPool::Run(Fn&& fn) {
  absl::StatusOr<Handle> handle = Acquire();
  if (!handle.ok()) return handle.status();
  try {
    return fn(**handle);
  } catch (...) {
    absl::Status status = PostgresErrorToStatus(std::current_exception());
    if (absl::IsUnavailable(status)) handle->Discard();
    return status;
  }
}

template <pqxx::isolation_level Isolation, typename Fn>
auto PostgresPool::Transact(Fn&& fn) {
  using Txn = pqxx::transaction<Isolation>;
  using Result = std::invoke_result_t<Fn&, Txn&>;
  return Run([&fn](pqxx::connection& conn) -> Result {
    Txn txn(conn);
    Result result = fn(txn);
    if (result.ok()) txn.commit();
    return result;
  });
}

}  // namespace vanguard

#endif  // VANGUARD_COMMON_POSTGRES_H_
