// Interval and cron schedule enqueuer; see schedule_enqueuer.h.
#include "orchestrator/schedule_enqueuer.h"

#include <iostream>

namespace vanguard {

void ScheduleEnqueuer::Start() {
  thread_ = std::thread([this] {
    while (!stop_.WaitForNotificationWithTimeout(options_.interval)) {
      absl::StatusOr<ScheduleRepository::EnqueuePass> pass = RunOnce();
      if (!pass.ok()) {
        std::cerr << "schedule enqueuer: " << pass.status() << std::endl;
        continue;
      }
      for (const std::string& error : pass->errors) {
        std::cerr << "schedule enqueuer: " << error << std::endl;
      }
      if (pass->queued > 0) {
        if (options_.on_queued) options_.on_queued(pass->queued);
        std::cerr << "schedule enqueuer: queued " << pass->queued << " scheduled tests"
                  << std::endl;
      }
    }
  });
}

void ScheduleEnqueuer::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

}  // namespace vanguard
