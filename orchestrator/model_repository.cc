// The model registry table; see model_repository.h. Any thread may call.
#include "orchestrator/model_repository.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "orchestrator/proto_json.h"

namespace vanguard {
namespace {

constexpr char kSelectModel[] =
    "SELECT id, spec::text AS spec, deprecated,"
    "       (extract(epoch FROM created_at) * 1000000)::bigint AS created_us,"
    "       (extract(epoch FROM deprecated_at) * 1000000)::bigint AS deprecated_us,"
    "       (SELECT team FROM model_owners o WHERE o.name = models.name) AS team"
    "  FROM models ";

absl::StatusOr<RegisteredModel> ModelFromRow(const pqxx::row& row) {
  RegisteredModel out;
  out.id = row["id"].as<int64_t>();
  RETURN_IF_ERROR(ProtoFromJson(row["spec"].c_str(), &out.model));
  *out.model.mutable_create_time() = TimestampFromMicros(row["created_us"].as<int64_t>());
  out.model.set_deprecated(row["deprecated"].as<bool>());
  if (!row["deprecated_us"].is_null()) {
    *out.model.mutable_deprecate_time() = TimestampFromMicros(row["deprecated_us"].as<int64_t>());
  }
  // A name without an owner row was registered behind the service's back: "default".
  out.model.set_team(row["team"].is_null() ? "default" : row["team"].c_str());
  return out;
}

}  // namespace

absl::StatusOr<RegisteredModel> ModelRepository::Register(const v1::Model& model,
                                                          const std::string& team,
                                                          const OwnerCheck& may_add) {
  v1::Model stored = model;
  stored.clear_create_time();  // the row's created_at is the truth
  stored.clear_deprecated();   // so are deprecated and deprecated_at
  stored.clear_deprecate_time();
  stored.clear_team();  // and model_owners
  ASSIGN_OR_RETURN(std::string json, ProtoToJson(stored));
  absl::StatusOr<RegisteredModel> registered =
      pool_->Transact([&](pqxx::work& txn) -> absl::StatusOr<RegisteredModel> {
        // The first registration of a name decides its team (the primary key settles a race).
        txn.exec_params(
            "INSERT INTO model_owners (name, team) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
            model.name(), team);
        const std::string owner =
            txn.exec_params1("SELECT team FROM model_owners WHERE name = $1", model.name())[0]
                .c_str();
        if (may_add != nullptr) RETURN_IF_ERROR(may_add(owner));
        pqxx::row row = txn.exec_params1(
            "INSERT INTO models (name, version, protocol, spec) VALUES ($1, $2, $3, $4::jsonb)"
            " RETURNING id, spec::text AS spec, deprecated,"
            "   (extract(epoch FROM created_at) * 1000000)::bigint AS created_us,"
            "   NULL::bigint AS deprecated_us, $5::text AS team",
            model.name(), model.version(), v1::Protocol_Name(model.protocol()), json, owner);
        return ModelFromRow(row);
      });
  if (absl::IsAlreadyExists(registered.status())) {
    return absl::AlreadyExistsError(absl::StrCat("model ", model.name(), " version ",
                                                 model.version(), " is already registered"));
  }
  return registered;
}

absl::StatusOr<RegisteredModel> ModelRepository::Get(const std::string& name,
                                                     const std::string& version) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<RegisteredModel> {
    pqxx::nontransaction txn(conn);
    pqxx::result rows =
        version.empty()
            ? txn.exec_params(absl::StrCat(kSelectModel,
                                           "WHERE name = $1 AND NOT deprecated"
                                           " ORDER BY created_at DESC, id DESC"
                                           " LIMIT 1"),
                              name)
            : txn.exec_params(absl::StrCat(kSelectModel, "WHERE name = $1 AND version = $2"), name,
                              version);
    if (rows.empty()) {
      return absl::NotFoundError(
          version.empty()
              ? absl::StrCat("model ", name, " has no registered version that is not deprecated")
              : absl::StrCat("model ", name, " version ", version, " is not registered"));
    }
    return ModelFromRow(rows[0]);
  });
}

absl::StatusOr<std::vector<v1::Model>> ModelRepository::List(const std::string& name, int limit,
                                                             bool include_deprecated) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<std::vector<v1::Model>> {
    pqxx::nontransaction txn(conn);
    pqxx::result rows =
        txn.exec_params(absl::StrCat(kSelectModel,
                                     "WHERE ($1::text = '' OR name = $1::text)"
                                     "   AND ($3::boolean OR NOT deprecated)"
                                     " ORDER BY name, created_at DESC, id DESC LIMIT $2"),
                        name, limit, include_deprecated);
    std::vector<v1::Model> models;
    models.reserve(rows.size());
    for (const pqxx::row& row : rows) {
      ASSIGN_OR_RETURN(RegisteredModel m, ModelFromRow(row));
      models.push_back(std::move(m.model));
    }
    return models;
  });
}

absl::StatusOr<RegisteredModel> ModelRepository::Deprecate(const std::string& name,
                                                           const std::string& version) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<RegisteredModel> {
    pqxx::nontransaction txn(conn);
    pqxx::result rows = txn.exec_params(
        "UPDATE models SET deprecated = true, deprecated_at = coalesce(deprecated_at, now())"
        " WHERE name = $1 AND version = $2"
        " RETURNING id, spec::text AS spec, deprecated,"
        "   (extract(epoch FROM created_at) * 1000000)::bigint AS created_us,"
        "   (extract(epoch FROM deprecated_at) * 1000000)::bigint AS deprecated_us,"
        "   (SELECT team FROM model_owners o WHERE o.name = models.name) AS team",
        name, version);
    if (rows.empty()) {
      return absl::NotFoundError(
          absl::StrCat("model ", name, " version ", version, " is not registered"));
    }
    return ModelFromRow(rows[0]);
  });
}

}  // namespace vanguard
