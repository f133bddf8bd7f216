// The model registry tables (`models`, and `model_owners`: which team owns each name): what
// is tested, where it is served, and its SLO. Each row keeps the full vanguard.v1.Model as
// jsonb plus the columns queries filter on; Model.team is read from model_owners.
//
//   ModelRepository models(pool);
//   ASSIGN_OR_RETURN(RegisteredModel m, models.Register(model));   // ALREADY_EXISTS if taken
//   ASSIGN_OR_RETURN(RegisteredModel latest, models.Get("resnet50", ""));
//
// Thread-safe (all state is in Postgres); any thread may call. Database errors map as in
// common/postgres.h (UNAVAILABLE when the database is unreachable).
#ifndef VANGUARD_ORCHESTRATOR_MODEL_REPOSITORY_H_
#define VANGUARD_ORCHESTRATOR_MODEL_REPOSITORY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/postgres.h"
#include "vanguard/v1/model.pb.h"

namespace vanguard {

struct RegisteredModel {
  int64_t id = 0;   // models.id, referenced by tests.model_id
  v1::Model model;  // with create_time set
};

class ModelRepository {
 public:
  explicit ModelRepository(PostgresPool* pool) : pool_(pool) {}

  // Judges whether a registration may add a version to a name owned by `owner_team`; its
  // error is Register's.
  using OwnerCheck = std::function<absl::Status(const std::string& owner_team)>;

  // Inserts a new (name, version). A new name becomes `team`'s; a name already owned keeps
  // its team, and `may_add` (when set) is asked first, in the same transaction: its error
  // (e.g. PERMISSION_DENIED) is returned and nothing is stored. ALREADY_EXISTS if that
  // version is registered. The model is stored as given (validation is the caller's job);
  // create_time and team are set.
  absl::StatusOr<RegisteredModel> Register(const v1::Model& model,
                                           const std::string& team = "default",
                                           const OwnerCheck& may_add = nullptr);

  // The given version, or the most recently registered one that is not deprecated when
  // version is empty. NOT_FOUND if there is none.
  absl::StatusOr<RegisteredModel> Get(const std::string& name, const std::string& version);

  // Models ordered by name, then newest version first; only `name` when not empty;
  // deprecated versions only when include_deprecated.
  absl::StatusOr<std::vector<v1::Model>> List(const std::string& name, int limit,
                                              bool include_deprecated = false);

  // Marks the version deprecated (idempotent; the first deprecation time is kept).
  // NOT_FOUND if it is not registered.
  absl::StatusOr<RegisteredModel> Deprecate(const std::string& name, const std::string& version);

 private:
  PostgresPool* pool_;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_MODEL_REPOSITORY_H_
