#ifndef GPUOP_OPERATOR_RENDER_CONFIG_MAPS_H_
#define GPUOP_OPERATOR_RENDER_CONFIG_MAPS_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/api/node_pool.h"
#include "operator/api/policy.h"

namespace gpuop::op::render {

// gpuop-device-plugin-config: the device plugin's named configurations (NVIDIA's v1 format):
// "default" with the policy's MIG strategy, and "pool-<name>" with time-slicing for each pool
// that asks for it.
nlohmann::json DevicePluginConfigMap(const PolicySpec& policy, const std::vector<NodePool>& pools,
                                     const std::string& ns);

// gpuop-mig-config: the named MIG layouts (mig-parted's v1 format) used when the policy names no
// ConfigMap of its own: all-disabled, all-enabled, and for 80 GB A100/H100 parts all-1g.10gb,
// all-2g.20gb, all-3g.40gb, all-7g.80gb and all-balanced.
nlohmann::json MigConfigMap(const std::string& ns);

}  // namespace gpuop::op::render

#endif  // GPUOP_OPERATOR_RENDER_CONFIG_MAPS_H_
