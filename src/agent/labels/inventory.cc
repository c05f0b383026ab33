#include "agent/labels/inventory.h"

#include <system_error>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace gpuop::agent {

std::string InventoryAnnotation(const std::vector<hw::Inventory>& inventories) {
  nlohmann::json gpus = nlohmann::json::array();
  std::string driver;
  std::string cuda;
  for (const auto& inv : inventories) {
    if (driver.empty()) driver = inv.driver_version;
    if (cuda.empty() && inv.cuda_driver_version > 0) {
      cuda = absl::StrCat(inv.cuda_driver_version / 1000, ".", inv.cuda_driver_version % 1000 / 10);
    }
    for (const auto& gpu : inv.gpus) {
      nlohmann::json mig = nlohmann::json::array();
      for (const auto& d : gpu.mig_devices)
        mig.push_back({{"profile", d.profile}, {"uuid", d.uuid}});
      gpus.push_back({{"index", gpu.index},
                      {"uuid", gpu.uuid},
                      {"product", gpu.product},
                      {"memoryMiB", gpu.memory_bytes / (1024 * 1024)},
                      {"pciBusId", gpu.pci_bus_id},
                      {"migEnabled", gpu.mig_enabled},
                      {"migDevices", std::move(mig)}});
    }
  }
  return nlohmann::json{{"driver", driver}, {"cuda", cuda}, {"gpus", std::move(gpus)}}.dump();
}

bool HostDriverPresent(const std::filesystem::path& proc_root,
                       const std::filesystem::path& container_driver_root) {
  std::error_code ec;
  if (!std::filesystem::exists(proc_root / "driver" / "nvidia" / "version", ec)) return false;
  if (!std::filesystem::is_directory(container_driver_root, ec)) return true;
  return std::filesystem::is_empty(container_driver_root, ec);
}

}  // namespace gpuop::agent
