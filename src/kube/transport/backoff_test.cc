#include "kube/transport/backoff.h"

#include <gtest/gtest.h>

namespace gpuop::kube {
namespace {

TEST(BackoffTest, DoublesUpToTheCapWithinJitter) {
  absl::BitGen random;
  const BackoffPolicy policy{
      .base = absl::Milliseconds(100), .cap = absl::Seconds(1), .jitter = 0.5};
  const absl::Duration expected[] = {absl::Milliseconds(100), absl::Milliseconds(200),
                                     absl::Milliseconds(400), absl::Milliseconds(800),
                                     absl::Seconds(1),        absl::Seconds(1)};
  for (int attempt = 0; attempt < 6; ++attempt) {
    for (int i = 0; i < 50; ++i) {
      const absl::Duration d = BackoffDelay(policy, attempt, random);
      EXPECT_LE(d, expected[attempt]) << attempt;
      EXPECT_GE(d, expected[attempt] / 2) << attempt;
    }
  }
  // Huge attempt numbers do not overflow.
  EXPECT_LE(BackoffDelay(policy, 10'000, random), absl::Seconds(1));
}

TEST(BackoffTest, NoJitterIsExact) {
  absl::BitGen random;
  EXPECT_EQ(
      BackoffDelay({.base = absl::Seconds(1), .cap = absl::Seconds(60), .jitter = 0}, 3, random),
      absl::Seconds(8));
}

TEST(BackoffTest, RetryAfterSeconds) {
  EXPECT_EQ(ParseRetryAfter("3"), absl::Seconds(3));
  EXPECT_EQ(ParseRetryAfter(" 10 "), absl::Seconds(10));
  EXPECT_EQ(ParseRetryAfter(""), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("-1"), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"), std::nullopt);
}

}  // namespace
}  // namespace gpuop::kube
