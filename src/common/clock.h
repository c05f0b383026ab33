#ifndef GPUOP_COMMON_CLOCK_H_
#define GPUOP_COMMON_CLOCK_H_

#include <stop_token>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gpuop::common {

// Time, injected. Code that waits or schedules takes a Clock so tests can use FakeClock and move
// time by hand instead of sleeping.
//
// Thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;

  virtual absl::Time Now() const = 0;

  // Blocks until `condition` holds or this clock reaches `deadline`, whichever is first, and
  // returns whether `condition` holds. The caller holds `mu`, which guards everything
  // `condition` reads; like absl::Mutex::AwaitWithDeadline, `mu` is released while waiting.
  virtual bool AwaitWithDeadline(absl::Mutex& mu, const absl::Condition& condition,
                                 absl::Time deadline) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;

  // Sleeps for `duration` on this clock.
  void SleepFor(absl::Duration duration) const;

  // Sleeps for `duration` on this clock unless `stop` is requested first; returns false when
  // it was.
  bool SleepFor(absl::Duration duration, std::stop_token stop) const;
  // Sleeps until this clock reads `deadline` unless `stop` is requested first; returns false
  // when it was. For schedules at absolute times that must not drift.
  bool SleepUntil(absl::Time deadline, std::stop_token stop) const;

  // The process-wide real clock.
  static const Clock& Real();
};

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  bool AwaitWithDeadline(absl::Mutex& mu, const absl::Condition& condition,
                         absl::Time deadline) const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return mu.AwaitWithDeadline(condition, deadline);
  }
};

}  // namespace gpuop::common

#endif  // GPUOP_COMMON_CLOCK_H_
