// The replayer's open-file budget; see open_files.h.
#include "replayer/open_files.h"

#include <sys/resource.h>

#include <algorithm>
#include <limits>

namespace vanguard::replayer {
namespace {

rlim_t SoftLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  return limit.rlim_cur;
}

}  // namespace

void RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

int ConnectionBudget() {
  const rlim_t soft = SoftLimit();
  const rlim_t most = static_cast<rlim_t>(std::numeric_limits<int>::max());
  const rlim_t usable = soft == RLIM_INFINITY ? most : std::min(soft, most);
  return usable > static_cast<rlim_t>(kReservedFiles) + 1
             ? static_cast<int>(usable - kReservedFiles)
             : 1;
}

}  // namespace vanguard::replayer
