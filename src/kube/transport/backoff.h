#ifndef GPUOP_KUBE_TRANSPORT_BACKOFF_H_
#define GPUOP_KUBE_TRANSPORT_BACKOFF_H_

#include <optional>

#include "absl/random/bit_gen_ref.h"
#include "absl/random/random.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gpuop::kube {

struct BackoffPolicy {
  absl::Duration base = absl::Milliseconds(100);
  absl::Duration cap = absl::Seconds(10);
  // The delay is drawn uniformly from [d * (1 - jitter), d] where d = min(cap, base * 2^attempt).
  double jitter = 0.5;
};

// The delay before retry number `attempt` (0 for the first retry).
absl::Duration BackoffDelay(const BackoffPolicy& policy, int attempt, absl::BitGenRef random);

// A Retry-After header in delta-seconds form ("3"), or nullopt when absent or not a number.
std::optional<absl::Duration> ParseRetryAfter(absl::string_view value);

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_TRANSPORT_BACKOFF_H_
