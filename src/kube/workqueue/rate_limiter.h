#ifndef GPUOP_KUBE_WORKQUEUE_RATE_LIMITER_H_
#define GPUOP_KUBE_WORKQUEUE_RATE_LIMITER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace gpuop::kube {

// Decides how long an item waits before it is retried, as client-go's workqueue.RateLimiter.
//
// Implementations are thread-safe.
class RateLimiter {
 public:
  virtual ~RateLimiter() = default;

  // How long `item` should wait before its next attempt. Each call counts as one more failure
  // (or, for token buckets, consumes one token), so call it exactly once per retry.
  virtual absl::Duration When(const std::string& item) = 0;
  // Clears what this limiter remembers about `item`, typically after it succeeded. Only
  // per-item state is reset: an overall token bucket keeps its tokens.
  virtual void Forget(const std::string& item) = 0;
  // Failures counted for `item` since it was last forgotten.
  virtual int NumRequeues(const std::string& item) = 0;
};

// Per-item exponential backoff: the n-th When() for an item (counting from 0) returns
// base * 2^n, capped at max. Remembers one counter per item until Forget().
class ItemExponentialRateLimiter final : public RateLimiter {
 public:
  ItemExponentialRateLimiter(absl::Duration base, absl::Duration max) : base_(base), max_(max) {}

  absl::Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) override;

 private:
  const absl::Duration base_;
  const absl::Duration max_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, int> failures_ ABSL_GUARDED_BY(mu_);
};

// One token bucket shared by all items: it holds up to `burst` tokens and refills at `qps`
// tokens per second of `clock` time. Every When() reserves a token and returns how long until
// that token is available, so callers beyond the burst are spaced 1/qps apart; the item itself
// does not matter. Guards the API server against retry storms when many items fail at once.
//
// `clock` must outlive the limiter. Requires qps > 0 and burst >= 1 (crashes otherwise).
class BucketRateLimiter final : public RateLimiter {
 public:
  BucketRateLimiter(double qps, int burst, const common::Clock& clock);

  absl::Duration When(const std::string& item) override;
  void Forget(const std::string& /*item*/) override {}
  int NumRequeues(const std::string& /*item*/) override { return 0; }

 private:
  // Kept as times rather than a token count (the "generic cell rate algorithm"), so the
  // arithmetic is exact: the bucket is full when next_token_ <= now, and each reservation moves
  // next_token_ one interval on; a caller waits for the part beyond the burst's capacity.
  const absl::Duration interval_;  // 1 / qps
  const absl::Duration capacity_;  // burst * interval_
  const common::Clock& clock_;
  absl::Mutex mu_;
  absl::Time latest_ ABSL_GUARDED_BY(mu_);  // latest clock reading seen
  absl::Time next_token_ ABSL_GUARDED_BY(mu_);
};

// Combines limiters: When() asks every one (so each records the attempt) and returns the
// longest delay; NumRequeues() is the largest count; Forget() forgets in all.
class MaxOfRateLimiter final : public RateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters)
      : limiters_(std::move(limiters)) {}

  absl::Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) override;

 private:
  const std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

// client-go's DefaultControllerRateLimiter: max of per-item exponential backoff from 5ms to
// 1000s and an overall bucket of 10 qps with a burst of 100. `clock` must outlive the result.
std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(const common::Clock& clock);

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_WORKQUEUE_RATE_LIMITER_H_
