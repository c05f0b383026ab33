#ifndef GPUOP_OPERATOR_API_NODE_POOL_H_
#define GPUOP_OPERATOR_API_NODE_POOL_H_

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kube/types/selector.h"

namespace gpuop::op {

// GPUNodePool (gpuop.io/v1alpha1): the overrides for the GPU nodes its selector picks.
struct NodePool {
  std::string name;
  int64_t generation = 0;
  kube::LabelSelector node_selector;
  std::optional<std::string> driver_version;
  std::optional<std::string> driver_repository;
  std::optional<std::string> mig_layout;
  std::optional<std::string> device_plugin_config;
  std::optional<int64_t> time_slicing_replicas;
  // timeSlicing.renameByDefault: the shared GPUs are advertised as nvidia.com/gpu.shared.
  bool time_slicing_rename = false;
  // power: the power manager's settings for the pool's nodes, over the policy's
  // (components.powerManager); reach the agent through the node label gpuop.io/power.policy.
  struct Power {
    std::optional<bool> enabled;  // false: no capping on these nodes
    std::optional<absl::Duration> idle_after;
    std::optional<int64_t> floor_percent;
    friend bool operator==(const Power&, const Power&) = default;
  };
  std::optional<Power> power;
};

// Reads a GPUNodePool; InvalidArgument naming the field when malformed.
[[nodiscard]] absl::StatusOr<NodePool> ParseNodePool(const nlohmann::json& object);

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_API_NODE_POOL_H_
