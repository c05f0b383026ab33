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

// The MIG layouts NVIDIA's GPU operator ships as its default (mig-parted's v1 format):
// all-disabled, all-enabled, all-<profile> for every profile of the A100, A30, H100 (80 GB, NVL
// and 96 GB) families, all-1g.10gb split per board size, and all-balanced with one entry per
// board family selected by PCI device id.
std::string DefaultMigLayouts();

// gpuop-mig-config: DefaultMigLayouts(), used when the policy names no ConfigMap of its own.
nlohmann::json MigConfigMap(const std::string& ns);

}  // namespace gpuop::op::render

#endif  // GPUOP_OPERATOR_RENDER_CONFIG_MAPS_H_
