#ifndef GPUOP_KUBE_WORKQUEUE_METRICS_H_
#define GPUOP_KUBE_WORKQUEUE_METRICS_H_

#include <string>

#include "metrics/registry.h"

namespace gpuop::kube {

// The work queue metric families, labelled by queue name:
//   gpuop_workqueue_depth{name}                  gauge: items ready and waiting for a worker
//   gpuop_workqueue_adds_total{name}             counter: items that entered the queue
//   gpuop_workqueue_retries_total{name}          counter: delayed adds (AddAfter and
//                                                AddRateLimited), as client-go counts them
//   gpuop_workqueue_queue_duration_seconds{name} histogram: from add to Get()
//   gpuop_workqueue_work_duration_seconds{name}  histogram: from Get() to Done()
//
// A Registry accepts each name once, so create one WorkQueueMetrics per registry and share it
// between queues. Thread-safe; `registry` must outlive it.
class WorkQueueMetrics {
 public:
  explicit WorkQueueMetrics(metrics::Registry& registry);
  WorkQueueMetrics(const WorkQueueMetrics&) = delete;
  WorkQueueMetrics& operator=(const WorkQueueMetrics&) = delete;

  // One queue's metrics; the pointers live as long as the registry.
  struct Queue {
    metrics::Gauge* depth;
    metrics::Counter* adds;
    metrics::Counter* retries;
    metrics::Histogram* queue_duration;
    metrics::Histogram* work_duration;
  };
  Queue ForQueue(const std::string& name);

 private:
  metrics::Family<metrics::Gauge>& depth_;
  metrics::Family<metrics::Counter>& adds_;
  metrics::Family<metrics::Counter>& retries_;
  metrics::Family<metrics::Histogram>& queue_duration_;
  metrics::Family<metrics::Histogram>& work_duration_;
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_WORKQUEUE_METRICS_H_
