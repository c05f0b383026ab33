#ifndef GPUOP_METRICS_REGISTRY_H_
#define GPUOP_METRICS_REGISTRY_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace gpuop::metrics {

// Metrics in the Prometheus data model, rendered in the text exposition format (version 0.0.4).
// Every type here is thread-safe; updating a metric is a few atomic operations.

class Counter {
 public:
  void Inc(double delta = 1);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double delta);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  // `bounds` are the upper bounds of the buckets, ascending; +Inf is implicit.
  explicit Histogram(std::vector<double> bounds);

  void Observe(double value);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Read() const;

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // bounds_.size() + 1 buckets
  std::atomic<double> sum_{0};
};

// Bucket bounds `start`, `start*factor`, ... (`count` of them).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// One metric name with a fixed set of label names; each distinct tuple of label values is a
// child metric, created on first use and kept for the registry's lifetime.
template <typename Metric>
class Family {
 public:
  // The child for `label_values` (one per label name, in order). Crashes on a count mismatch,
  // which is a programming error.
  Metric& With(const std::vector<std::string>& label_values);
  // The child with no labels, for families declared without label names.
  Metric& Get() { return With({}); }

 private:
  friend class Registry;
  Family(std::string name, std::string help, std::vector<std::string> label_names,
         std::function<std::unique_ptr<Metric>()> make)
      : name_(std::move(name)),
        help_(std::move(help)),
        label_names_(std::move(label_names)),
        make_(std::move(make)) {}

  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::function<std::unique_ptr<Metric>()> make_;
  mutable absl::Mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> children_ ABSL_GUARDED_BY(mu_);
};

// Writes samples in the text format; used by Registry and by collectors that compute values at
// scrape time.
class TextWriter {
 public:
  // Starts a metric: its # HELP and # TYPE lines. `type` is counter, gauge or histogram.
  void Header(absl::string_view name, absl::string_view help, absl::string_view type);
  // One sample line. `labels` are (name, value) pairs; values are escaped here.
  void Sample(absl::string_view name,
              const std::vector<std::pair<std::string, std::string>>& labels, double value);

  const std::string& text() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// A set of metric families. Families are registered once (normally at start-up) and live as
// long as the registry; Render() may run concurrently with updates.
class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Registering a name twice is a programming error and crashes.
  Family<Counter>& AddCounter(const std::string& name, const std::string& help,
                              std::vector<std::string> label_names = {});
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help,
                          std::vector<std::string> label_names = {});
  Family<Histogram>& AddHistogram(const std::string& name, const std::string& help,
                                  std::vector<std::string> label_names, std::vector<double> bounds);
  // A function that writes metrics computed at scrape time (for example a queue's depth).
  void AddCollector(std::function<void(TextWriter&)> collector);

  // All metrics in the text exposition format, families in registration order.
  std::string Render() const;

 private:
  void Claim(const std::string& name);

  mutable absl::Mutex mu_;
  std::vector<std::function<void(TextWriter&)>> renderers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Family<Counter>>> counters_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Family<Gauge>>> gauges_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Family<Histogram>>> histograms_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> names_ ABSL_GUARDED_BY(mu_);
};

// True when `name` is a valid metric or label name.
bool IsValidMetricName(absl::string_view name);

namespace internal {
[[noreturn]] void LabelCountMismatch(const std::string& name, size_t want, size_t got);
}  // namespace internal

template <typename Metric>
Metric& Family<Metric>::With(const std::vector<std::string>& label_values) {
  if (label_values.size() != label_names_.size()) {
    internal::LabelCountMismatch(name_, label_names_.size(), label_values.size());
  }
  absl::MutexLock lock(&mu_);
  auto& child = children_[label_values];
  if (!child) child = make_();
  return *child;
}

}  // namespace gpuop::metrics

#endif  // GPUOP_METRICS_REGISTRY_H_
