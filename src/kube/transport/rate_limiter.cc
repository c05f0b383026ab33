#include "kube/transport/rate_limiter.h"

#include <algorithm>

namespace gpuop::kube {

TokenBucket::TokenBucket(double qps, int burst, const common::Clock& clock)
    : qps_(qps),
      burst_(std::max(1, burst)),
      clock_(clock),
      tokens_(std::max(1, burst)),
      last_(clock.Now()) {}

absl::Duration TokenBucket::Reserve() {
  if (qps_ <= 0) return absl::ZeroDuration();
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  if (now > last_) {
    tokens_ = std::min(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * qps_);
    last_ = now;
  }
  // Tokens may go negative: each reservation takes its place in line.
  tokens_ -= 1;
  if (tokens_ >= 0) return absl::ZeroDuration();
  return absl::Seconds(-tokens_ / qps_);
}

absl::Duration TokenBucket::Wait() {
  const absl::Duration wait = Reserve();
  if (wait > absl::ZeroDuration()) clock_.SleepFor(wait);
  return wait;
}

}  // namespace gpuop::kube
