#include "replayer/endpoint_accounting.h"

#include <algorithm>

#include "replayer/step_accounting.h"

namespace vanguard::replayer {
namespace {

int64_t ToMicros(absl::Duration d) { return std::max<int64_t>(0, absl::ToInt64Microseconds(d)); }

}  // namespace

void EndpointTally::Merge(const EndpointTally& other) {
  dispatched += other.dispatched;
  sent += other.sent;
  completed += other.completed;
  errors += other.errors;
  timeouts += other.timeouts;
  peak_in_flight += other.peak_in_flight;
  latency.Merge(other.latency);
}

EndpointAccounting::EndpointAccounting(int endpoints, absl::Duration warmup)
    : warmup_(warmup),
      in_flight_(static_cast<size_t>(std::max(1, endpoints)), 0),
      tallies_(static_cast<size_t>(std::max(1, endpoints))) {}

void EndpointAccounting::OnDispatched(int endpoint, absl::Duration intended) {
  const int open = ++in_flight_[endpoint];
  if (!IsMeasured(intended)) return;
  EndpointTally& t = tallies_[endpoint];
  ++t.dispatched;
  t.peak_in_flight = std::max<int64_t>(t.peak_in_flight, open);
}

void EndpointAccounting::OnSent(int endpoint, absl::Duration intended) {
  if (IsMeasured(intended)) ++tallies_[endpoint].sent;
}

void EndpointAccounting::OnSuccess(int endpoint, absl::Duration intended, absl::Duration latency) {
  Resolved(endpoint);
  if (!IsMeasured(intended)) return;
  EndpointTally& t = tallies_[endpoint];
  ++t.completed;
  t.latency.Record(ToMicros(latency));
}

void EndpointAccounting::OnError(int endpoint, absl::Duration intended) {
  Resolved(endpoint);
  if (IsMeasured(intended)) ++tallies_[endpoint].errors;
}

void EndpointAccounting::OnTimeout(int endpoint, absl::Duration intended) {
  Resolved(endpoint);
  if (IsMeasured(intended)) ++tallies_[endpoint].timeouts;
}

void EndpointAccounting::Resolved(int endpoint) {
  if (in_flight_[endpoint] > 0) --in_flight_[endpoint];
}

void AddEndpointTelemetry(const std::vector<EndpointTally>& tallies,
                          const std::vector<std::string>& targets, absl::Duration measured,
                          v1::StepResult* result) {
  std::vector<int64_t> dispatched;
  int64_t total = 0;
  for (const EndpointTally& t : tallies) {
    dispatched.push_back(t.dispatched);
    total += t.dispatched;
  }
  const double seconds = absl::ToDoubleSeconds(measured);
  for (size_t i = 0; i < tallies.size(); ++i) {
    const EndpointTally& t = tallies[i];
    v1::EndpointTelemetry* e = result->add_endpoints();
    if (i < targets.size()) e->set_target(targets[i]);
    e->set_dispatched(t.dispatched);
    e->set_sent(t.sent);
    e->set_completed(t.completed);
    e->set_errors(t.errors);
    e->set_timeouts(t.timeouts);
    e->set_achieved_qps(seconds > 0 ? static_cast<double>(t.completed) / seconds : 0);
    *e->mutable_latency() = Summarize(t.latency);
    e->set_peak_in_flight(t.peak_in_flight);
    e->set_share(total > 0 ? static_cast<double>(t.dispatched) / static_cast<double>(total) : 0);
    e->set_latency_histogram(t.latency.Serialize());
  }
  result->set_endpoint_imbalance(LoadImbalance(dispatched));
}

}  // namespace vanguard::replayer
