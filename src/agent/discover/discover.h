#ifndef GPUOP_AGENT_DISCOVER_DISCOVER_H_
#define GPUOP_AGENT_DISCOVER_DISCOVER_H_

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "hw/accelerator.h"
#include "hw/model.h"
#include "hw/pci/pci.h"

namespace gpuop::agent {

struct DiscoverOptions {
  // NVML to load; the soname unless a driver root or the fake is wanted.
  std::string nvml_library = "libnvidia-ml.so.1";
  std::filesystem::path sysfs_root = "/sys";
  bool take_sample = true;
};

// What one vendor backend reported.
struct VendorReport {
  hw::Vendor vendor = hw::Vendor::kUnknown;
  hw::Inventory inventory;
  std::optional<hw::Sample> sample;
};

// Everything `gpuop-agent discover` shows about the node.
struct NodeReport {
  std::vector<VendorReport> vendors;
  // GPUs and NVSwitches on the PCI bus, whether or not a driver is bound.
  std::optional<hw::PciInventory> pci;
  // Why a backend is absent or partial ("NVIDIA: libnvidia-ml.so.1 not found"). A node with no
  // GPU driver at all has notes and no vendors, and that is a normal result.
  std::vector<std::string> notes;
};

// Opens every backend that applies to this node and reports its inventory and, if asked, one
// telemetry sample. Backends that are not there become notes, never errors; an error means a
// backend was there but failed.
[[nodiscard]] absl::StatusOr<NodeReport> DiscoverNode(const DiscoverOptions& options);

// Builds the report from already opened accelerators (for tests and for the agent, which keeps
// its accelerators open).
[[nodiscard]] absl::StatusOr<NodeReport> Report(const std::vector<hw::Accelerator*>& accelerators,
                                                bool take_sample);

// Human-readable tables: inventory, topology matrix, telemetry.
std::string RenderTable(const NodeReport& report);
nlohmann::json RenderJson(const NodeReport& report);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_DISCOVER_DISCOVER_H_
