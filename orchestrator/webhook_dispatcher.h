// Tells webhooks of regressions: each pass creates the deliveries of new `regressed`
// verdicts (WebhookRepository::CreateDeliveries), then claims due deliveries one at a time,
// POSTs each body signed with its webhook's secret (X-Vanguard-Signature, see
// webhook_signature.h) and records the outcome: a 2xx answer delivers it; anything else
// (another status, no answer, a refused target) is retried on `retry`'s backoff until its
// attempts run out, then stored as failed. The stored error is the status code and a fixed
// message, never what the endpoint answered.
//
//   WebhookDispatcher dispatcher(&webhooks, &sender, Clock::Real(), {});
//   dispatcher.Start();   // background thread; Stop() or the destructor ends it
//   ASSIGN_OR_RETURN(WebhookDispatcher::Pass pass, dispatcher.RunOnce());  // tests
//
// Deliveries survive a crash: one claimed by a dispatcher that died is claimed again once
// its claim (claim_for) lapses, by any replica. Every replica may run one; claims keep them
// from sending the same delivery at once. Times come from the injected clock.
// Start/Stop from the owning thread; RunOnce from one thread at a time.
#ifndef VANGUARD_ORCHESTRATOR_WEBHOOK_DISPATCHER_H_
#define VANGUARD_ORCHESTRATOR_WEBHOOK_DISPATCHER_H_

#include <functional>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "orchestrator/webhook_repository.h"
#include "orchestrator/webhook_retry.h"
#include "orchestrator/webhook_sender.h"

namespace vanguard {

class WebhookDispatcher {
 public:
  struct Options {
    absl::Duration interval = absl::Seconds(5);
    // How long a claimed delivery is held before another dispatcher may take it: longer than
    // the sender's timeout.
    absl::Duration claim_for = absl::Minutes(2);
    WebhookRetryPolicy retry;
    int max_per_pass = 50;  // deliveries sent in one pass at most
    // Told each background pass's outcomes (e.g. for metrics); called on the dispatcher
    // thread.
    std::function<void(int delivered, int retrying, int failed)> on_attempts;
  };

  struct Pass {
    int created = 0;    // deliveries created for new regressions
    int delivered = 0;  // answered 2xx
    int retrying = 0;   // failed, tried again later
    int failed = 0;     // failed and given up
  };

  WebhookDispatcher(WebhookRepository* webhooks, WebhookSender* sender, Clock* clock,
                    Options options)
      : webhooks_(webhooks), sender_(sender), clock_(clock), options_(options) {}
  ~WebhookDispatcher() { Stop(); }
  WebhookDispatcher(const WebhookDispatcher&) = delete;
  WebhookDispatcher& operator=(const WebhookDispatcher&) = delete;

  // One pass: create deliveries, then send those due (at most max_per_pass). Errors are the
  // database's; a failed POST is an outcome, recorded, not an error.
  absl::StatusOr<Pass> RunOnce();

  // A pass every interval on a background thread until Stop(); errors are logged to stderr.
  void Start();
  void Stop();

 private:
  // POSTs one claimed delivery and records the outcome in *pass.
  absl::Status Deliver(const WebhookDelivery& delivery, Pass* pass);

  WebhookRepository* webhooks_;
  WebhookSender* sender_;
  Clock* clock_;
  const Options options_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_WEBHOOK_DISPATCHER_H_
