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

bool Clock::SleepFor(absl::Duration duration, std::stop_token stop) const {
  return SleepUntil(Now() + duration, std::move(stop));
}

bool Clock::SleepUntil(absl::Time deadline, std::stop_token stop) const {
  absl::Mutex mu;
  bool stopped = false;
  std::stop_callback on_stop(stop, [&] {
    absl::MutexLock lock(&mu);
    stopped = true;
  });
  absl::MutexLock lock(&mu);
  AwaitWithDeadline(mu, absl::Condition(&stopped), deadline);
  return !stopped;
}

}  // namespace gpuop::common
