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
};

// FailedPrecondition (NVML_ERROR_DRIVER_NOT_LOADED) when <dir>/nvidiactl is missing or is not a
// device node where one is required; PermissionDenied (NVML_ERROR_NO_PERMISSION) when it exists
// but cannot be opened for lack of permission. A GPU whose node does not open is not visible.
absl::StatusOr<OpenedNodes> OpenDeviceNodes(const std::string& dir,
                                            const std::vector<GpuSpec>& gpus);

// Closes and clears `fds`.
void CloseDeviceNodes(std::vector<int>& fds);

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_DEVICE_NODES_H_
