#include "common/clock.h"

namespace gpuop::common {

const Clock& Clock::Real() {
  static const RealClock* const clock = new RealClock();
  return *clock;
}

void Clock::SleepFor(absl::Duration duration) const {
  absl::Mutex mu;
  absl::MutexLock lock(&mu);
  const bool never = false;
  AwaitWithDeadline(mu, absl::Condition(&never), Now() + duration);
}

}  // namespace gpuop::common
