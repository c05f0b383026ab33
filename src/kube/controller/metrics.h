#ifndef GPUOP_KUBE_CONTROLLER_METRICS_H_
#define GPUOP_KUBE_CONTROLLER_METRICS_H_

#include <string>

#include "kube/workqueue/metrics.h"
#include "metrics/registry.h"

namespace gpuop::kube {

// The controller metric families, labelled by controller name, after controller-runtime's:
//   gpuop_controller_reconcile_total{controller,result}  counter; result is success, error,
//                                                         requeue or requeue_after
//   gpuop_controller_reconcile_errors_total{controller}  counter
//   gpuop_controller_reconcile_panics_total{controller}  counter: reconciles that threw (each
//                                                         also an error)
//   gpuop_controller_reconcile_time_seconds{controller}  histogram, measured on the controller's
//                                                         clock
//   gpuop_controller_active_workers{controller}          gauge: reconciles running now
//   gpuop_controller_max_concurrent_reconciles{controller} gauge: the number of workers
// plus the work queue families (see WorkQueueMetrics), which every controller's queue reports
// under the controller's name.
//
// A Registry accepts each name once, so create one ControllerMetrics per registry and share it
// between controllers; do not also create a WorkQueueMetrics on that registry, use workqueue().
// Thread-safe; `registry` must outlive it.
class ControllerMetrics {
 public:
  explicit ControllerMetrics(metrics::Registry& registry);
  ControllerMetrics(const ControllerMetrics&) = delete;
  ControllerMetrics& operator=(const ControllerMetrics&) = delete;

  // One controller's metrics; the pointers live as long as the registry.
  struct Instruments {
    metrics::Counter* success;
    metrics::Counter* error;
    metrics::Counter* requeue;
    metrics::Counter* requeue_after;
    metrics::Counter* errors;
    metrics::Counter* panics;
    metrics::Histogram* reconcile_time;
    metrics::Gauge* active_workers;
    metrics::Gauge* max_concurrent_reconciles;
  };
  Instruments ForController(const std::string& name);

  WorkQueueMetrics& workqueue() { return workqueue_; }

 private:
  metrics::Family<metrics::Counter>& total_;
  metrics::Family<metrics::Counter>& errors_;
  metrics::Family<metrics::Counter>& panics_;
  metrics::Family<metrics::Histogram>& reconcile_time_;
  metrics::Family<metrics::Gauge>& active_workers_;
  metrics::Family<metrics::Gauge>& max_concurrent_reconciles_;
  WorkQueueMetrics workqueue_;
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_CONTROLLER_METRICS_H_
