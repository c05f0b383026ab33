#include "agent/discover/discover.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "hw/amd/amd_accelerator.h"
#include "hw/model_json.h"
#include "hw/nvml/nvml_accelerator.h"

namespace gpuop::agent {
namespace {

std::string GiB(uint64_t bytes) {
  return absl::StrFormat("%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

template <typename T>
std::string Or(const std::optional<T>& v, const std::string& suffix = "") {
  return v.has_value() ? absl::StrCat(*v, suffix) : "-";
}

std::string LinkLabel(const hw::Link& link) {
  switch (link.kind) {
    case hw::LinkKind::kGpuFabric:
      return absl::StrCat("NV", link.fabric_links);
    case hw::LinkKind::kSamePcieSwitch:
      return "PIX";
    case hw::LinkKind::kSameNumaNode:
      return "NODE";
    case hw::LinkKind::kCrossSocket:
      return "SYS";
  }
  return "?";
}

std::string MigSummary(const hw::Gpu& gpu) {
  if (!gpu.mig_capable) return "-";
  if (!gpu.mig_enabled) return gpu.mig_pending_change ? "off (on pending)" : "off";
  return absl::StrCat("on, ", gpu.mig_devices.size(), " devices");
}

void RenderInventory(const VendorReport& v, std::string& out) {
  const hw::Inventory& inv = v.inventory;
  absl::StrAppend(&out, hw::VendorName(v.vendor), ": ", inv.gpus.size(), " GPU(s), driver ",
                  inv.driver_version.empty() ? "unknown" : inv.driver_version);
  if (inv.cuda_driver_version > 0) {
    absl::StrAppendFormat(&out, ", CUDA %d.%d", inv.cuda_driver_version / 1000,
                          inv.cuda_driver_version % 1000 / 10);
  }
  out += "\n";
  if (inv.gpus.empty()) return;
  absl::StrAppendFormat(&out, "%-4s %-28s %-42s %-13s %10s %-5s %-4s %s\n", "IDX", "PRODUCT",
                        "UUID", "PCI", "MEMORY", "CC", "NUMA", "MIG");
  for (const auto& g : inv.gpus) {
    absl::StrAppendFormat(
        &out, "%-4d %-28s %-42s %-13s %10s %-5s %-4s %s\n", g.index, g.product, g.uuid,
        g.pci_bus_id, GiB(g.memory_bytes),
        g.compute_major > 0 ? absl::StrCat(g.compute_major, ".", g.compute_minor) : "-",
        Or(g.numa_node), MigSummary(g));
    for (const auto& m : g.mig_devices) {
      absl::StrAppendFormat(&out, "     MIG %-24s %-42s GI %u CI %u %10s\n", m.profile, m.uuid,
                            m.gpu_instance_id, m.compute_instance_id, GiB(m.memory_bytes));
    }
  }
  if (inv.gpus.size() > 1) {
    out +=
        "\ntopology (NVn: n NVLink/XGMI links, PIX: same PCIe switch, NODE: same NUMA node, "
        "SYS: across sockets)\n     ";
    for (const auto& g : inv.gpus)
      absl::StrAppendFormat(&out, "%-6s", absl::StrCat("GPU", g.index));
    out += "\n";
    for (const auto& g : inv.gpus) {
      absl::StrAppendFormat(&out, "%-5s", absl::StrCat("GPU", g.index));
      for (const auto& peer : inv.gpus) {
        std::string cell = "X";
        for (const auto& l : g.links) {
          if (l.peer_index == peer.index) cell = LinkLabel(l);
        }
        absl::StrAppendFormat(&out, "%-6s", cell);
      }
      out += "\n";
    }
  }
}

void RenderSample(const hw::Sample& s, std::string& out) {
  absl::StrAppend(&out, "\ntelemetry at ",
                  absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", s.time, absl::UTCTimeZone()), "\n");
  absl::StrAppendFormat(&out, "%-4s %5s %5s %21s %5s %15s %7s %9s %s\n", "IDX", "UTIL", "MEM%",
                        "MEMORY USED/FREE", "TEMP", "POWER/LIMIT", "SM MHZ", "ECC DBE", "PROCS");
  for (const auto& g : s.gpus) {
    if (g.lost) {
      absl::StrAppendFormat(&out, "%-4d GPU LOST\n", g.index);
      continue;
    }
    const std::string memory =
        g.memory_used_bytes ? absl::StrCat(GiB(*g.memory_used_bytes), "/",
                                           g.memory_free_bytes ? GiB(*g.memory_free_bytes) : "-")
                            : "-";
    const std::string power =
        g.power_watts
            ? absl::StrFormat(
                  "%.0f/%s W", *g.power_watts,
                  g.power_limit_watts ? absl::StrFormat("%.0f", *g.power_limit_watts) : "-")
            : "-";
    absl::StrAppendFormat(&out, "%-4d %5s %5s %21s %5s %15s %7s %9s %d\n", g.index,
                          Or(g.gpu_utilization_percent, "%"), Or(g.memory_utilization_percent, "%"),
                          memory, Or(g.temperature_celsius, "C"), power, Or(g.sm_clock_mhz),
                          Or(g.ecc_volatile_uncorrected), static_cast<int>(g.processes.size()));
  }
}

}  // namespace

absl::StatusOr<NodeReport> Report(const std::vector<hw::Accelerator*>& accelerators,
                                  bool take_sample) {
  NodeReport report;
  for (hw::Accelerator* accelerator : accelerators) {
    VendorReport v{.vendor = accelerator->vendor()};
    GPUOP_ASSIGN_OR_RETURN(v.inventory, accelerator->Discover());
    if (take_sample) {
      GPUOP_ASSIGN_OR_RETURN(hw::Sample sample, accelerator->TakeSample());
      v.sample = std::move(sample);
    }
    report.vendors.push_back(std::move(v));
  }
  return report;
}

absl::StatusOr<NodeReport> DiscoverNode(const DiscoverOptions& options) {
  std::vector<std::unique_ptr<hw::Accelerator>> owned;
  std::vector<std::string> notes;
  absl::StatusOr<std::unique_ptr<hw::NvmlAccelerator>> nvml = hw::NvmlAccelerator::Open(
      {.library_path = options.nvml_library, .sysfs_root = options.sysfs_root.string()});
  if (nvml.ok()) {
    owned.push_back(*std::move(nvml));
  } else {
    notes.push_back(absl::StrCat("nvidia: ", nvml.status().message()));
  }
  // amdgpu reports through sysfs; a node without it has an empty AMD inventory.
  auto amd = std::make_unique<hw::AmdAccelerator>(
      hw::AmdOptions{.sysfs_root = options.sysfs_root.string()});
  absl::StatusOr<hw::Inventory> amd_inventory = amd->Discover();
  if (!amd_inventory.ok()) {
    notes.push_back(absl::StrCat("amd: ", amd_inventory.status().message()));
  } else if (!amd_inventory->gpus.empty()) {
    owned.push_back(std::move(amd));
  }
  std::vector<hw::Accelerator*> accelerators;
  for (auto& a : owned) accelerators.push_back(a.get());
  GPUOP_ASSIGN_OR_RETURN(NodeReport report, Report(accelerators, options.take_sample));
  absl::StatusOr<hw::PciInventory> pci = hw::DiscoverPci(options.sysfs_root.string());
  if (pci.ok()) {
    for (const absl::Status& error : pci->errors) notes.push_back(std::string(error.message()));
    report.pci = *std::move(pci);
  } else {
    notes.push_back(absl::StrCat("pci: ", pci.status().message()));
  }
  report.notes = std::move(notes);
  return report;
}

void RenderPci(const hw::PciInventory& pci, std::string& out) {
  absl::StrAppend(&out, "pci: ", pci.GpuCount(hw::Vendor::kNvidia), " NVIDIA, ",
                  pci.GpuCount(hw::Vendor::kAmd), " AMD, ", pci.GpuCount(hw::Vendor::kIntel),
                  " Intel GPU(s); ", pci.NvSwitchCount(), " NVSwitch(es)\n");
  if (pci.devices.empty()) return;
  absl::StrAppendFormat(&out, "%-13s %-7s %-9s %-7s %-5s %s\n", "ADDRESS", "VENDOR", "DEVICE",
                        "CLASS", "NUMA", "DRIVER");
  for (const auto& d : pci.devices) {
    absl::StrAppendFormat(&out, "%-13s %-7s %-9s %-7s %-5s %s\n", d.address,
                          hw::VendorName(d.vendor()), absl::StrFormat("0x%04x", d.device_id),
                          absl::StrFormat("0x%04x", d.class4()), Or(d.numa_node),
                          d.driver.empty() ? "(none)" : d.driver);
  }
}

std::string RenderTable(const NodeReport& report) {
  std::string out;
  if (report.pci.has_value()) {
    RenderPci(*report.pci, out);
    out += "\n";
  }
  for (const auto& v : report.vendors) {
    RenderInventory(v, out);
    if (v.sample.has_value() && !v.sample->gpus.empty()) RenderSample(*v.sample, out);
    out += "\n";
  }
  if (report.vendors.empty()) out += "no GPU driver found on this node\n";
  for (const auto& note : report.notes) absl::StrAppend(&out, "note: ", note, "\n");
  return out;
}

nlohmann::json RenderJson(const NodeReport& report) {
  nlohmann::json vendors = nlohmann::json::array();
  for (const auto& v : report.vendors) {
    nlohmann::json entry = {{"vendor", hw::VendorName(v.vendor)},
                            {"inventory", hw::ToJson(v.inventory)}};
    if (v.sample.has_value()) entry["sample"] = hw::ToJson(*v.sample);
    vendors.push_back(entry);
  }
  nlohmann::json out = {{"vendors", vendors}, {"notes", report.notes}};
  if (report.pci.has_value()) {
    nlohmann::json devices = nlohmann::json::array();
    for (const auto& d : report.pci->devices) {
      nlohmann::json dev = {{"address", d.address},
                            {"vendor", hw::VendorName(d.vendor())},
                            {"deviceId", absl::StrFormat("0x%04x", d.device_id)},
                            {"class", absl::StrFormat("0x%04x", d.class4())},
                            {"driver", d.driver},
                            {"nvswitch", d.IsNvSwitch()}};
      if (d.numa_node) dev["numaNode"] = *d.numa_node;
      devices.push_back(dev);
    }
    out["pci"] = devices;
  }
  return out;
}

}  // namespace gpuop::agent
