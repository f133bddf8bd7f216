// LISTEN/NOTIFY listener for the test queue; see queue_notifier.h. The listener thread owns
// the connection; the generation is shared under mu_.
#include "orchestrator/queue_notifier.h"

#include <iostream>
#include <memory>

#include "common/postgres.h"
#include "pqxx/pqxx"

namespace vanguard {
namespace {

class Receiver final : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection_base& conn, QueueNotifier* notifier)
      : pqxx::notification_receiver(conn, QueueNotifier::kChannel), notifier_(notifier) {}
  void operator()(const std::string&, int) override { notifier_->Poke(); }

 private:
  QueueNotifier* notifier_;
};

}  // namespace

void QueueNotifier::Start() {
  thread_ = std::thread([this] { Listen(); });
}

void QueueNotifier::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

uint64_t QueueNotifier::generation() const {
  absl::MutexLock lock(&mu_);
  return generation_;
}

bool QueueNotifier::WaitForChange(uint64_t seen, absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto changed = [this, seen]()
                     ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return generation_ != seen || stopped_; };
  mu_.AwaitWithDeadline(absl::Condition(&changed), deadline);
  return generation_ != seen;
}

void QueueNotifier::Poke() {
  absl::MutexLock lock(&mu_);
  ++generation_;
}

bool QueueNotifier::stopped() const {
  absl::MutexLock lock(&mu_);
  return stopped_;
}

bool QueueNotifier::listening() const {
  absl::MutexLock lock(&mu_);
  return listening_;
}

void QueueNotifier::Listen() {
  bool reported = false;
  while (!stop_.HasBeenNotified()) {
    absl::StatusOr<std::unique_ptr<pqxx::connection>> conn =
        ConnectPostgres(options_.conninfo, absl::Seconds(5));
    if (!conn.ok()) {
      if (!reported) std::cerr << "queue notifier: " << conn.status() << std::endl;
      reported = true;
      stop_.WaitForNotificationWithTimeout(options_.reconnect_backoff);
      continue;
    }
    try {
      Receiver receiver(**conn, this);  // issues LISTEN
      {
        absl::MutexLock lock(&mu_);
        listening_ = true;
        ++generation_;  // notifications may have been missed while disconnected
      }
      reported = false;
      while (!stop_.HasBeenNotified()) (*conn)->await_notification(0, 200'000);
    } catch (...) {
      std::cerr << "queue notifier: " << PostgresErrorToStatus(std::current_exception())
                << std::endl;
      stop_.WaitForNotificationWithTimeout(options_.reconnect_backoff);
    }
    absl::MutexLock lock(&mu_);
    listening_ = false;
  }
}

}  // namespace vanguard
