#ifndef GPUOP_AGENT_HEALTH_MONITOR_H_
#define GPUOP_AGENT_HEALTH_MONITOR_H_

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/health/report.h"
#include "agent/health/watcher.h"
#include "common/clock.h"
#include "hw/accelerator.h"
#include "metrics/registry.h"

namespace gpuop::agent {

struct HealthMonitorOptions {
  HealthWatcherOptions watch;  // its external_file is ignored: the monitor writes that file
  // Where the verdicts go for the device plugin (see report.h); empty: no file.
  std::filesystem::path health_file = "/run/gpuop/gpu-health.json";
  // The conditions that wait for an action (HealthTracker::SaveState), read at Start() and
  // rewritten when they change, so a restarted monitor keeps a GPU that still needs a reset or
  // a reboot unhealthy. Under /run, a reboot empties it as the reboot ends the conditions.
  // Empty: not kept.
  std::filesystem::path state_file = "/run/gpuop/health-state.json";
  // How long a written file stays valid; it is rewritten when half of that has passed.
  absl::Duration file_validity = absl::Minutes(2);
  // Re-discovery of the GPUs (MIG layouts change, GPUs fall off the bus).
  absl::Duration rediscover_interval = absl::Minutes(5);
  // Registers gpuop_health_* metrics; none when null.
  metrics::Registry* metrics = nullptr;
};

// The `gpuop-agent health` component's core: keeps every GPU's (and MIG instance's) health with
// a reason and a time (HealthWatcher), writes the verdicts to the health file the device plugin
// follows, and hands each new report, with what changed, to `on_change` (the publisher). All of
// it works without the API server; publishing is the listener's business.
//
// Thread-safe. `on_change` runs on the monitor's threads, one call at a time.
class HealthMonitor {
 public:
  using Listener =
      std::function<void(const HealthReport& report, std::vector<HealthTransition> transitions)>;

  HealthMonitor(std::vector<hw::Accelerator*> accelerators, HealthMonitorOptions options,
                Listener on_change);
  ~HealthMonitor();

  // Discovers the GPUs, samples once, reports, and starts watching. Fails when discovery fails.
  [[nodiscard]] absl::Status Start();
  void Stop();

  // Re-discovers the GPUs (after a MIG layout change) and reports.
  [[nodiscard]] absl::Status Rediscover();

  HealthReport report() const;

 private:
  struct Metrics;

  // Builds the report; writes the file and notifies when something changed or `refresh`.
  void Evaluate(bool refresh);
  void Maintain(std::stop_token stop);
  void LoadState();
  void SaveState() ABSL_EXCLUSIVE_LOCKS_REQUIRED(evaluate_mu_);

  const std::vector<hw::Accelerator*> accelerators_;
  const HealthMonitorOptions options_;
  const Listener on_change_;
  std::unique_ptr<Metrics> metrics_;
  HealthWatcher watcher_;

  absl::Mutex evaluate_mu_;  // one evaluation at a time, in order
  mutable absl::Mutex mu_ ABSL_ACQUIRED_AFTER(evaluate_mu_);
  std::vector<hw::Inventory> inventories_ ABSL_GUARDED_BY(mu_);
  std::optional<HealthReport> last_ ABSL_GUARDED_BY(mu_);
  absl::Time file_written_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::string state_written_ ABSL_GUARDED_BY(evaluate_mu_);
  std::jthread maintainer_;
};

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_HEALTH_MONITOR_H_
