#include "kube/controller/metrics.h"

namespace gpuop::kube {

ControllerMetrics::ControllerMetrics(metrics::Registry& registry)
    : total_(registry.AddCounter("gpuop_controller_reconcile_total",
                                 "Reconciles per controller and result.",
                                 {"controller", "result"})),
      errors_(registry.AddCounter("gpuop_controller_reconcile_errors_total",
                                  "Reconciles that returned an error.", {"controller"})),
      panics_(registry.AddCounter("gpuop_controller_reconcile_panics_total",
                                  "Reconciles that threw an exception.", {"controller"})),
      // controller-runtime's range, from 5ms to a minute, with fewer buckets.
      reconcile_time_(registry.AddHistogram(
          "gpuop_controller_reconcile_time_seconds", "Seconds per reconcile.", {"controller"},
          {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60})),
      active_workers_(registry.AddGauge("gpuop_controller_active_workers",
                                        "Reconciles running now.", {"controller"})),
      max_concurrent_reconciles_(
          registry.AddGauge("gpuop_controller_max_concurrent_reconciles",
                            "Workers, the most reconciles that may run at once.", {"controller"})),
      workqueue_(registry) {}

ControllerMetrics::Instruments ControllerMetrics::ForController(const std::string& name) {
  return Instruments{
      .success = &total_.With({name, "success"}),
      .error = &total_.With({name, "error"}),
      .requeue = &total_.With({name, "requeue"}),
      .requeue_after = &total_.With({name, "requeue_after"}),
      .errors = &errors_.With({name}),
      .panics = &panics_.With({name}),
      .reconcile_time = &reconcile_time_.With({name}),
      .active_workers = &active_workers_.With({name}),
      .max_concurrent_reconciles = &max_concurrent_reconciles_.With({name}),
  };
}

}  // namespace gpuop::kube
