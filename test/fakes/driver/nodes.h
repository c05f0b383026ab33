#ifndef GPUOP_TEST_FAKES_DRIVER_NODES_H_
#define GPUOP_TEST_FAKES_DRIVER_NODES_H_

// The device nodes the NVIDIA kernel driver (and nvidia-modprobe) create, SIMULATED.
//
// Every node is a character device with major 1, minor 7. The real numbers cannot work here:
// nvidia0..N and nvidiactl use major 195 and nvidia-uvm and nvidia-caps a major the kernel
// assigns when their module registers; without the NVIDIA modules those majors are unregistered
// and open(2) on such a node fails with ENXIO, so no consumer could open the simulated nodes. 1:7
// is the kernel's `full` device: always registered, opens read-write for anyone the mode allows,
// reads zeroes, and no process normally holds it open, so an open 1:7 file named nvidia* marks a
// holder of the simulated driver (holders.h). Container runtimes copy a node's major and minor
// from the host into a container (CDI deviceNodes), so containers get working nodes too.

#include <string>
#include <vector>

#include <sys/types.h>

#include "absl/status/status.h"

namespace gpuop::fakedriver {

inline constexpr unsigned int kNodeMajor = 1;
inline constexpr unsigned int kNodeMinor = 7;

struct NodeSpec {
  std::string name;  // relative to the device root: "nvidia0", "nvidia-caps/nvidia-cap1"
  mode_t mode = 0666;
};

// What the driver creates for GPUs with these minor numbers: nvidia<minor> each, nvidiactl,
// nvidia-uvm, nvidia-uvm-tools, nvidia-modeset (mode 0666, NVreg_DeviceFileMode's default), and
// the MIG capability nodes nvidia-caps/nvidia-cap1 (mig config, 0400) and nvidia-cap2 (mig
// monitor, 0444), with the modes the driver's /proc/driver/nvidia/capabilities files give.
std::vector<NodeSpec> DriverNodes(const std::vector<unsigned int>& minors);

// Creates `nodes` under `dev_root` (and nvidia-caps/) with exactly the given modes, replacing
// simulated nodes already there; a file of another kind in the way is an error. Errors name the
// node and the errno text.
absl::Status CreateNodes(const std::string& dev_root, const std::vector<NodeSpec>& nodes);

// Removes those of `nodes` that are simulated nodes (character devices 1:7) from `dev_root`, and
// nvidia-caps/ when it is left empty; anything else is left alone.
absl::Status RemoveNodes(const std::string& dev_root, const std::vector<NodeSpec>& nodes);

// `nodes` plus the simulated GPU nodes (nvidia<N>, character device 1:7) already in `dev_root`:
// what to remove after an instance that played a machine with other GPUs.
std::vector<NodeSpec> WithExistingGpuNodes(const std::string& dev_root,
                                           std::vector<NodeSpec> nodes);

// Whether any of `nodes` exists under `dev_root` as a simulated node.
bool AnyNodeExists(const std::string& dev_root, const std::vector<NodeSpec>& nodes);

}  // namespace gpuop::fakedriver

#endif  // GPUOP_TEST_FAKES_DRIVER_NODES_H_
