#ifndef GPUOP_KUBE_WORKQUEUE_WORK_QUEUE_H_
#define GPUOP_KUBE_WORKQUEUE_WORK_QUEUE_H_

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "kube/workqueue/metrics.h"
#include "kube/workqueue/rate_limiter.h"

namespace gpuop::kube {

struct WorkQueueOptions {
  // Names the queue in metrics.
  std::string name;
  // Drives delayed adds and the latency metrics. Null means the real clock. Must outlive the
  // queue.
  const common::Clock* clock = nullptr;
  // Null means DefaultControllerRateLimiter(*clock).
  std::unique_ptr<RateLimiter> rate_limiter;
  // Null means no metrics. Must outlive the queue.
  WorkQueueMetrics* metrics = nullptr;
};

// A work queue of string keys with the semantics of client-go's rate-limited workqueue:
//
// - Deduplicating: an item added several times before a worker takes it is handed out once.
// - Exclusive: an item is handed to at most one worker at a time. Between Get() and Done() the
//   item is "processing"; an Add() of it meanwhile marks it dirty, and Done() queues it again,
//   so the change that caused the Add() is seen by a later run.
// - FIFO among ready items.
// - Delayed adds (AddAfter, AddRateLimited) wait on the injected clock; an item already waiting
//   keeps the earlier of its ready times. Items whose time has come are moved to the ready
//   queue by Get() and Len(), so a FakeClock's Advance() makes them available.
//
// Unlike client-go, Get() hands out nothing once shutdown begins, not even items still queued:
// a stopping controller should stop promptly, and being level-based it resyncs everything when
// it starts again.
//
// Thread-safe. Every blocking wait goes through the injected clock, so with a FakeClock a test
// can see blocked callers with FakeClock::AwaitWaiters(). No thread may be blocked in Get() or
// ShutDownWithDrain() when the queue is destroyed.
class WorkQueue {
 public:
  explicit WorkQueue(WorkQueueOptions options = {});
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `item` unless it is already queued or shutdown has begun. If `item` is being
  // processed it is marked dirty and queued again when Done() is called for it.
  void Add(const std::string& item);
  // Add(item) once `delay` has passed on the clock; at once if `delay` <= 0. If `item` is already
  // waiting, it keeps the earlier of the two ready times. Ignored after shutdown. Counts a retry.
  void AddAfter(const std::string& item, absl::Duration delay);
  // AddAfter(item, rate_limiter.When(item)): the rate limiter records one more failure.
  void AddRateLimited(const std::string& item);
  // Clears the rate limiter's memory of `item` (its backoff starts again from the base). Does
  // not remove `item` from the queue.
  void Forget(const std::string& item);
  // Failures the rate limiter counts for `item` since it was last forgotten.
  [[nodiscard]] int NumRequeues(const std::string& item);

  // Blocks until an item is ready and returns it, now marked as processing; the caller must
  // call Done(item) when finished with it. Returns nullopt once shutdown has begun, at once for
  // callers already blocked.
  [[nodiscard]] std::optional<std::string> Get();
  // Ends processing of `item`; if it was added meanwhile, queues it again. Ignored for an item
  // that is not being processed.
  void Done(const std::string& item);

  // Items ready for Get(): not those waiting for a delay, nor dirty ones still being processed.
  [[nodiscard]] size_t Len();

  // Starts shutdown: later adds are ignored and every Get() returns nullopt. Items being
  // processed may still be passed to Done(). Idempotent. If ShutDownWithDrain() is waiting,
  // it stops waiting and returns.
  void ShutDown();
  // ShutDown(), then blocks until every item being processed is Done().
  void ShutDownWithDrain();
  [[nodiscard]] bool ShuttingDown() const;

  const std::string& name() const { return name_; }

 private:
  // Adds `item` as if by Add(); `since` is when the need arose, for the queue latency metric.
  void AddLocked(const std::string& item, absl::Time since) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves delayed items whose ready time is at or before `now` into the queue.
  void PromoteReadyLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateDepthLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string name_;
  const common::Clock& clock_;
  const std::unique_ptr<RateLimiter> rate_limiter_;
  const std::optional<WorkQueueMetrics::Queue> metrics_;

  mutable absl::Mutex mu_;
  // Invariants: every item in queue_ is in dirty_ and not in processing_; queue_ has no
  // duplicates; waiting_ and ready_at_ hold the same items.
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  // Items that need processing, with the time the need arose.
  absl::flat_hash_map<std::string, absl::Time> dirty_ ABSL_GUARDED_BY(mu_);
  // Items handed out by Get() and not yet Done(), with the time they were handed out.
  absl::flat_hash_map<std::string, absl::Time> processing_ ABSL_GUARDED_BY(mu_);
  // Delayed items ordered by ready time, and each delayed item's ready time.
  std::set<std::pair<absl::Time, std::string>> waiting_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::Time> ready_at_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_WORKQUEUE_WORK_QUEUE_H_
