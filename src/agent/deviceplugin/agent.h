#ifndef GPUOP_AGENT_DEVICEPLUGIN_AGENT_H_
#define GPUOP_AGENT_DEVICEPLUGIN_AGENT_H_

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "agent/deviceplugin/config_source.h"
#include "agent/deviceplugin/manager.h"
#include "agent/health/watcher.h"
#include "common/clock.h"
#include "common/file_watch.h"
#include "hw/accelerator.h"

namespace gpuop::agent {

struct DevicePluginAgentOptions {
  DevicePluginManagerOptions manager;
  // Health from hardware events, samples and the health monitor's file (`external_file`).
  HealthWatcherOptions health;
  // A file gpuop's MIG manager rewrites after changing the GPUs' layout; a change re-plans at
  // once. Empty: no such notification (MIG changes are then seen at the next resync).
  std::filesystem::path layout_file;
  // Full re-discovery and re-plan even without a notification, for changes nothing announces
  // (nvidia-smi run by hand).
  absl::Duration resync_interval = absl::Minutes(5);
  const common::Clock* clock = &common::Clock::Real();
  // Longest wait for a file change, which bounds how long Stop() takes.
  absl::Duration poll = absl::Milliseconds(500);
  // How often discovery is tried again after it failed under failOnInitError: false.
  absl::Duration init_retry = absl::Seconds(10);
  // Whether gpuop's CDI component runs on this node (the operator says so); without it the CDI
  // device list strategies are served as envvar.
  bool cdi_enabled = true;
  // gpuop's CDI spec as this process sees it (under the host root), for the `both` fallback.
  std::filesystem::path cdi_spec;
  // Where this process sees the host's root: device nodes and IMEX channels are looked up
  // below it.
  std::filesystem::path host_root = "/";
  // Told each distinct warning once: configuration keys not acted on, strategies moved off
  // CDI, devices no pattern names. Default: standard error.
  std::function<void(const std::string&)> warn;
};

// The `gpuop-agent device-plugin` component: discovers the GPUs, plans resources from the
// configuration, serves them to the kubelet (DevicePluginManager) and keeps their health
// current (HealthWatcher): hardware events mark devices unhealthy at once, samples notice the
// slow signals, the health monitor's verdicts are honoured, and devices return to Healthy when
// their condition clears.
// A configuration change (file or node label) or a layout notification re-plans without a
// restart. A configuration that fails to load or plan keeps the last good one in service and is
// reported in last_error(); when no configuration has loaded yet, nothing is served until one
// does (the plugin keeps running and watching). A MIG layout that does not fit strategy single
// is no configuration error: the plan (nvidia.com/gpu with no devices) is served and the reason
// is in last_error() as FailedPrecondition, until a layout change fixes it.
//
// Thread-safe.
class DevicePluginAgent {
 public:
  DevicePluginAgent(std::vector<hw::Accelerator*> accelerators, ConfigSource& config,
                    DevicePluginAgentOptions options);
  ~DevicePluginAgent();

  // Discovers, plans, serves and registers; then watches. Fails only when the device plugin
  // directory cannot be watched or discovery fails (and the configuration's failOnInitError is
  // true, NVIDIA's default; with false the plugin serves nothing and tries discovery again every
  // init_retry), never because of the configuration.
  [[nodiscard]] absl::Status Start();
  void Stop();

  // Re-discovers the GPUs, reloads the configuration and applies the new plan (after a MIG
  // change, a configuration edit or a node label change). Returns the discovery error, or the
  // configuration's problem when it was rejected (also in last_error()); OK when a plan from the
  // new configuration is served, even one that reports an invalid MIG layout.
  [[nodiscard]] absl::Status Replan();

  // The latest problem that did not stop the agent (a rejected configuration, a MIG layout that
  // does not fit strategy single), or OK.
  absl::Status last_error() const;
  DevicePluginConfig config() const;
  ResourcePlan plan() const;
  const HealthTracker& health() const { return health_.tracker(); }
  DevicePluginManager& manager() { return manager_; }

 private:
  void WatchConfig(std::stop_token stop);
  // Replan(); `discovery_failed` says whether the error (if any) came from discovery.
  absl::Status Replan(bool& discovery_failed);
  // How Allocate answers under `config`; IMEX channels the config requires but the node lacks
  // are FailedPrecondition.
  absl::StatusOr<AllocateSettings> Settings(const DevicePluginConfig& config);
  void Warn(const std::string& message);
  // The MPS root of `config` as this process sees it (under the host root).
  std::filesystem::path MpsRootSeen(const DevicePluginConfig& config) const;
  // Takes the resources shared with MPS that the ready file does not list as `plan` has them
  // off `plan`; returns why (empty when none was).
  std::string HoldUnreadyMps(const DevicePluginConfig& config, ResourcePlan& plan);
  // Under sharing.mps, watches the MPS root's ready file once the directory exists; sets
  // `changed` when it starts watching. Config thread only (it owns watch_ after Start).
  void WatchMpsRoot(bool& changed);

  std::vector<hw::Accelerator*> accelerators_;
  ConfigSource& source_;
  const DevicePluginAgentOptions options_;
  DevicePluginManager manager_;
  HealthWatcher health_;
  absl::Mutex replan_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  std::optional<DevicePluginConfig> config_ ABSL_GUARDED_BY(mu_);
  ResourcePlan plan_ ABSL_GUARDED_BY(mu_);
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  bool init_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool init_fatal_ ABSL_GUARDED_BY(mu_) = true;
  std::set<std::string> warned_ ABSL_GUARDED_BY(mu_);
  common::FileWatch watch_;
  std::set<std::filesystem::path> mps_watched_;  // config thread only
  std::jthread config_thread_;
};

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_DEVICEPLUGIN_AGENT_H_
