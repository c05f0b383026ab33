#ifndef GPUOP_AGENT_MPS_MANAGER_H_
#define GPUOP_AGENT_MPS_MANAGER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/deviceplugin/config_source.h"
#include "agent/mps/control.h"
#include "agent/mps/daemon.h"
#include "agent/mps/root.h"
#include "common/clock.h"
#include "common/file_watch.h"
#include "hw/accelerator.h"

namespace gpuop::agent::mps {

struct ManagerOptions {
  // The MPS root as this process sees it (the component mounts the host's at /mps, as NVIDIA's).
  std::filesystem::path root = kContainerRoot;
  // What the host calls that directory: a configuration whose flags.mpsRoot differs is
  // refused, since the daemons could not put their pipes where the device plugin mounts them
  // from.
  std::string host_root = kDefaultMpsRoot;
  // How often each running daemon is asked whether it is healthy.
  absl::Duration health_interval = absl::Seconds(30);
  // How long after a failed start the daemons are started again (NVIDIA's daemon: 30 s).
  absl::Duration retry = absl::Seconds(30);
  // Longest wait for a configuration change, which bounds how long Stop() takes.
  absl::Duration poll = absl::Milliseconds(500);
  const common::Clock* clock = &common::Clock::Real();
  std::function<void(const std::string&)> log;  // default: standard error
};

// The `gpuop-agent mps-daemon` component: one control daemon (Daemon) per resource the
// configuration shares with MPS (sharing.mps), on the GPUs the device plugin plans for it (the
// same PlanResources), and NVIDIA's ready file once all of them run, listing what they share
// (FormatReady), which the device plugin waits for before it serves those resources.
//
// A configuration change (the file, or the node label picking another one) that changes what is
// shared stops every daemon (the ready file goes first) and starts the new set; a daemon that
// fails its health check, or a start that fails, does the same after `retry`. Stop quits every
// daemon and restores the GPUs' compute mode. A configuration that does not load, or names no
// MPS sharing, runs no daemons.
//
// Thread-safe.
class Manager {
 public:
  Manager(hw::Accelerator& gpus, ControlProgram& control, ConfigSource& config,
          ManagerOptions options);
  ~Manager();

  // Applies the configuration once, then watches it. Fails only when the configuration
  // directory cannot be watched; the first application's problem is in last_error().
  [[nodiscard]] absl::Status Start();
  void Stop();

  // Loads the configuration and makes the running daemons what it asks for (see the class
  // comment); OK when they run (or none is needed). Also called after the node label changed.
  [[nodiscard]] absl::Status Apply();
  // Asks each running daemon; on a failure stops them all (the next Apply starts them again).
  [[nodiscard]] absl::Status CheckHealth();

  absl::Status last_error() const;
  // What the running daemons share (what the ready file says).
  ReadyResources running() const;

 private:
  void Run(std::stop_token stop);
  absl::Status StopDaemons() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<ReadyResources> Wanted(std::vector<std::unique_ptr<Daemon>>& daemons);
  void Log(const std::string& line) const;

  hw::Accelerator& gpus_;
  ControlProgram& control_;
  ConfigSource& source_;
  const ManagerOptions options_;
  const Root root_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Daemon>> daemons_ ABSL_GUARDED_BY(mu_);
  ReadyResources running_ ABSL_GUARDED_BY(mu_);
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  common::FileWatch watch_;
  std::jthread thread_;
};

}  // namespace gpuop::agent::mps

#endif  // GPUOP_AGENT_MPS_MANAGER_H_
