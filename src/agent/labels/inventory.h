#ifndef GPUOP_AGENT_LABELS_INVENTORY_H_
#define GPUOP_AGENT_LABELS_INVENTORY_H_

#include <filesystem>
#include <string>
#include <vector>

#include "hw/model.h"

namespace gpuop::agent {

// The Node annotation with the node's GPUs, which the operator copies into the GPUNode's status:
// compact JSON {"driver", "cuda", "gpus": [{"index", "uuid", "product", "memoryMiB", "pciBusId",
// "migEnabled", "migDevices": [{"profile", "uuid"}]}]}.
inline constexpr char kInventoryAnnotation[] = "gpuop.io/gpu-inventory";
std::string InventoryAnnotation(const std::vector<hw::Inventory>& inventories);

// "true" when the NVIDIA driver was installed on the host rather than by gpuop's driver
// container; the operator then leaves the node's driver alone.
inline constexpr char kDriverPreinstalledLabel[] = "gpuop.io/driver.preinstalled";

// Whether the NVIDIA kernel driver is loaded (<proc_root>/driver/nvidia/version exists) while
// the driver container's root (`container_driver_root`, /run/nvidia/driver as the host sees it)
// is absent or empty: a driver the host brought itself.
bool HostDriverPresent(const std::filesystem::path& proc_root,
                       const std::filesystem::path& container_driver_root);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_LABELS_INVENTORY_H_
