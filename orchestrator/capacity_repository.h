// Capacity planning on the stored results (migration 0010): accepted baselines (table
// capacity_baselines), each succeeded test's verdict against the baseline in force (view
// capacity_verdicts), a model's capacity over time, and replica sizing (function
// vanguard_plan). The rules live in SQL so that a planner's query and the RPCs answer alike;
// docs/planning.md states them.
//
//   CapacityRepository capacity(pool);
//   ASSIGN_OR_RETURN(v1::CapacityBaseline b, capacity.AcceptBaseline(41, "ci"));
//   ASSIGN_OR_RETURN(std::vector<v1::CapacityPoint> r, capacity.Regressions("resnet50", 50));
//   ASSIGN_OR_RETURN(v1::PlanCapacityResponse plan, capacity.Plan("resnet50", 1000, 0.3, 1));
//
// The caller (OrchestratorService) validates arguments. Thread-safe (all state is in
// Postgres); any thread may call. Database errors map as in common/postgres.h.
#ifndef VANGUARD_ORCHESTRATOR_CAPACITY_REPOSITORY_H_
#define VANGUARD_ORCHESTRATOR_CAPACITY_REPOSITORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/postgres.h"
#include "vanguard/v1/orchestrator.pb.h"

namespace vanguard {

class CapacityRepository {
 public:
  explicit CapacityRepository(PostgresPool* pool) : pool_(pool) {}

  // Makes succeeded test `test_id` the newest baseline of its model version, copying its
  // result's figures; again for a test already accepted, it replaces accepted_by and
  // accept_time. NOT_FOUND for an unknown test; FAILED_PRECONDITION for a test that did not
  // succeed (it has no result).
  absl::StatusOr<v1::CapacityBaseline> AcceptBaseline(int64_t test_id,
                                                      const std::string& accepted_by);

  // Succeeded tests whose verdict is REGRESSED, newest first, at most `limit`; only `model`'s
  // when not empty (NOT_FOUND when no version of it is registered); with latest_only, only
  // those that are the newest succeeded test of their model on their hardware.
  absl::StatusOr<std::vector<v1::CapacityPoint>> Regressions(const std::string& model, int limit,
                                                             bool latest_only = false);

  // The newest `limit` succeeded tests of `model`, oldest first, each with its verdict and
  // baseline when one is in force. NOT_FOUND when no version of `model` is registered.
  absl::StatusOr<std::vector<v1::CapacityPoint>> Trend(const std::string& model, int limit);

  // vanguard_plan(model, peak_qps, headroom, survive_loss): one plan per hardware (capacity,
  // co-location and survivor factors, replicas, cost per request and per output token), with
  // the arguments echoed. NOT_FOUND when no version of `model` is registered; INVALID_ARGUMENT
  // for arguments the function refuses.
  absl::StatusOr<v1::PlanCapacityResponse> Plan(const std::string& model, double peak_qps,
                                                double headroom, int32_t survive_loss);

  // Prices per accelerator-hour (table accelerator_prices, which vanguard_plan reads).
  // SetPrice inserts or replaces `accelerator`'s price (update_time: now) and answers the
  // stored row; ListPrices answers every row, by accelerator. Arguments are not validated
  // here (ValidateSetAcceleratorPriceRequest); the table's CHECK refusing a price maps to
  // INVALID_ARGUMENT.
  absl::StatusOr<v1::AcceleratorPrice> SetPrice(const std::string& accelerator,
                                                double price_per_hour);
  absl::StatusOr<std::vector<v1::AcceleratorPrice>> ListPrices();

 private:
  PostgresPool* pool_;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_CAPACITY_REPOSITORY_H_
