#include "kube/workqueue/rate_limiter.h"

#include <string>

#include <gtest/gtest.h>

#include "common/fake_clock.h"

namespace gpuop::kube {
namespace {

TEST(ItemExponentialRateLimiterTest, DoublesPerFailureUpToMax) {
  ItemExponentialRateLimiter limiter(absl::Milliseconds(5), absl::Seconds(1));
  const absl::Duration want[] = {
      absl::Milliseconds(5),   absl::Milliseconds(10),  absl::Milliseconds(20),
      absl::Milliseconds(40),  absl::Milliseconds(80),  absl::Milliseconds(160),
      absl::Milliseconds(320), absl::Milliseconds(640), absl::Seconds(1),
      absl::Seconds(1),
  };
  for (int i = 0; i < static_cast<int>(std::size(want)); ++i) {
    EXPECT_EQ(limiter.NumRequeues("a"), i);
    EXPECT_EQ(limiter.When("a"), want[i]) << "failure " << i;
  }
  EXPECT_EQ(limiter.NumRequeues("a"), 10);
}

TEST(ItemExponentialRateLimiterTest, CountsEachItemSeparately) {
  ItemExponentialRateLimiter limiter(absl::Seconds(1), absl::Minutes(1));
  EXPECT_EQ(limiter.When("a"), absl::Seconds(1));
  EXPECT_EQ(limiter.When("a"), absl::Seconds(2));
  EXPECT_EQ(limiter.When("b"), absl::Seconds(1));
  EXPECT_EQ(limiter.NumRequeues("a"), 2);
  EXPECT_EQ(limiter.NumRequeues("b"), 1);
  EXPECT_EQ(limiter.NumRequeues("never-seen"), 0);
}

TEST(ItemExponentialRateLimiterTest, ForgetStartsAgainFromBase) {
  ItemExponentialRateLimiter limiter(absl::Seconds(1), absl::Minutes(1));
  (void)limiter.When("a");
  (void)limiter.When("a");
  (void)limiter.When("b");
  limiter.Forget("a");
  EXPECT_EQ(limiter.NumRequeues("a"), 0);
  EXPECT_EQ(limiter.When("a"), absl::Seconds(1));
  EXPECT_EQ(limiter.NumRequeues("b"), 1);
}

TEST(ItemExponentialRateLimiterTest, ManyFailuresStayAtMaxWithoutOverflow) {
  ItemExponentialRateLimiter limiter(absl::Milliseconds(5), absl::Seconds(1000));
  absl::Duration last;
  for (int i = 0; i < 200; ++i) last = limiter.When("a");
  EXPECT_EQ(last, absl::Seconds(1000));
}

TEST(BucketRateLimiterTest, AllowsBurstThenSpacesCallsAtQps) {
  common::FakeClock clock;
  BucketRateLimiter limiter(4, 2, clock);
  EXPECT_EQ(limiter.When("a"), absl::ZeroDuration());
  EXPECT_EQ(limiter.When("b"), absl::ZeroDuration());
  // The burst is spent: each further token is promised a quarter second after the previous.
  EXPECT_EQ(limiter.When("c"), absl::Milliseconds(250));
  EXPECT_EQ(limiter.When("a"), absl::Milliseconds(500));
}

TEST(BucketRateLimiterTest, RefillsWithTimeUpToBurst) {
  common::FakeClock clock;
  BucketRateLimiter limiter(4, 2, clock);
  for (int i = 0; i < 4; ++i) (void)limiter.When("x");  // Two promised beyond the burst.
  clock.Advance(absl::Milliseconds(250));
  // The first quarter second only pays back a promised token.
  EXPECT_EQ(limiter.When("x"), absl::Milliseconds(500));
  clock.Advance(absl::Hours(1));
  // A long idle period refills the bucket to the burst, no further.
  EXPECT_EQ(limiter.When("x"), absl::ZeroDuration());
  EXPECT_EQ(limiter.When("x"), absl::ZeroDuration());
  EXPECT_EQ(limiter.When("x"), absl::Milliseconds(250));
}

TEST(BucketRateLimiterTest, HasNoPerItemState) {
  common::FakeClock clock;
  BucketRateLimiter limiter(1, 1, clock);
  (void)limiter.When("a");
  EXPECT_EQ(limiter.NumRequeues("a"), 0);
  limiter.Forget("a");
  // Forget does not give the token back.
  EXPECT_EQ(limiter.When("a"), absl::Seconds(1));
}

TEST(MaxOfRateLimiterTest, ReturnsLongestDelayAndConsultsEveryLimiter) {
  common::FakeClock clock;
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(
      std::make_unique<ItemExponentialRateLimiter>(absl::Seconds(1), absl::Hours(1)));
  limiters.push_back(std::make_unique<BucketRateLimiter>(1, 1, clock));
  MaxOfRateLimiter limiter(std::move(limiters));
  EXPECT_EQ(limiter.When("a"), absl::Seconds(1));  // Backoff 1s; bucket 0.
  EXPECT_EQ(limiter.When("a"), absl::Seconds(2));  // Backoff 2s; bucket 1s.
  EXPECT_EQ(limiter.When("b"), absl::Seconds(2));  // Backoff 1s; bucket 2s.
  EXPECT_EQ(limiter.NumRequeues("a"), 2);
  limiter.Forget("a");
  EXPECT_EQ(limiter.NumRequeues("a"), 0);
  EXPECT_EQ(limiter.NumRequeues("b"), 1);
}

TEST(DefaultControllerRateLimiterTest, BacksOffPerItemAndLimitsOverallRate) {
  common::FakeClock clock;
  auto limiter = DefaultControllerRateLimiter(clock);
  EXPECT_EQ(limiter->When("a"), absl::Milliseconds(5));
  EXPECT_EQ(limiter->When("a"), absl::Milliseconds(10));
  // 98 more distinct items spend the burst of 100 at 5ms each.
  for (int i = 0; i < 98; ++i) {
    EXPECT_EQ(limiter->When("item-" + std::to_string(i)), absl::Milliseconds(5));
  }
  // Beyond the burst the 10 qps bucket dominates a fresh item's 5ms backoff.
  EXPECT_EQ(limiter->When("b"), absl::Milliseconds(100));
  for (int i = 0; i < 30; ++i) (void)limiter->When("a");
  EXPECT_EQ(limiter->When("a"), absl::Seconds(1000));
}

}  // namespace
}  // namespace gpuop::kube
