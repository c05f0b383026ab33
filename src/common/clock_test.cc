#include "common/clock.h"

#include <thread>

#include <gtest/gtest.h>

#include "common/fake_clock.h"

namespace gpuop::common {
namespace {

TEST(RealClockTest, AwaitReturnsAtDeadlineWhenConditionStaysFalse) {
  const Clock& clock = Clock::Real();
  absl::Mutex mu;
  bool flag = false;
  absl::MutexLock lock(&mu);
  const absl::Time start = clock.Now();
  EXPECT_FALSE(clock.AwaitWithDeadline(mu, absl::Condition(&flag), start + absl::Milliseconds(20)));
  EXPECT_GE(clock.Now() - start, absl::Milliseconds(20));
}

TEST(FakeClockTest, NowMovesOnlyWhenAdvanced) {
  FakeClock clock(absl::FromUnixSeconds(100));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(100));
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(105));
  clock.SetTime(absl::FromUnixSeconds(200));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(200));
}

TEST(FakeClockTest, WaiterWakesWhenTimeReachesDeadline) {
  FakeClock clock;
  absl::Mutex mu;
  bool flag = false;
  std::atomic<bool> returned{false};
  bool result = true;
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    result = clock.AwaitWithDeadline(mu, absl::Condition(&flag), clock.Now() + absl::Hours(1));
    returned = true;
  });
  clock.AwaitWaiters(1);
  clock.Advance(absl::Minutes(59));
  absl::SleepFor(absl::Milliseconds(20));  // Real time passes; fake time has not reached it.
  EXPECT_FALSE(returned);
  clock.Advance(absl::Minutes(1));
  waiter.join();
  EXPECT_TRUE(returned);
  EXPECT_FALSE(result);
  EXPECT_EQ(clock.waiters(), 0);
}

TEST(FakeClockTest, WaiterWakesWhenConditionTurnsTrue) {
  FakeClock clock;
  absl::Mutex mu;
  bool flag = false;
  bool result = false;
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    result = clock.AwaitWithDeadline(mu, absl::Condition(&flag), clock.Now() + absl::Hours(1));
  });
  clock.AwaitWaiters(1);
  {
    absl::MutexLock lock(&mu);
    flag = true;
  }
  waiter.join();
  EXPECT_TRUE(result);
}

TEST(FakeClockTest, SleepForReturnsAfterAdvance) {
  FakeClock clock;
  std::thread sleeper([&] { clock.SleepFor(absl::Seconds(30)); });
  clock.AwaitWaiters(1);
  clock.Advance(absl::Seconds(30));
  sleeper.join();
  EXPECT_EQ(clock.waiters(), 0);
}

}  // namespace
}  // namespace gpuop::common
