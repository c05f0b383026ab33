#include "kube/transport/backoff.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"

namespace gpuop::kube {

absl::Duration BackoffDelay(const BackoffPolicy& policy, int attempt, absl::BitGenRef random) {
  absl::Duration d = policy.base;
  for (int i = 0; i < attempt && d < policy.cap; ++i) d *= 2;
  d = std::min(d, policy.cap);
  const double jitter = std::clamp(policy.jitter, 0.0, 1.0);
  const double factor = absl::Uniform(absl::IntervalClosed, random, 1.0 - jitter, 1.0);
  return d * factor;
}

std::optional<absl::Duration> ParseRetryAfter(absl::string_view value) {
  int64_t seconds;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(value), &seconds) || seconds < 0) {
    return std::nullopt;
  }
  return absl::Seconds(seconds);
}

}  // namespace gpuop::kube
