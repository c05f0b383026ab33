#include "kube/workqueue/work_queue.h"

namespace gpuop::kube {
namespace {

const common::Clock& ClockOrReal(const common::Clock* clock) {
  return clock != nullptr ? *clock : common::Clock::Real();
}

std::optional<WorkQueueMetrics::Queue> MetricsFor(WorkQueueMetrics* metrics,
                                                  const std::string& name) {
  if (metrics == nullptr) return std::nullopt;
  return metrics->ForQueue(name);
}

}  // namespace

WorkQueue::WorkQueue(WorkQueueOptions options)
    : name_(std::move(options.name)),
      clock_(ClockOrReal(options.clock)),
      rate_limiter_(options.rate_limiter != nullptr ? std::move(options.rate_limiter)
                                                    : DefaultControllerRateLimiter(clock_)),
      metrics_(MetricsFor(options.metrics, name_)) {}

void WorkQueue::Add(const std::string& item) {
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  AddLocked(item, now);
}

void WorkQueue::AddLocked(const std::string& item, absl::Time since) {
  if (shutting_down_) return;
  if (!dirty_.try_emplace(item, since).second) return;
  if (metrics_) metrics_->adds->Inc();
  // Done() queues it; queueing it now would let a second worker take it.
  if (processing_.contains(item)) return;
  queue_.push_back(item);
  UpdateDepthLocked();
}

void WorkQueue::AddAfter(const std::string& item, absl::Duration delay) {
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  if (shutting_down_) return;
  if (metrics_) metrics_->retries->Inc();
  if (delay <= absl::ZeroDuration()) {
    AddLocked(item, now);
    return;
  }
  const absl::Time ready = now + delay;
  const auto [it, inserted] = ready_at_.try_emplace(item, ready);
  if (!inserted) {
    if (ready >= it->second) return;
    waiting_.erase({it->second, item});
    it->second = ready;
  }
  waiting_.emplace(ready, item);
}

void WorkQueue::AddRateLimited(const std::string& item) {
  {
    // Don't grow the limiter's memory for an add that will be ignored.
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return;
  }
  AddAfter(item, rate_limiter_->When(item));
}

void WorkQueue::Forget(const std::string& item) { rate_limiter_->Forget(item); }

int WorkQueue::NumRequeues(const std::string& item) { return rate_limiter_->NumRequeues(item); }

void WorkQueue::PromoteReadyLocked(absl::Time now) {
  while (!waiting_.empty() && waiting_.begin()->first <= now) {
    auto node = waiting_.extract(waiting_.begin());
    const auto& [ready, item] = node.value();
    ready_at_.erase(item);
    // The item has been due since `ready`, however late it is noticed.
    AddLocked(item, ready);
  }
}

std::optional<std::string> WorkQueue::Get() {
  absl::MutexLock lock(&mu_);
  while (true) {
    if (shutting_down_) return std::nullopt;
    PromoteReadyLocked(clock_.Now());
    if (!queue_.empty()) break;
    // Sleep until the earliest delayed item is due, or until something changes that makes
    // waiting pointless: a ready item, shutdown, or a delayed item due even earlier.
    const absl::Time deadline = waiting_.empty() ? absl::InfiniteFuture() : waiting_.begin()->first;
    auto wake = [this, deadline]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return shutting_down_ || !queue_.empty() ||
             (!waiting_.empty() && waiting_.begin()->first < deadline);
    };
    clock_.AwaitWithDeadline(mu_, absl::Condition(&wake), deadline);
  }
  std::string item = std::move(queue_.front());
  queue_.pop_front();
  UpdateDepthLocked();
  const auto dirty = dirty_.find(item);
  const absl::Time since = dirty->second;
  dirty_.erase(dirty);
  const absl::Time now = clock_.Now();
  processing_.emplace(item, now);
  if (metrics_) metrics_->queue_duration->Observe(absl::ToDoubleSeconds(now - since));
  return item;
}

void WorkQueue::Done(const std::string& item) {
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  const auto it = processing_.find(item);
  if (it == processing_.end()) return;
  if (metrics_) metrics_->work_duration->Observe(absl::ToDoubleSeconds(now - it->second));
  processing_.erase(it);
  if (dirty_.contains(item)) {
    queue_.push_back(item);
    UpdateDepthLocked();
  }
}

size_t WorkQueue::Len() {
  absl::MutexLock lock(&mu_);
  PromoteReadyLocked(clock_.Now());
  return queue_.size();
}

void WorkQueue::ShutDown() {
  absl::MutexLock lock(&mu_);
  shutting_down_ = true;
  draining_ = false;
}

void WorkQueue::ShutDownWithDrain() {
  absl::MutexLock lock(&mu_);
  shutting_down_ = true;
  draining_ = true;
  auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return processing_.empty() || !draining_;
  };
  while (!drained()) {
    clock_.AwaitWithDeadline(mu_, absl::Condition(&drained), absl::InfiniteFuture());
  }
}

bool WorkQueue::ShuttingDown() const {
  absl::MutexLock lock(&mu_);
  return shutting_down_;
}

void WorkQueue::UpdateDepthLocked() {
  if (metrics_) metrics_->depth->Set(static_cast<double>(queue_.size()));
}

}  // namespace gpuop::kube
