#ifndef GPUOP_KUBE_CONTROLLER_CONTROLLER_H_
#define GPUOP_KUBE_CONTROLLER_CONTROLLER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "kube/controller/metrics.h"
#include "kube/workqueue/rate_limiter.h"
#include "kube/workqueue/work_queue.h"

namespace gpuop::kube {

// What a successful reconcile asks of the loop, as controller-runtime's reconcile.Result.
struct Result {
  // Reconcile the key again this long after this run, with the backoff reset (for polling
  // something that has no events). Zero or negative: no timed requeue. Wins over `requeue`.
  absl::Duration requeue_after = absl::ZeroDuration();
  // Reconcile the key again after the rate limiter's backoff, without counting an error (for
  // "not ready yet, check again soon").
  bool requeue = false;
};

// Brings the world in line with the desired state of the object named `key`. Level-based: it is
// given only the key and must read current state itself, never trust an event. Runs on a worker
// thread; never concurrently for the same key, but concurrently for different keys when the
// controller has several workers, so it must be thread-safe. It should not throw; when it does
// anyway, the loop turns the exception into an Internal error for that key (see Controller).
//
// An error means "retry with backoff", except InvalidArgument, which is terminal (the user's
// spec is wrong; the fix will come as a change that enqueues the key again). The loop owns
// retries, so a reconciler returns rather than retrying or sleeping itself.
using Reconciler = std::function<absl::StatusOr<Result>(const std::string& key)>;

struct ControllerOptions {
  // Names the controller (and its queue) in metrics and errors. Required.
  std::string name;
  // Reconciles that may run at once, on different keys. At least 1.
  int workers = 1;
  // Backoff for errors and Result::requeue. Null means DefaultControllerRateLimiter(*clock).
  std::unique_ptr<RateLimiter> rate_limiter;
  // Drives delayed requeues and the reconcile time metric. Null means the real clock. Must
  // outlive the controller.
  const common::Clock* clock = nullptr;
  // Null means no metrics. Must outlive the controller.
  ControllerMetrics* metrics = nullptr;
  // Called on the worker thread after each failed reconcile, before its retry is queued; for
  // logging. Optional. Must be thread-safe and quick: it holds up the worker.
  std::function<void(const std::string& key, const absl::Status& error)> on_error;
  // Called on the worker thread when a reconcile throws, with what the exception said, before
  // on_error (which then sees the Internal error it became); for an Event on the object.
  // Optional. Must be thread-safe, quick, and must not throw.
  std::function<void(const std::string& key, const std::string& what)> on_panic;
};

// The reconcile loop of controller-runtime's internal controller: a rate-limited work queue of
// keys and a fixed set of worker threads that take keys from it and reconcile them. The loop,
// not the reconciler, owns retries:
//   error                    AddRateLimited (backoff grows per key), counts an error
//   InvalidArgument error    Forget (terminal: no retry), counts an error
//   Result.requeue_after > 0 Forget (backoff reset), then AddAfter(requeue_after)
//   Result.requeue           AddRateLimited
//   success                  Forget
//   exception thrown         as an Internal error ("reconcile <key>: threw: ..."), also counted
//                            as a panic; the process never terminates from it
// and the key is Done() in every case, so an Enqueue() that arrived during the reconcile runs
// it once more afterwards.
//
// Lifecycle: constructed idle (keys may already be enqueued), Start() once, Stop() once or let
// the destructor do it. A stopped controller cannot be started again.
//
// Thread-safe. Enqueue() and EnqueueAfter() may be called from anywhere, reconcilers included;
// Start() and Stop() must not be called from a reconciler.
class Controller {
 public:
  Controller(ControllerOptions options, Reconciler reconciler);
  // Stops the controller (see Stop()).
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Asks for `key` to be reconciled. Keys enqueued several times before a worker takes them are
  // reconciled once. Ignored once stopping.
  void Enqueue(const std::string& key);
  // Enqueue(key) once `delay` has passed on the controller's clock; a key already waiting keeps
  // the earlier time.
  void EnqueueAfter(const std::string& key, absl::Duration delay);

  // Starts the workers and returns. InvalidArgument for bad options (no name, no reconciler,
  // fewer than 1 worker); FailedPrecondition if already started or stopped.
  [[nodiscard]] absl::Status Start();
  // Stops gracefully: workers take no more keys (keys still queued are dropped; the next run of
  // a level-based controller resyncs them), reconciles in flight run to completion, then the
  // workers are joined. Returns when no reconcile is running. Idempotent; also valid before
  // Start(). Waits on no timer, so it returns as soon as the slowest reconcile in flight does.
  void Stop();

  const std::string& name() const { return name_; }

 private:
  enum class State { kIdle, kRunning, kStopped };

  void Work();
  void ReconcileOne(const std::string& key);
  // The reconciler's answer, with an exception it threw turned into an Internal error.
  absl::StatusOr<Result> Call(const std::string& key);

  const std::string name_;
  const int workers_;
  const common::Clock& clock_;
  const Reconciler reconciler_;
  const std::function<void(const std::string&, const absl::Status&)> on_error_;
  const std::function<void(const std::string&, const std::string&)> on_panic_;
  const std::optional<ControllerMetrics::Instruments> metrics_;
  WorkQueue queue_;

  // Held for the whole of Start() and Stop(), so that when Stop() returns, even in a second
  // caller, the workers have been joined.
  absl::Mutex lifecycle_mu_;
  State state_ ABSL_GUARDED_BY(lifecycle_mu_) = State::kIdle;
  // Workers end when the queue shuts down rather than through a stop_token: Get() is where
  // they block, and the queue's shutdown wakes it.
  std::vector<std::jthread> threads_ ABSL_GUARDED_BY(lifecycle_mu_);
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_CONTROLLER_CONTROLLER_H_
