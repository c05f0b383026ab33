#ifndef GPUOP_AGENT_DEVICEPLUGIN_ALLOCATION_H_
#define GPUOP_AGENT_DEVICEPLUGIN_ALLOCATION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/deviceplugin/resources.h"
#include "hw/model.h"

namespace gpuop::agent {

// The pairwise topology of a node's GPUs, for preferred allocation: a score per pair, higher is
// better: 100 per NVLink/XGMI link, plus 50 for a common PCIe switch, 30 for the same NUMA node
// or host bridge, 10 across sockets (NVIDIA's best-effort scale).
class Topology {
 public:
  Topology() = default;
  explicit Topology(const std::vector<hw::Gpu>& gpus);

  // Score of running on both GPUs; 0 for unknown pairs.
  int Score(int gpu_a, int gpu_b) const;

 private:
  std::vector<std::vector<int>> score_;
};

// The kubelet's GetPreferredAllocation for one container: which `size` of the `available`
// devices to use, including every `must_include` one.
//
// - Whole GPUs: the set whose GPUs are best connected (sum of pairwise Topology scores), so a
//   4-GPU job lands on one NVLink/NVSwitch island, then one PCIe switch, then one NUMA node.
// - MIG devices: packed onto the GPUs that are already most used, keeping whole GPUs free.
// - Time-slicing replicas: spread over distinct, least-loaded GPUs first.
// Ties go to the lowest device IDs, so the answer does not depend on the order of `available`
// or `must_include` (the kubelet sends both unordered).
//
// Never fails, as an error fails the pod's admission: IDs the plugin does not serve are skipped,
// a short `available` gives fewer devices, and a `must_include` of `size` or more is the answer;
// the kubelet fills the rest itself.
[[nodiscard]] std::vector<std::string> PreferredAllocation(
    const std::vector<PluginDevice>& devices, const Topology& topology,
    const std::vector<std::string>& available, const std::vector<std::string>& must_include,
    int size);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_DEVICEPLUGIN_ALLOCATION_H_
