// The test queue and what tests produce: tables `tests` (the queue, with leases), `steps`
// (every step of every attempt), `step_windows` (their windows), `test_progress` (the step
// in flight of each running test) and `results` (one row per finished test).
//
//   TestRepository tests(pool);
//   ASSIGN_OR_RETURN(v1::Test t, tests.Submit(spec, model_id, "ci-run-42"));
//   ASSIGN_OR_RETURN(std::optional<v1::Test> leased,
//                    tests.Lease("worker-1", absl::Seconds(30), caller_token_id));
//   // leased->attempt() is the fencing token every later call must carry, with the token:
//   ASSIGN_OR_RETURN(bool cancel,
//                    tests.Heartbeat(id, attempt, "worker-1", absl::Seconds(30), caller_token_id));
//   RETURN_IF_ERROR(tests.ReportStep(id, attempt, step, caller_token_id));
//   ASSIGN_OR_RETURN(v1::Test done, tests.Complete(id, attempt, result, "", caller_token_id));
//   // or, when the worker shuts down mid-test, give the lease back:
//   ASSIGN_OR_RETURN(v1::Test queued,
//                    tests.Release(id, attempt, "worker-1", "shutting down", caller_token_id));
//
// Leasing is one atomic statement (FOR UPDATE SKIP LOCKED: highest priority first, then
// oldest), so any number of orchestrators can serve any number of workers. A lease has an
// owner (worker_id), a holder token (see LeaseToken), an expiry extended by heartbeats, and
// a fencing token (the attempt number, bumped by each lease). Every write on a lease is
// fenced, and nothing changes when it is refused:
//   NOT_FOUND           no such test;
//   FAILED_PRECONDITION the lease is lost: a stale attempt, a test no longer running, or
//                       (Heartbeat, Release) another worker_id under the same token;
//   PERMISSION_DENIED   the call's token is not the one that leased this attempt (checked
//                       after the attempt, before the state: the caller never held it).
// Times come from the database's now(), one clock for every orchestrator replica.
//
// Each row keeps the full proto as jsonb (protobuf JSON mapping, .proto field names) next
// to the columns queries filter on. Thread-safe (all state is in Postgres); any thread may
// call. Database errors map as in common/postgres.h.
#ifndef VANGUARD_ORCHESTRATOR_TEST_REPOSITORY_H_
#define VANGUARD_ORCHESTRATOR_TEST_REPOSITORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/postgres.h"
#include "vanguard/v1/orchestrator.pb.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard {

// The api_tokens.id of the bearer token a lease call came with; nullopt when the
// orchestrator runs without auth. Lease records it (tests.lease_token_id) as the holder;
// every later call on that attempt with a token must bring the same one. nullopt skips the
// check, and so does a lease recorded without a token: both are fenced by attempt and
// worker_id alone, as before tokens were bound to leases.
using LeaseToken = std::optional<int64_t>;

// "queued", "running", ... as stored in tests.state; "" for TEST_STATE_UNSPECIFIED.
std::string TestStateToDb(v1::TestState state);

// Model versions by models.id, parsed from their JSON once. Versions are immutable (the
// columns that change, deprecated/deprecated_at, are not part of a test's model), so an
// entry never goes stale. Thread-safe.
class ModelCache {
 public:
  bool Lookup(int64_t model_id, v1::Model* model);
  void Insert(int64_t model_id, const v1::Model& model);

 private:
  static constexpr size_t kMaxModels = 1024;
  absl::Mutex mu_;
  absl::flat_hash_map<int64_t, v1::Model> models_ ABSL_GUARDED_BY(mu_);
};

class TestRepository {
 public:
  // How many times Release may requeue one test. A release adds an attempt (it is not a
  // failure), so without a bound a test its workers keep giving back — a worker that quits
  // on it, a token releasing in a loop — would stay in the queue forever. 10 is more than
  // rolling restarts of the workers during one test give back (one release per worker that
  // leases it while stopping), few enough that such a test ends within minutes.
  static constexpr int kMaxLeaseReleases = 10;

  explicit TestRepository(PostgresPool* pool) : pool_(pool) {}

  // Who a submitted test belongs to, and that team's limit on unfinished tests.
  struct SubmitOwner {
    std::string team = "default";  // the model's team
    int max_unfinished = 0;        // > 0: TeamQuota.max_concurrent_tests; 0: no limit
  };

  // Queues a test of owner.team. `spec` is stored as given: the caller validated it,
  // applied defaults and resolved the model to `model_id`. Idempotent on a non-empty
  // request_id within the team: a second submit with the same id returns the test the
  // first one created (and queues nothing, whatever the quota). RESOURCE_EXHAUSTED
  // ("max_concurrent_tests") when the team already has max_unfinished tests queued or
  // running; concurrent submits of one team are counted one after the other (they lock
  // the team's team_quotas row).
  absl::StatusOr<v1::Test> Submit(const v1::TestSpec& spec, int64_t model_id,
                                  const std::string& request_id, const SubmitOwner& owner);
  absl::StatusOr<v1::Test> Submit(const v1::TestSpec& spec, int64_t model_id,
                                  const std::string& request_id) {
    return Submit(spec, model_id, request_id, SubmitOwner());
  }

  // The team test `id` belongs to. NOT_FOUND for an unknown test.
  absl::StatusOr<std::string> TeamOf(int64_t id);

  struct GetOptions {
    // Each step with its windows (Step.windows, from step_windows, ordered by index).
    bool windows = false;
  };
  // The test with its resolved model, the steps of its current attempt ordered by index,
  // and its result if it has one. NOT_FOUND if there is no such test.
  absl::StatusOr<v1::Test> Get(int64_t id, const GetOptions& options);
  absl::StatusOr<v1::Test> Get(int64_t id) { return Get(id, GetOptions()); }

  struct ListFilter {
    v1::TestState state = v1::TEST_STATE_UNSPECIFIED;  // unspecified: any
    std::string model;                                 // empty: any
    int limit = 50;
  };
  // Newest first, with model and result but without steps.
  absl::StatusOr<std::vector<v1::Test>> List(const ListFilter& filter);

  // A queued test is cancelled at once; a running one gets cancel_requested (its worker
  // learns it from the next heartbeat). FAILED_PRECONDITION for a finished test,
  // NOT_FOUND for an unknown one.
  absl::StatusOr<v1::Test> Cancel(int64_t id);

  // Leases the ready queued test with the highest priority (then the oldest) to worker_id
  // holding `token` for lease_duration: state running, attempt + 1. nullopt when none is
  // ready. A test leased again resumes: the steps its previous attempt completed (up to its
  // first interrupted step) become the new attempt's, windows included, in the same
  // statement, and come back in test.steps (without histograms and windows) for the worker
  // to continue from; an interrupted step stays with the attempt that cut it short.
  absl::StatusOr<std::optional<v1::Test>> Lease(const std::string& worker_id,
                                                absl::Duration lease_duration,
                                                LeaseToken token = std::nullopt);
  // The lease statement ($1 worker id, $2 lease seconds, $3 holder token id or NULL), for
  // benchmarks (pgbench).
  static const std::string& LeaseSql();

  // Extends the lease of a running test held by worker_id (and `token`) at this attempt
  // and returns whether cancellation was requested. A lease past its expiry that the reaper
  // has not yet taken back can still be extended: the worker is evidently alive.
  // FAILED_PRECONDITION when the lease is not held (stale attempt, other owner, test no
  // longer running); PERMISSION_DENIED for another token; NOT_FOUND for an unknown test.
  absl::StatusOr<bool> Heartbeat(int64_t test_id, int32_t attempt, const std::string& worker_id,
                                 absl::Duration lease_duration, LeaseToken token = std::nullopt);

  // Stores (or replaces: idempotent on test, attempt, step.index()) one step of a running
  // test at this attempt. FAILED_PRECONDITION for a stale attempt or a test not running;
  // PERMISSION_DENIED for another token.
  absl::Status ReportStep(int64_t test_id, int32_t attempt, const v1::Step& step,
                          LeaseToken token = std::nullopt);

  // Replaces the live progress of a running test held by worker_id (and `token`) at this
  // attempt (table test_progress): progress.windows are the windows measured since the
  // last report; the row keeps the step's latest 60 (a new step or attempt starts afresh).
  // progress.attempt and update_time are set here. Fenced like Heartbeat:
  // FAILED_PRECONDITION when the lease is not held (stale attempt, other owner, test no
  // longer running); PERMISSION_DENIED for another token; NOT_FOUND for an unknown test.
  absl::Status ReportProgress(int64_t test_id, int32_t attempt, const std::string& worker_id,
                              const v1::TestProgress& progress, LeaseToken token = std::nullopt);

  // The latest progress of test `id` if it was updated after `after` (InfinitePast: any);
  // nullopt when there is none (never reported, or deleted when the test completed or its
  // lease was given back). Its attempt may be older than the test's: callers compare.
  absl::StatusOr<std::optional<v1::TestProgress>> LatestProgress(
      int64_t test_id, absl::Time after = absl::InfinitePast());

  // Ends a running test at this attempt: with a result (succeeded) or an error (failed);
  // cancelled instead if cancellation was requested. Exactly one of result / error.
  // A result's steps_taken and test_duration are filled in when left zero.
  // FAILED_PRECONDITION for a stale attempt or a test not running; PERMISSION_DENIED for
  // another token.
  absl::StatusOr<v1::Test> Complete(int64_t test_id, int32_t attempt,
                                    const std::optional<v1::TestResult>& result,
                                    const std::string& error, LeaseToken token = std::nullopt);

  // Gives back the lease of a running test held by worker_id at this attempt (a worker
  // shutting down; the service's ReleaseTest): the test is queued again at once (no owner,
  // leasable now; the queue trigger wakes long polls), its steps of this attempt stay stored
  // (the next lease resumes from them), requeue_reason becomes `reason`, and max_attempts
  // grows by one (a release is not a failed attempt). A test whose cancellation was
  // requested ends cancelled instead. A test already released kMaxLeaseReleases times ends
  // failed instead, with an error saying so and ending in `reason`; the call succeeds and
  // returns it (the lease is given back either way, and the caller learns the test's end
  // from its state). FAILED_PRECONDITION when the lease is not held (stale attempt, other
  // owner, test no longer running: nothing changes); PERMISSION_DENIED for another token;
  // NOT_FOUND for an unknown test.
  absl::StatusOr<v1::Test> Release(int64_t test_id, int32_t attempt, const std::string& worker_id,
                                   const std::string& reason, LeaseToken token = std::nullopt);

 private:
  PostgresPool* pool_;
  ModelCache model_cache_;  // for the lease hot path
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_TEST_REPOSITORY_H_
