// Capacity planning queries; see capacity_repository.h. Any thread may call.
#include "orchestrator/capacity_repository.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "orchestrator/proto_json.h"

namespace vanguard {
namespace {

// A nullable double column as the proto has it (0 for NULL: "none stated").
double OrZero(const pqxx::field& field) { return field.is_null() ? 0.0 : field.as<double>(); }

v1::Hardware HardwareFromRow(const pqxx::row& row) {
  v1::Hardware hardware;
  hardware.set_accelerator(row["accelerator"].c_str());
  hardware.set_accelerator_count(row["accelerator_count"].as<int32_t>());
  hardware.set_pool(row["pool"].c_str());
  return hardware;
}

// The baseline columns every query below names alike (with the test's hardware, which the
// baseline shares).
v1::CapacityBaseline BaselineFromRow(const pqxx::row& row) {
  v1::CapacityBaseline baseline;
  baseline.set_test_id(row["baseline_test_id"].as<int64_t>());
  baseline.set_model(row["model"].c_str());
  baseline.set_model_version(row["baseline_version"].c_str());
  *baseline.mutable_hardware() = HardwareFromRow(row);
  baseline.set_max_sustainable_qps(row["baseline_qps"].as<double>());
  baseline.set_confidence_low_qps(OrZero(row["baseline_low_qps"]));
  baseline.set_confidence_high_qps(OrZero(row["baseline_high_qps"]));
  baseline.set_at_least(row["baseline_at_least"].as<bool>());
  baseline.set_accepted_by(row["baseline_accepted_by"].c_str());
  *baseline.mutable_accept_time() = TimestampFromMicros(row["baseline_accepted_us"].as<int64_t>());
  return baseline;
}

constexpr const char* kPriceColumns =
    "accelerator, price_per_hour, currency,"
    " (extract(epoch FROM updated_at) * 1000000)::bigint AS updated_us";

v1::AcceleratorPrice PriceFromRow(const pqxx::row& row) {
  v1::AcceleratorPrice price;
  price.set_accelerator(row["accelerator"].c_str());
  price.set_price_per_hour(row["price_per_hour"].as<double>());
  price.set_currency(row["currency"].c_str());
  *price.mutable_update_time() = TimestampFromMicros(row["updated_us"].as<int64_t>());
  return price;
}

v1::CapacityVerdict VerdictFromDb(const pqxx::field& field) {
  if (field.is_null()) return v1::CAPACITY_VERDICT_UNSPECIFIED;
  const std::string verdict = field.c_str();
  if (verdict == "unchanged") return v1::CAPACITY_VERDICT_UNCHANGED;
  if (verdict == "improved") return v1::CAPACITY_VERDICT_IMPROVED;
  if (verdict == "regressed") return v1::CAPACITY_VERDICT_REGRESSED;
  if (verdict == "undecided") return v1::CAPACITY_VERDICT_UNDECIDED;
  return v1::CAPACITY_VERDICT_UNSPECIFIED;
}

// A row of kSelectPoints.
v1::CapacityPoint PointFromRow(const pqxx::row& row) {
  v1::CapacityPoint point;
  point.set_test_id(row["test_id"].as<int64_t>());
  point.set_model(row["model"].c_str());
  point.set_model_version(row["model_version"].c_str());
  *point.mutable_hardware() = HardwareFromRow(row);
  point.set_max_sustainable_qps(row["max_sustainable_qps"].as<double>());
  point.set_confidence_low_qps(OrZero(row["confidence_low_qps"]));
  point.set_confidence_high_qps(OrZero(row["confidence_high_qps"]));
  point.set_at_least(row["at_least"].as<bool>());
  point.set_converged(row["converged"].as<bool>());
  *point.mutable_record_time() = TimestampFromMicros(row["recorded_us"].as<int64_t>());
  point.set_verdict(VerdictFromDb(row["verdict"]));
  if (!row["baseline_test_id"].is_null()) *point.mutable_baseline() = BaselineFromRow(row);
  if (!row["change_fraction"].is_null()) {
    point.set_change_fraction(row["change_fraction"].as<double>());
  }
  return point;
}

// Every succeeded test with its verdict (NULL columns when no baseline is in force).
constexpr char kSelectPoints[] =
    "SELECT i.test_id, i.model, i.model_version, i.accelerator, i.accelerator_count, i.pool,"
    "       i.max_sustainable_qps, i.confidence_low_qps, i.confidence_high_qps, i.at_least,"
    "       i.converged, (extract(epoch FROM i.recorded_at) * 1000000)::bigint AS recorded_us,"
    "       v.verdict, v.baseline_test_id, v.baseline_version, v.baseline_qps,"
    "       v.baseline_low_qps, v.baseline_high_qps, v.baseline_at_least, v.baseline_accepted_by,"
    "       (extract(epoch FROM v.baseline_accepted_at) * 1000000)::bigint"
    "         AS baseline_accepted_us,"
    "       v.change_fraction"
    "  FROM capacity_intervals i"
    "  LEFT JOIN capacity_verdicts v ON v.test_id = i.test_id ";

absl::Status ModelMustExist(pqxx::nontransaction& txn, const std::string& model) {
  if (txn.exec_params1("SELECT EXISTS (SELECT 1 FROM models WHERE name = $1)", model)[0]
          .as<bool>()) {
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat("model ", model, " is not registered"));
}

}  // namespace

absl::StatusOr<v1::CapacityBaseline> CapacityRepository::AcceptBaseline(
    int64_t test_id, const std::string& accepted_by) {
  return pool_->Transact([&](pqxx::work& txn) -> absl::StatusOr<v1::CapacityBaseline> {
    pqxx::result rows = txn.exec_params(
        "WITH accepted AS ("
        "  INSERT INTO capacity_baselines (model_id, test_id, max_sustainable_qps,"
        "      confidence_low_qps, confidence_high_qps, at_least, accepted_by)"
        "  SELECT r.model_id, r.test_id, r.max_sustainable_qps, r.confidence_low_qps,"
        "         r.confidence_high_qps, coalesce((r.detail ->> 'at_least')::boolean, false), $2"
        "    FROM results r JOIN tests t ON t.id = r.test_id"
        "   WHERE r.test_id = $1 AND t.state = 'succeeded'"
        "  ON CONFLICT (test_id) DO UPDATE"
        "    SET accepted_by = EXCLUDED.accepted_by, accepted_at = now()"
        "  RETURNING *)"
        " SELECT a.test_id AS baseline_test_id, m.name AS model, m.version AS baseline_version,"
        "   coalesce(m.spec #>> '{hardware,accelerator}', '') AS accelerator,"
        "   coalesce((m.spec #>> '{hardware,accelerator_count}')::integer, 0) AS accelerator_count,"
        "   coalesce(m.spec #>> '{hardware,pool}', '') AS pool,"
        "   a.max_sustainable_qps AS baseline_qps, a.confidence_low_qps AS baseline_low_qps,"
        "   a.confidence_high_qps AS baseline_high_qps, a.at_least AS baseline_at_least,"
        "   a.accepted_by AS baseline_accepted_by,"
        "   (extract(epoch FROM a.accepted_at) * 1000000)::bigint AS baseline_accepted_us"
        " FROM accepted a JOIN models m ON m.id = a.model_id",
        test_id, accepted_by);
    if (!rows.empty()) return BaselineFromRow(rows[0]);
    pqxx::result test = txn.exec_params("SELECT state FROM tests WHERE id = $1", test_id);
    if (test.empty()) return absl::NotFoundError(absl::StrCat("test ", test_id, " not found"));
    return absl::FailedPreconditionError(
        absl::StrCat("test ", test_id, " is ", test[0]["state"].c_str(),
                     ": only a succeeded test (one with a result) can be a baseline"));
  });
}

absl::StatusOr<std::vector<v1::CapacityPoint>> CapacityRepository::Regressions(
    const std::string& model, int limit, bool latest_only) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<std::vector<v1::CapacityPoint>> {
    pqxx::nontransaction txn(conn);
    if (!model.empty()) RETURN_IF_ERROR(ModelMustExist(txn, model));
    pqxx::result rows = txn.exec_params(
        absl::StrCat(kSelectPoints,
                     "WHERE v.verdict = 'regressed' AND ($1::text = '' OR i.model = $1::text)"
                     "  AND (NOT $3::boolean OR NOT EXISTS ("
                     "    SELECT 1 FROM capacity_intervals later"
                     "     WHERE later.model = i.model AND later.accelerator = i.accelerator"
                     "       AND later.accelerator_count = i.accelerator_count"
                     "       AND later.pool = i.pool"
                     "       AND (later.recorded_at, later.test_id) > (i.recorded_at, i.test_id)))"
                     " ORDER BY i.recorded_at DESC, i.test_id DESC LIMIT $2"),
        model, limit, latest_only);
    std::vector<v1::CapacityPoint> points;
    for (const pqxx::row& row : rows) points.push_back(PointFromRow(row));
    return points;
  });
}

absl::StatusOr<std::vector<v1::CapacityPoint>> CapacityRepository::Trend(const std::string& model,
                                                                         int limit) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<std::vector<v1::CapacityPoint>> {
    pqxx::nontransaction txn(conn);
    RETURN_IF_ERROR(ModelMustExist(txn, model));
    pqxx::result rows = txn.exec_params(
        absl::StrCat(kSelectPoints,
                     "WHERE i.model = $1 ORDER BY i.recorded_at DESC, i.test_id DESC LIMIT $2"),
        model, limit);
    std::vector<v1::CapacityPoint> points;
    for (const pqxx::row& row : rows) points.push_back(PointFromRow(row));
    std::reverse(points.begin(), points.end());  // oldest first
    return points;
  });
}

absl::StatusOr<v1::PlanCapacityResponse> CapacityRepository::Plan(const std::string& model,
                                                                  double peak_qps, double headroom,
                                                                  int32_t survive_loss) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<v1::PlanCapacityResponse> {
    pqxx::nontransaction txn(conn);
    RETURN_IF_ERROR(ModelMustExist(txn, model));
    pqxx::result rows = txn.exec_params(
        "SELECT p.*, (extract(epoch FROM p.measured_at) * 1000000)::bigint AS measured_us"
        "  FROM vanguard_plan($1, $2::float8, $3::float8, $4::integer) p",
        model, peak_qps, headroom, survive_loss);
    v1::PlanCapacityResponse response;
    response.set_model(model);
    response.set_peak_qps(peak_qps);
    response.set_headroom(headroom);
    response.set_survive_loss(survive_loss);
    response.set_required_qps(
        txn.exec_params1("SELECT ($1::float8::numeric * (1 + $2::float8::numeric))::float8",
                         peak_qps, headroom)[0]
            .as<double>());
    for (const pqxx::row& row : rows) {
      v1::ReplicaPlan* plan = response.add_plans();
      *plan->mutable_hardware() = HardwareFromRow(row);
      plan->set_model_version(row["model_version"].c_str());
      if (row["test_id"].is_null()) continue;  // that version has no converged capacity
      plan->set_test_id(row["test_id"].as<int64_t>());
      plan->set_capacity_qps(row["capacity_qps"].as<double>());
      plan->set_at_least(row["at_least"].as<bool>());
      plan->set_replicas(row["replicas"].as<int64_t>());
      if (!row["accelerators"].is_null()) plan->set_accelerators(row["accelerators"].as<int64_t>());
      if (!row["cost_per_million_requests"].is_null()) {
        plan->set_cost_per_million_requests(row["cost_per_million_requests"].as<double>());
      }
      if (!row["output_tokens_per_request"].is_null()) {
        plan->set_output_tokens_per_request(row["output_tokens_per_request"].as<double>());
      }
      if (!row["cost_per_million_output_tokens"].is_null()) {
        plan->set_cost_per_million_output_tokens(
            row["cost_per_million_output_tokens"].as<double>());
      }
      if (!row["colocation_factor"].is_null()) {
        plan->set_colocation_factor(row["colocation_factor"].as<double>());
        plan->set_colocation_test_id(row["colocation_test_id"].as<int64_t>());
      }
      if (!row["survivor_factor"].is_null()) {
        plan->set_survivor_factor(row["survivor_factor"].as<double>());
        plan->set_survivor_test_id(row["survivor_test_id"].as<int64_t>());
      }
      plan->set_effective_capacity_qps(row["effective_capacity_qps"].as<double>());
      plan->set_survivor_capacity_qps(row["survivor_capacity_qps"].as<double>());
      *plan->mutable_measure_time() = TimestampFromMicros(row["measured_us"].as<int64_t>());
    }
    return response;
  });
}

absl::StatusOr<v1::AcceleratorPrice> CapacityRepository::SetPrice(const std::string& accelerator,
                                                                  double price_per_hour) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<v1::AcceleratorPrice> {
    pqxx::work txn(conn);
    pqxx::row row = txn.exec_params1(
        absl::StrCat("INSERT INTO accelerator_prices (accelerator, price_per_hour)"
                     " VALUES ($1, $2::float8)"
                     " ON CONFLICT (accelerator) DO UPDATE"
                     " SET price_per_hour = EXCLUDED.price_per_hour, updated_at = now()"
                     " RETURNING ",
                     kPriceColumns),
        accelerator, price_per_hour);
    txn.commit();
    return PriceFromRow(row);
  });
}

absl::StatusOr<std::vector<v1::AcceleratorPrice>> CapacityRepository::ListPrices() {
  return pool_->Run(
      [&](pqxx::connection& conn) -> absl::StatusOr<std::vector<v1::AcceleratorPrice>> {
        pqxx::nontransaction txn(conn);
        pqxx::result rows = txn.exec(absl::StrCat("SELECT ", kPriceColumns,
                                                  " FROM accelerator_prices ORDER BY accelerator"));
        std::vector<v1::AcceleratorPrice> prices;
        for (const pqxx::row& row : rows) prices.push_back(PriceFromRow(row));
        return prices;
      });
}

}  // namespace vanguard
