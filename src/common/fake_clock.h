#ifndef GPUOP_COMMON_FAKE_CLOCK_H_
#define GPUOP_COMMON_FAKE_CLOCK_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"

namespace gpuop::common {

// A Clock that only moves when told to. Waiters whose deadline is reached by Advance() or
// SetTime() wake up (within a millisecond of real time) as they would on a real clock; waiters
// whose condition becomes true wake up at once, as usual.
//
// Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000)) : now_(start) {}

  absl::Time Now() const override;
  bool AwaitWithDeadline(absl::Mutex& mu, const absl::Condition& condition,
                         absl::Time deadline) const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  void Advance(absl::Duration duration);
  void SetTime(absl::Time time);

  // Number of threads blocked in AwaitWithDeadline right now. Lets a test wait until a worker is
  // parked before moving time.
  int waiters() const;
  // Blocks (in real time) until at least `count` threads wait on this clock.
  void AwaitWaiters(int count) const;

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  mutable int waiters_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gpuop::common

#endif  // GPUOP_COMMON_FAKE_CLOCK_H_
