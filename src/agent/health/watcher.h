#ifndef GPUOP_AGENT_HEALTH_WATCHER_H_
#define GPUOP_AGENT_HEALTH_WATCHER_H_

#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/health/tracker.h"
#include "common/clock.h"
#include "common/file_watch.h"
#include "hw/accelerator.h"

namespace gpuop::agent {

struct HealthWatcherOptions {
  HealthPolicy policy;
  // How often the slow signals are sampled (lost GPUs, row-remap failures, pending retired
  // pages, temperature); events (XIDs, ECC, GPU lost) arrive as they happen.
  absl::Duration sample_interval = absl::Seconds(10);
  // Longest single wait for hardware events, which bounds how long Stop() takes.
  absl::Duration event_wait = absl::Milliseconds(500);
  // The health monitor's file (see report.h), followed with inotify: its verdicts join this
  // watcher's own. Empty: none.
  std::filesystem::path external_file;
  // What ends conditions waiting for an action (a reboot, a driver reload, a GPU reset),
  // consulted at every sample. Null: such conditions last as long as the watcher.
  const RecoveryEvidence* evidence = nullptr;
  const common::Clock* clock = &common::Clock::Real();
};

// Keeps a HealthTracker current for a set of accelerators: one thread per accelerator waits for
// hardware events, another samples the slow signals and the recovery evidence and follows the
// external health file. `on_change` runs (on one of those threads) whenever some device's
// health may have changed.
//
// Thread-safe.
class HealthWatcher {
 public:
  HealthWatcher(std::vector<hw::Accelerator*> accelerators, HealthWatcherOptions options,
                std::function<void()> on_change);
  ~HealthWatcher();

  // The GPUs samples are matched against, one inventory per accelerator (in order). Call before
  // Start() and after every re-discovery.
  void SetInventories(std::vector<hw::Inventory> inventories);

  [[nodiscard]] absl::Status Start();
  void Stop();

  const HealthTracker& tracker() const { return tracker_; }
  HealthTracker& tracker() { return tracker_; }
  // Samples every accelerator now; true when some device's health changed.
  bool SampleNow();

 private:
  void WatchEvents(std::stop_token stop, hw::Accelerator* accelerator);
  void WatchSamples(std::stop_token stop);
  // Re-reads the external file; true when its verdicts changed.
  bool ReadExternal();

  const std::vector<hw::Accelerator*> accelerators_;
  const HealthWatcherOptions options_;
  const std::function<void()> on_change_;
  HealthTracker tracker_;
  mutable absl::Mutex mu_;
  std::vector<hw::Inventory> inventories_ ABSL_GUARDED_BY(mu_);
  common::FileWatch file_watch_;
  std::vector<std::jthread> threads_;
};

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_HEALTH_WATCHER_H_
