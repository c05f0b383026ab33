#include "common/fake_clock.h"

namespace gpuop::common {

absl::Time FakeClock::Now() const {
  absl::MutexLock lock(&mu_);
  return now_;
}

bool FakeClock::AwaitWithDeadline(absl::Mutex& mu, const absl::Condition& condition,
                                  absl::Time deadline) const {
  {
    absl::MutexLock lock(&mu_);
    ++waiters_;
  }
  // Waiters poll the fake time every millisecond of real time rather than being woken by
  // Advance(): Advance() would have to lock waiters' mutexes, which may be destroyed the moment
  // their wait ends. A condition that becomes true still wakes the waiter at once.
  while (!condition.Eval() && Now() < deadline) {
    mu.AwaitWithTimeout(condition, absl::Milliseconds(1));
  }
  {
    absl::MutexLock lock(&mu_);
    --waiters_;
  }
  return condition.Eval();
}

void FakeClock::Advance(absl::Duration duration) {
  absl::MutexLock lock(&mu_);
  now_ += duration;
}

void FakeClock::SetTime(absl::Time time) {
  absl::Duration delta;
  {
    absl::MutexLock lock(&mu_);
    delta = time - now_;
  }
  Advance(delta);
}

int FakeClock::waiters() const {
  absl::MutexLock lock(&mu_);
  return waiters_;
}

void FakeClock::AwaitWaiters(int count) const {
  absl::MutexLock lock(&mu_);
  auto enough = [this, count]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return waiters_ >= count; };
  mu_.Await(absl::Condition(&enough));
}

}  // namespace gpuop::common
