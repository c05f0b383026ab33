#include "kube/workqueue/metrics.h"

namespace gpuop::kube {

WorkQueueMetrics::WorkQueueMetrics(metrics::Registry& registry)
    : depth_(registry.AddGauge("gpuop_workqueue_depth",
                               "Items ready in the work queue and waiting for a worker.",
                               {"name"})),
      adds_(registry.AddCounter("gpuop_workqueue_adds_total",
                                "Items added to the work queue (duplicates not counted).",
                                {"name"})),
      retries_(registry.AddCounter("gpuop_workqueue_retries_total",
                                   "Delayed and rate-limited adds to the work queue.", {"name"})),
      // As client-go: 10ns to 1000s, so both fast in-memory work and stuck items show.
      queue_duration_(
          registry.AddHistogram("gpuop_workqueue_queue_duration_seconds",
                                "Seconds an item waits in the work queue before a worker takes it.",
                                {"name"}, metrics::ExponentialBuckets(1e-8, 10, 12))),
      work_duration_(registry.AddHistogram("gpuop_workqueue_work_duration_seconds",
                                           "Seconds a worker spends on an item, Get() to Done().",
                                           {"name"}, metrics::ExponentialBuckets(1e-8, 10, 12))) {}

WorkQueueMetrics::Queue WorkQueueMetrics::ForQueue(const std::string& name) {
  return Queue{
      .depth = &depth_.With({name}),
      .adds = &adds_.With({name}),
      .retries = &retries_.With({name}),
      .queue_duration = &queue_duration_.With({name}),
      .work_duration = &work_duration_.With({name}),
  };
}

}  // namespace gpuop::kube
