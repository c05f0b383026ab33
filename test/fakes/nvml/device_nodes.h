#ifndef GPUOP_TEST_FAKES_NVML_DEVICE_NODES_H_
#define GPUOP_TEST_FAKES_NVML_DEVICE_NODES_H_

// Device visibility, as the real NVML has it: a process sees the GPUs whose device nodes it can
// open. With a scenario's `device_nodes: <dir>` set, the first nvmlInit_v2 opens <dir>/nvidiactl
// and <dir>/nvidia<minor> for every GPU, read-write, and the library holds what it opened until
// the last nvmlShutdown (the real library holds them too, which is what keeps the kernel driver
// from unloading while a process uses it).
//
// When <dir> is /dev the nodes must be character devices, as the driver's are. Any other
// directory accepts any file that opens (tests use regular files, which need no mknod).

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "test/fakes/nvml/scenario.h"

namespace gpuop::fakenvml {

struct OpenedNodes {
  std::vector<int> fds;       // nvidiactl first, then the visible GPUs' nodes
  std::vector<bool> visible;  // one per GPU, scenario order
  // Whether <dir>/nvidia-caps/nvidia-cap1 (MIG config) and -cap2 (MIG monitor) open for reading:
  // the MIG capabilities (Machine::MigAccess). The driver creates them 0400 and 0444; a
  // container reaches them only when its runtime gives it the nodes (NVIDIA's
  // NVIDIA_MIG_CONFIG_DEVICES / NVIDIA_MIG_MONITOR_DEVICES, or a privileged container).
  bool mig_config = false;
  bool mig_monitor = false;
};

// FailedPrecondition (NVML_ERROR_DRIVER_NOT_LOADED) when <dir>/nvidiactl is missing or is not a
// device node where one is required; PermissionDenied (NVML_ERROR_NO_PERMISSION) when it exists
// but cannot be opened for lack of permission. A GPU whose node does not open is not visible.
//
// `module_dir` (absolute; empty: none) holds the SIMULATED kernel module's nodes. When its
// nvidiactl exists the module counts as loaded, and a root process first gets the nodes of
// `module_dir` that <dir> lacks: each is created with the module's device number and mode 0666,
// as the real user-space driver creates device files when run as root, and removed again when it
// cannot be opened (a container's device cgroup forbids it), so nothing is left that the process
// could not use; the MIG capability nodes are created with the module's modes. Non-root
// processes get nothing created.
absl::StatusOr<OpenedNodes> OpenDeviceNodes(const std::string& dir,
                                            const std::vector<GpuSpec>& gpus,
                                            const std::string& module_dir = "");

// Closes and clears `fds`.
void CloseDeviceNodes(std::vector<int>& fds);

// A MIG compute instance, for its capability nodes: its GPU's minor number, its GPU and compute
// instance ids.
struct InstanceCaps {
  unsigned int gpu_minor = 0;
  unsigned int gpu_instance = 0;
  unsigned int compute_instance = 0;
};

// What the real user-space driver does for a root process (nvidia-smi, NVML): creates
// <dir>/nvidia-caps/nvidia-cap<N> for the access capabilities of the instances that exist (their
// GPU instance's and compute instance's, numbered as mig_cap_minors.h says), mode 0444, with the
// device number of <dir>/nvidia-caps/nvidia-cap2 (the monitor capability's node, which the
// simulated module created). Nothing is created without that node, for a process that is not
// root, or where mknod is not permitted (a container without CAP_MKNOD); existing nodes stay.
// NVIDIA's MIG manager runs nvidia-smi in the driver's root after a change for exactly this: a
// container runtime can give a MIG device to a container only once its capability nodes exist.
void CreateInstanceCapNodes(const std::string& dir, const std::vector<InstanceCaps>& instances);

// Whether this process holds a MIG device's access capabilities: <dir>/nvidia-caps/nvidia-cap<N>
// of its GPU instance and of its compute instance both open for reading (character devices when
// <dir> is /dev). A container given one MIG device (NVIDIA_VISIBLE_DEVICES=MIG-..., or the MIG
// device's CDI spec) has exactly those two nodes, and the real driver shows it that MIG device
// alone.
bool HoldsInstanceCaps(const std::string& dir, const InstanceCaps& instance);

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_DEVICE_NODES_H_
