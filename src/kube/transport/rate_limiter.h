#ifndef GPUOP_KUBE_TRANSPORT_RATE_LIMITER_H_
#define GPUOP_KUBE_TRANSPORT_RATE_LIMITER_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace gpuop::kube {

// A token bucket: `burst` requests at once, then `qps` per second sustained. Each caller
// reserves the next token and waits until it is due, so waiting callers are served in order.
//
// Thread-safe. A qps <= 0 disables limiting.
class TokenBucket {
 public:
  TokenBucket(double qps, int burst, const common::Clock& clock);

  // Reserves one token and returns how long the caller must wait before using it (zero when a
  // token is available now).
  absl::Duration Reserve();

  // Reserve(), then sleep on the clock until the token is due. Returns the time waited.
  absl::Duration Wait();

 private:
  const double qps_;
  const double burst_;
  const common::Clock& clock_;
  absl::Mutex mu_;
  double tokens_ ABSL_GUARDED_BY(mu_);
  absl::Time last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_TRANSPORT_RATE_LIMITER_H_
