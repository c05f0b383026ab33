#include "kube/workqueue/rate_limiter.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace gpuop::kube {

absl::Duration ItemExponentialRateLimiter::When(const std::string& item) {
  int exponent;
  {
    absl::MutexLock lock(&mu_);
    exponent = failures_[item]++;
  }
  // Duration arithmetic saturates, so only the shift itself needs a bound.
  if (exponent >= 62) return max_;
  return std::min(base_ * (int64_t{1} << exponent), max_);
}

void ItemExponentialRateLimiter::Forget(const std::string& item) {
  absl::MutexLock lock(&mu_);
  failures_.erase(item);
}

int ItemExponentialRateLimiter::NumRequeues(const std::string& item) {
  absl::MutexLock lock(&mu_);
  const auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

namespace {

absl::Duration CheckedInterval(double qps, int burst) {
  if (!(qps > 0) || burst < 1) {
    std::fprintf(stderr, "BucketRateLimiter: qps %g and burst %d must be positive\n", qps, burst);
    std::abort();
  }
  return absl::Seconds(1 / qps);
}

}  // namespace

BucketRateLimiter::BucketRateLimiter(double qps, int burst, const common::Clock& clock)
    : interval_(CheckedInterval(qps, burst)),
      capacity_(interval_ * burst),
      clock_(clock),
      latest_(clock.Now()),
      next_token_(latest_) {}

absl::Duration BucketRateLimiter::When(const std::string& /*item*/) {
  const absl::Time read = clock_.Now();
  absl::MutexLock lock(&mu_);
  // A clock that steps back is treated as standing still: it neither refills nor lengthens waits.
  latest_ = std::max(latest_, read);
  next_token_ = std::max(next_token_, latest_) + interval_;
  return std::max(absl::ZeroDuration(), next_token_ - latest_ - capacity_);
}

absl::Duration MaxOfRateLimiter::When(const std::string& item) {
  absl::Duration longest = absl::ZeroDuration();
  for (const auto& limiter : limiters_) longest = std::max(longest, limiter->When(item));
  return longest;
}

void MaxOfRateLimiter::Forget(const std::string& item) {
  for (const auto& limiter : limiters_) limiter->Forget(item);
}

int MaxOfRateLimiter::NumRequeues(const std::string& item) {
  int most = 0;
  for (const auto& limiter : limiters_) most = std::max(most, limiter->NumRequeues(item));
  return most;
}

std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(const common::Clock& clock) {
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(
      std::make_unique<ItemExponentialRateLimiter>(absl::Milliseconds(5), absl::Seconds(1000)));
  limiters.push_back(std::make_unique<BucketRateLimiter>(10, 100, clock));
  return std::make_unique<MaxOfRateLimiter>(std::move(limiters));
}

}  // namespace gpuop::kube
