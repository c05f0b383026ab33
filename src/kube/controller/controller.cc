#include "kube/controller/controller.h"

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gpuop::kube {
namespace {

const common::Clock& ClockOrReal(const common::Clock* clock) {
  return clock != nullptr ? *clock : common::Clock::Real();
}

std::optional<ControllerMetrics::Instruments> InstrumentsFor(ControllerMetrics* metrics,
                                                             const std::string& name) {
  if (metrics == nullptr) return std::nullopt;
  return metrics->ForController(name);
}

}  // namespace

Controller::Controller(ControllerOptions options, Reconciler reconciler)
    : name_(std::move(options.name)),
      workers_(options.workers),
      clock_(ClockOrReal(options.clock)),
      reconciler_(std::move(reconciler)),
      on_error_(std::move(options.on_error)),
      on_panic_(std::move(options.on_panic)),
      metrics_(InstrumentsFor(options.metrics, name_)),
      queue_({
          .name = name_,
          .clock = &clock_,
          .rate_limiter = std::move(options.rate_limiter),
          .metrics = options.metrics != nullptr ? &options.metrics->workqueue() : nullptr,
      }) {}

Controller::~Controller() { Stop(); }

void Controller::Enqueue(const std::string& key) { queue_.Add(key); }

void Controller::EnqueueAfter(const std::string& key, absl::Duration delay) {
  queue_.AddAfter(key, delay);
}

absl::Status Controller::Start() {
  absl::MutexLock lock(&lifecycle_mu_);
  if (name_.empty()) return absl::InvalidArgumentError("start controller: no name");
  if (!reconciler_) {
    return absl::InvalidArgumentError(absl::StrCat("start controller ", name_, ": no reconciler"));
  }
  if (workers_ < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("start controller ", name_, ": workers is ", workers_, ", want at least 1"));
  }
  switch (state_) {
    case State::kIdle:
      break;
    case State::kRunning:
      return absl::FailedPreconditionError(
          absl::StrCat("start controller ", name_, ": already started"));
    case State::kStopped:
      return absl::FailedPreconditionError(
          absl::StrCat("start controller ", name_, ": stopped, and cannot be restarted"));
  }
  state_ = State::kRunning;
  if (metrics_) metrics_->max_concurrent_reconciles->Set(workers_);
  threads_.reserve(workers_);
  for (int i = 0; i < workers_; ++i) threads_.emplace_back([this] { Work(); });
  return absl::OkStatus();
}

void Controller::Stop() {
  absl::MutexLock lock(&lifecycle_mu_);
  if (state_ == State::kStopped) return;
  state_ = State::kStopped;
  // Drain rather than a plain ShutDown(): the wait for reconciles in flight then goes through
  // the injected clock like every other blocking wait (tests see it as a FakeClock waiter), and
  // the joins only collect threads already on their way out of Get().
  queue_.ShutDownWithDrain();
  for (std::jthread& thread : threads_) thread.join();
  threads_.clear();
}

void Controller::Work() {
  while (std::optional<std::string> key = queue_.Get()) {
    ReconcileOne(*key);
    queue_.Done(*key);
  }
}

absl::StatusOr<Result> Controller::Call(const std::string& key) {
  std::string what;
  try {
    return reconciler_(key);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "an exception that is not a std::exception";
  }
  if (metrics_) metrics_->panics->Inc();
  if (on_panic_) on_panic_(key, what);
  return absl::InternalError(absl::StrCat("reconcile ", key, ": threw: ", what));
}

void Controller::ReconcileOne(const std::string& key) {
  if (metrics_) metrics_->active_workers->Add(1);
  const absl::Time start = clock_.Now();
  const absl::StatusOr<Result> result = Call(key);
  if (metrics_) {
    metrics_->reconcile_time->Observe(absl::ToDoubleSeconds(clock_.Now() - start));
    metrics_->active_workers->Add(-1);
  }

  if (!result.ok()) {
    if (on_error_) on_error_(key, result.status());
    // InvalidArgument means the user's spec is wrong: retrying cannot help, and the fix arrives
    // as a change event that enqueues the key again.
    if (result.status().code() == absl::StatusCode::kInvalidArgument) {
      queue_.Forget(key);
    } else {
      queue_.AddRateLimited(key);
    }
    if (metrics_) {
      metrics_->errors->Inc();
      metrics_->error->Inc();
    }
  } else if (result->requeue_after > absl::ZeroDuration()) {
    // A timed requeue is a schedule, not a failure: the next error backs off from the base.
    queue_.Forget(key);
    queue_.AddAfter(key, result->requeue_after);
    if (metrics_) metrics_->requeue_after->Inc();
  } else if (result->requeue) {
    queue_.AddRateLimited(key);
    if (metrics_) metrics_->requeue->Inc();
  } else {
    queue_.Forget(key);
    if (metrics_) metrics_->success->Inc();
  }
}

}  // namespace gpuop::kube
