#ifndef GPUOP_AGENT_CDI_MANAGEMENT_H_
#define GPUOP_AGENT_CDI_MANAGEMENT_H_

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/cdi/kinds.h"
#include "agent/cdi/spec.h"

namespace gpuop::agent::cdi {

// gpuop's management spec: the device nodes gpuop's own node components need to read and manage
// every GPU, given to containers that run without `privileged`. What NVIDIA's operands get from
// NVIDIA's runtime with NVIDIA_VISIBLE_DEVICES=all and NVIDIA_MIG_MONITOR_DEVICES=all (NVIDIA
// names the same thing management.nvidia.com/gpu). Those containers run under the RuntimeClass
// `gpuop`, whose runtime (gpuop-container-runtime) applies the devices their GPUOP_CDI_DEVICES
// names; user workloads never ask for these devices.
//
// Devices:
//   "all"          every device node of the vendor specs (their spec-wide nodes and every
//                  device's), the MIG capability nodes (/dev/nvidia-caps/...) excepted: control
//                  nodes and each whole GPU, so NVML and amdsmi see every GPU. No mounts, hooks
//                  or environment: the components load the driver's libraries from the host
//                  root themselves.
//   "mig-monitor"  the MIG monitor capability, /dev/nvidia-caps/nvidia-cap<monitor minor>: NVML
//                  answers GPU- and compute-instance queries only to a process that opens it.
//                  gpuop-container-runtime gives nvidia-caps nodes only to containers with
//                  CAP_SYS_ADMIN, as NVIDIA's runtime does. Always defined, so that one
//                  component spec works on every node: where the driver has no monitor
//                  capability (no MIG-capable GPU, an AMD node) it carries only the variable
//                  GPUOP_MIG_MONITOR=unavailable.
// The names are in kinds.h.

// The minor number of the MIG monitor capability's device node, as the driver publishes it in
// <proc>/driver/nvidia/capabilities/mig/monitor (DeviceFileMinor) or, when that file is missing,
// the "monitor" line of <proc>/driver/nvidia-caps/mig-minors. NotFound naming both files when
// neither has it (no NVIDIA driver with MIG support); InvalidArgument naming a malformed file.
[[nodiscard]] absl::StatusOr<unsigned int> MigMonitorMinor(const std::filesystem::path& proc_dir);

// The monitor capability's node: /dev/nvidia-caps/nvidia-cap<minor> in the container, at the same
// place under `dev_root` on the host (the driver names the node after the capability's minor).
DeviceNode MigMonitorNode(const std::string& dev_root, unsigned int minor);

// The management spec for the vendor specs gpuop generated on this node, with the monitor
// capability's node when the node has one. InvalidArgument when the vendor specs have no device
// node at all (there is nothing to manage). The result passes FinishSpec.
[[nodiscard]] absl::StatusOr<Spec> ManagementSpec(const std::vector<Spec>& vendor_specs,
                                                  const std::optional<DeviceNode>& mig_monitor);

}  // namespace gpuop::agent::cdi

#endif  // GPUOP_AGENT_CDI_MANAGEMENT_H_
