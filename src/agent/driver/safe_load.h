#ifndef GPUOP_AGENT_DRIVER_SAFE_LOAD_H_
#define GPUOP_AGENT_DRIVER_SAFE_LOAD_H_

// Safe driver load: the first step of a driver pod, before its container loads the kernel
// modules. Loading a driver over one that is in use takes the GPUs away from the pods using them,
// so when a driver is already loaded on the node the pod asks the operator to make the node safe
// first: it writes the annotation gpuop.io/driver-wait-for-safe-load=<pod> on its Node and waits
// until the operator removes it. The operator takes such a node through the driver upgrade
// (cordon, wait for jobs, delete the GPU pods, drain, stop gpuop's own GPU clients) and removes
// the annotation in its pod-restart-required step. With no driver loaded (a node's first driver,
// a node after a reboot, a driver the previous pod unloaded) nothing can be using the GPUs and the
// pod loads at once. This is the equivalent of NVIDIA's safe driver loading (the
// nvidia.com/gpu-driver-upgrade.driver-wait-for-safe-load annotation of its upgrade library).

#include <chrono>
#include <optional>
#include <stop_token>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "kube/client/client.h"

namespace gpuop::agent {

inline constexpr char kSafeLoadAnnotation[] = "gpuop.io/driver-wait-for-safe-load";

// Where a loaded driver shows.
struct LoadedDriverPaths {
  // The NVIDIA kernel module's sysfs directory: present while the module is loaded.
  std::string module_dir = "/sys/module/nvidia";
  // The driver root a driver container publishes: NVIDIA's mounts its root there and unmounts it
  // when it unloads. A mount there, or a driver's files (usr/bin/nvidia-smi) left in it, is a
  // driver that has not been taken down. Other files do not count: the kubelet creates the
  // driver pod's firmware directory (lib/firmware) there before any driver runs.
  std::string driver_root = "/run/nvidia/driver";
  // This process's mount table, where a mount on the driver root shows.
  std::string mountinfo = "/proc/self/mountinfo";
};

// Why a driver counts as loaded ("the kernel module is loaded (/sys/module/nvidia exists)"), or
// nullopt when none is. An unreadable mount table counts as loaded: waiting is the safe mistake.
std::optional<std::string> LoadedDriver(const LoadedDriverPaths& paths);

struct SafeLoadOptions {
  std::string node_name;
  std::string pod_name;  // the annotation's value: which driver pod waits
  LoadedDriverPaths paths;
  absl::Duration poll = absl::Seconds(2);
};

// What the driver pod's first step does: with no driver loaded, removes a stale annotation left
// by an earlier pod and returns; otherwise writes the annotation with `pod_name` and returns once
// it is gone (or names another pod: the operator released the node to a newer one). API errors are
// retried every `poll`; each is printed to stderr. Cancelled once `stop` is requested.
[[nodiscard]] absl::Status WaitForSafeLoad(kube::Client& client, const SafeLoadOptions& options,
                                           std::stop_token stop);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_DRIVER_SAFE_LOAD_H_
