// AmdAccelerator: discovery (identity, KFD facts, topology) and the unsupported operations.
// Telemetry and control are in amd_telemetry.cc.
#include "hw/amd/amd_accelerator.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "hw/amd/amd_names.h"
#include "hw/amd/kfd_topology.h"
#include "hw/pci/pci.h"
#include "hw/pci/sysfs.h"

namespace gpuop::hw {
namespace {

constexpr char kBoundDir[] = "module/amdgpu/drivers/pci:amdgpu";

// N from "card<N>" or "renderD<N>"; connectors such as "card1-DP-1" are not nodes.
std::optional<int> DrmNumber(absl::string_view name, absl::string_view prefix) {
  if (!absl::ConsumePrefix(&name, prefix) || name.empty() ||
      !std::all_of(name.begin(), name.end(),
                   [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); })) {
    return std::nullopt;
  }
  std::optional<int64_t> number = sysfs::ParseInt(name);
  if (!number || *number > 1 << 20) return std::nullopt;
  return static_cast<int>(*number);
}

// The device's canonical path from its root complex ("pci0000:40") down to itself.
std::vector<std::string> PciPath(const std::string& device_dir) {
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(device_dir, ec);
  if (ec) return {};
  std::vector<std::string> parts;
  for (const std::filesystem::path& part : real) parts.push_back(part.string());
  auto root = std::find_if(parts.begin(), parts.end(), [](const std::string& part) {
    return absl::StartsWith(part, "pci") && part.find(':') != std::string::npos;
  });
  return {root, parts.end()};
}

// Whether two devices sit below a common PCI bridge (a root port or a switch port), which is
// what NVML calls PIX/PXB; sharing only the root complex is the host bridge level.
bool SharePcieBridge(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t common = 0;
  while (common + 1 < a.size() && common + 1 < b.size() && a[common] == b[common]) ++common;
  return common >= 2;
}

struct Described {
  Gpu gpu;
  AmdGpuInfo info;
  std::vector<std::string> pci_path;
  const KfdNode* kfd = nullptr;
};

void DescribeLinks(std::vector<Described>& gpus) {
  for (size_t i = 0; i < gpus.size(); ++i) {
    for (size_t j = 0; j < gpus.size(); ++j) {
      if (i == j) continue;
      const Described& a = gpus[i];
      const Described& b = gpus[j];
      Link link{.peer_index = static_cast<int>(j)};
      int xgmi = 0;
      if (a.kfd != nullptr && b.kfd != nullptr) {
        xgmi = static_cast<int>(
            std::count_if(a.kfd->io_links.begin(), a.kfd->io_links.end(), [&](const KfdIoLink& l) {
              return l.node_to == b.kfd->id && l.type == kKfdIoLinkXgmi;
            }));
      }
      const bool same_hive = a.info.hive_id != 0 && a.info.hive_id == b.info.hive_id;
      if (SharePcieBridge(a.pci_path, b.pci_path)) {
        link.pcie = LinkKind::kSamePcieSwitch;
      } else if (a.gpu.numa_node && a.gpu.numa_node == b.gpu.numa_node) {
        link.pcie = LinkKind::kSameNumaNode;
      } else {
        link.pcie = LinkKind::kCrossSocket;
      }
      link.kind = link.pcie;
      if (xgmi > 0 || same_hive) {
        link.kind = LinkKind::kGpuFabric;  // the direct GPU-to-GPU fabric: XGMI on AMD
        link.fabric_links = xgmi;
      }
      gpus[i].gpu.links.push_back(link);
    }
  }
}

absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

}  // namespace

AmdAccelerator::AmdAccelerator(AmdOptions options) : options_(std::move(options)) {}

std::string AmdAccelerator::DeviceDir(const std::string& address) const {
  return sysfs::Join(options_.sysfs_root, absl::StrCat("bus/pci/devices/", address));
}

bool AmdAccelerator::Bound(const std::string& address) const {
  return sysfs::Exists(sysfs::Join(options_.sysfs_root, absl::StrCat(kBoundDir, "/", address)));
}

absl::StatusOr<std::vector<std::string>> AmdAccelerator::BoundAddresses() const {
  const std::string dir = sysfs::Join(options_.sysfs_root, kBoundDir);
  absl::StatusOr<std::vector<std::string>> names = sysfs::ListDir(dir);
  if (!names.ok()) {
    if (absl::IsNotFound(names.status())) return std::vector<std::string>{};
    return Annotate(names.status(), "list amdgpu devices");
  }
  std::vector<std::string> addresses;
  for (const std::string& name : *names) {
    if (IsPciAddress(name)) addresses.push_back(name);
  }
  return addresses;
}

absl::StatusOr<std::vector<std::string>> AmdAccelerator::KnownAddresses() {
  {
    absl::MutexLock lock(&mu_);
    if (addresses_) return *addresses_;
  }
  absl::StatusOr<AmdDiscovery> discovery = DiscoverAmd();
  if (!discovery.ok()) return discovery.status();
  absl::MutexLock lock(&mu_);
  return *addresses_;
}

absl::StatusOr<Inventory> AmdAccelerator::Discover() {
  absl::StatusOr<AmdDiscovery> discovery = DiscoverAmd();
  if (!discovery.ok()) return discovery.status();
  return std::move(discovery->inventory);
}

absl::StatusOr<AmdDiscovery> AmdAccelerator::DiscoverAmd() {
  absl::StatusOr<std::vector<std::string>> addresses = BoundAddresses();
  if (!addresses.ok()) return addresses.status();
  AmdDiscovery discovery;
  if (addresses->empty()) {
    absl::MutexLock lock(&mu_);
    addresses_ = std::vector<std::string>{};
    return discovery;
  }
  discovery.inventory.driver_version =
      sysfs::ReadOptionalString(sysfs::Join(options_.sysfs_root, "module/amdgpu/version"))
          .value_or("");
  discovery.driver_src_version =
      sysfs::ReadOptionalString(sysfs::Join(options_.sysfs_root, "module/amdgpu/srcversion"))
          .value_or("");
  const KfdTopology kfd = ReadKfdTopology(options_.sysfs_root);
  discovery.warnings = kfd.warnings;
  const bool has_kfd = sysfs::Exists(sysfs::Join(options_.sysfs_root, "class/kfd/kfd"));

  std::vector<Described> described;
  for (const std::string& address : *addresses) {
    const std::string dir = DeviceDir(address);
    std::vector<absl::Status> problems;
    absl::StatusOr<PciDevice> pci = ReadPciDevice(dir, address, &problems);
    if (!pci.ok()) {
      if (!Bound(address)) continue;  // removed while we looked
      return Annotate(pci.status(), absl::StrCat("discover AMD GPU ", address));
    }
    for (const absl::Status& problem : problems) {
      discovery.warnings.push_back(std::string(problem.message()));
    }
    if (pci->vendor_id != kPciVendorAmd) {
      discovery.warnings.push_back(absl::StrFormat(
          "%s: vendor 0x%04x bound to amdgpu is not AMD; skipped", address, pci->vendor_id));
      continue;
    }
    const int index = static_cast<int>(described.size());
    Described d;
    AmdGpuInfo& info = d.info;
    info = {.index = index,
            .pci_bus_id = address,
            .device_id = pci->device_id,
            .revision = pci->revision};
    for (const std::string& name :
         sysfs::ListDir(sysfs::Join(dir, "drm")).value_or(std::vector<std::string>{})) {
      if (auto card = DrmNumber(name, "card")) info.card = *card;
      if (auto render = DrmNumber(name, "renderD")) info.render_minor = *render;
    }
    if (info.render_minor < 0) {
      discovery.warnings.push_back(absl::StrCat(address, ": no DRM render node"));
    }
    d.kfd = kfd.FindGpu(info.render_minor, address);
    if (d.kfd != nullptr) {
      info.kfd_node = d.kfd->id;
      info.gfx_target_version = static_cast<uint32_t>(d.kfd->Get("gfx_target_version"));
      info.family = AmdFamilyName(info.gfx_target_version);
      info.simd_count = static_cast<uint32_t>(d.kfd->Get("simd_count"));
      info.simd_per_cu = static_cast<uint32_t>(d.kfd->Get("simd_per_cu"));
      info.cu_count = info.simd_per_cu == 0 ? 0 : info.simd_count / info.simd_per_cu;
      info.num_xcc = static_cast<uint32_t>(d.kfd->Get("num_xcc", 1));
      info.kfd_memory_bytes = d.kfd->memory_bytes.value_or(0);
      info.hive_id = d.kfd->Get("hive_id");
    } else if (has_kfd) {
      discovery.warnings.push_back(absl::StrCat(address, ": no KFD topology node"));
    }
    auto attribute = [&](const char* file) {
      return sysfs::ReadOptionalString(sysfs::Join(dir, file)).value_or("");
    };
    info.compute_partition = absl::AsciiStrToLower(attribute("current_compute_partition"));
    info.memory_partition = absl::AsciiStrToLower(attribute("current_memory_partition"));
    info.compute_partitioning_supported =
        sysfs::Exists(sysfs::Join(dir, "available_compute_partition"));
    info.memory_partitioning_supported =
        sysfs::Exists(sysfs::Join(dir, "available_memory_partition"));

    Gpu& gpu = d.gpu;
    gpu.vendor = Vendor::kAmd;
    gpu.index = index;
    gpu.pci_bus_id = address;
    gpu.uuid = absl::AsciiStrToLower(attribute("unique_id"));
    if (gpu.uuid.empty() && d.kfd != nullptr && d.kfd->Get("unique_id") != 0) {
      gpu.uuid = absl::StrFormat("%016x", d.kfd->Get("unique_id"));
    }
    if (gpu.uuid.empty()) gpu.uuid = address;
    gpu.product = attribute("product_name");
    if (gpu.product.empty()) gpu.product = AmdInstinctProductName(info.device_id);
    if (gpu.product.empty()) gpu.product = absl::StrFormat("AMD GPU %04x", info.device_id);
    gpu.architecture = GfxTargetName(info.gfx_target_version);
    gpu.memory_bytes = sysfs::ReadOptionalUint(sysfs::Join(dir, "mem_info_vram_total")).value_or(0);
    if (gpu.memory_bytes == 0) gpu.memory_bytes = info.kfd_memory_bytes;
    gpu.numa_node = pci->numa_node;
    gpu.serial = attribute("serial_number");
    if (has_kfd) gpu.device_nodes.push_back(sysfs::Join(options_.dev_root, "kfd"));
    if (info.card >= 0) {
      gpu.device_nodes.push_back(
          sysfs::Join(options_.dev_root, absl::StrCat("dri/card", info.card)));
    }
    if (info.render_minor >= 0) {
      gpu.device_nodes.push_back(
          sysfs::Join(options_.dev_root, absl::StrCat("dri/renderD", info.render_minor)));
    }
    d.pci_path = PciPath(dir);
    described.push_back(std::move(d));
  }
  DescribeLinks(described);

  std::vector<std::string> known;
  for (Described& d : described) {
    known.push_back(d.gpu.pci_bus_id);
    discovery.inventory.gpus.push_back(std::move(d.gpu));
    discovery.gpus.push_back(std::move(d.info));
  }
  absl::MutexLock lock(&mu_);
  addresses_ = std::move(known);
  return discovery;
}

absl::StatusOr<std::vector<HardwareEvent>> AmdAccelerator::WaitEvents(absl::Duration) {
  return absl::UnimplementedError(
      "WaitEvents: amdgpu has no event source without ROCm; GPU loss shows in TakeSample");
}

absl::StatusOr<bool> AmdAccelerator::SetMigMode(int gpu_index, bool) {
  return absl::UnimplementedError(
      absl::StrCat("SetMigMode(GPU ", gpu_index, "): MIG is NVIDIA's; AMD GPUs have none"));
}

absl::StatusOr<MigDevice> AmdAccelerator::CreateMigDevice(int gpu_index, const std::string&) {
  return absl::UnimplementedError(
      absl::StrCat("CreateMigDevice(GPU ", gpu_index, "): MIG is NVIDIA's; AMD GPUs have none"));
}

absl::Status AmdAccelerator::DestroyMigDevice(int gpu_index, unsigned int) {
  return absl::UnimplementedError(
      absl::StrCat("DestroyMigDevice(GPU ", gpu_index, "): MIG is NVIDIA's; AMD GPUs have none"));
}

}  // namespace gpuop::hw
