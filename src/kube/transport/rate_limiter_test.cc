#include "kube/transport/rate_limiter.h"

#include <gtest/gtest.h>

#include "common/fake_clock.h"

namespace gpuop::kube {
namespace {

TEST(TokenBucketTest, BurstThenSustainedRate) {
  common::FakeClock clock;
  TokenBucket bucket(/*qps=*/10, /*burst=*/3, clock);
  EXPECT_EQ(bucket.Reserve(), absl::ZeroDuration());
  EXPECT_EQ(bucket.Reserve(), absl::ZeroDuration());
  EXPECT_EQ(bucket.Reserve(), absl::ZeroDuration());
  // The bucket is empty: reservations queue 100 ms apart.
  EXPECT_EQ(bucket.Reserve(), absl::Milliseconds(100));
  EXPECT_EQ(bucket.Reserve(), absl::Milliseconds(200));
  clock.Advance(absl::Milliseconds(200));
  EXPECT_EQ(bucket.Reserve(), absl::Milliseconds(100));
  // A long idle period refills only up to the burst.
  clock.Advance(absl::Seconds(60));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bucket.Reserve(), absl::ZeroDuration());
  EXPECT_EQ(bucket.Reserve(), absl::Milliseconds(100));
}

TEST(TokenBucketTest, ZeroQpsDisablesLimiting) {
  common::FakeClock clock;
  TokenBucket bucket(0, 1, clock);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(bucket.Reserve(), absl::ZeroDuration());
}

}  // namespace
}  // namespace gpuop::kube
