#ifndef GPUOP_TEST_NODE_NODE_E2E_REPORTS_H_
#define GPUOP_TEST_NODE_NODE_E2E_REPORTS_H_

// Readers of what the real test node reports (node tier): pods and Nodes as the API server
// shows them, the user workload's gpu-probe, the kubelet's PodResources API and the device
// plugin's log.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "test/cluster/node_config.h"

namespace gpuop::test {

// "name phase [container state reason: message restarts=N]...", for failure messages.
std::string PodSummary(const nlohmann::json& pod);

// status.allocatable[resource] of a Node, or "".
std::string Allocatable(const nlohmann::json& node, const std::string& resource);

// The JSON object gpu-probe printed on the first line of pod `ns`/`pod`'s container "probe".
absl::StatusOr<nlohmann::json> ProbeReport(const std::filesystem::path& pod_logs,
                                           const std::string& ns, const std::string& pod);

// The nvidia.com/gpu device IDs the kubelet's PodResources API lists for pod `ns`/`pod`, and
// (when `numa` is set) the NUMA nodes it lists for each.
absl::StatusOr<std::set<std::string>> KubeletDevicesOf(
    const NodeLayout& node, const std::string& ns, const std::string& pod,
    std::vector<std::vector<int64_t>>* numa = nullptr);

// OK when the probe of pod `ns`/`pod` saw exactly two /dev/nvidiaN, loaded libnvidia-ml.so.1
// and libcuda.so.1 by SONAME, and NVML showed exactly the two GPUs PodResources lists for it;
// otherwise every difference, with the report.
absl::Status CheckProbe(const NodeLayout& node, const std::string& ns, const std::string& pod);

// When the device plugin of namespace `ns` logged "serving nvidia.com/gpu" (after registering
// with the kubelet), from the timestamp that starts each line of the kubelet's CRI log file.
std::optional<absl::Time> DevicePluginServingAt(const std::filesystem::path& pod_logs,
                                                const std::string& ns);

}  // namespace gpuop::test

#endif  // GPUOP_TEST_NODE_NODE_E2E_REPORTS_H_
