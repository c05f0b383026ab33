#include "hw/nvml/nvml_accelerator.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "hw/pci/sysfs.h"

namespace gpuop::hw {
namespace {

// A bounded probe: NVML's link count constant changed between releases (12, 18, 36), so links
// are probed until the library says there are no more.
constexpr unsigned int kMaxNvLinks = 64;

std::string CString(const char* buffer, size_t size) {
  return std::string(buffer, strnlen(buffer, size));
}

}  // namespace

std::string NvidiaFamily(int major, int minor) {
  switch (major) {
    case 1:
      return "tesla";
    case 2:
      return "fermi";
    case 3:
      return "kepler";
    case 5:
      return "maxwell";
    case 6:
      return "pascal";
    case 7:
      return minor < 5 ? "volta" : "turing";
    case 8:
      return minor < 9 ? "ampere" : "ada-lovelace";
    case 9:
      return "hopper";
    case 10:
    case 12:
      return "blackwell";
    case 13:
      return "rubin";
    default:
      return "";
  }
}

std::string NormalizePciBusId(const std::string& nvml_bus_id) {
  unsigned int domain = 0, bus = 0, device = 0, function = 0;
  if (std::sscanf(nvml_bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) {
    return absl::AsciiStrToLower(nvml_bus_id);
  }
  return absl::StrFormat("%04x:%02x:%02x.%x", domain & 0xffff, bus, device, function);
}

absl::StatusOr<std::unique_ptr<NvmlAccelerator>> NvmlAccelerator::Open(const NvmlOptions& options) {
  GPUOP_ASSIGN_OR_RETURN(std::unique_ptr<NvmlLibrary> lib, NvmlLibrary::Load(options.library_path));
  return std::unique_ptr<NvmlAccelerator>(new NvmlAccelerator(std::move(lib), options));
}

NvmlAccelerator::~NvmlAccelerator() {
  FreeGpmSamples();
  absl::MutexLock lock(&mu_);
  if (event_set_ != nullptr && lib_->fn().nvmlEventSetFree != nullptr) {
    lib_->fn().nvmlEventSetFree(event_set_);
  }
}

int64_t NvmlAccelerator::calls() const { return calls_.load(); }

absl::Status NvmlAccelerator::ResetGpus(const std::vector<int>& gpu_indexes) {
  if (!reset_gpus_) return absl::UnimplementedError("no GPU reset command is configured");
  std::vector<std::string> bus_ids;
  for (int index : gpu_indexes) {
    GPUOP_ASSIGN_OR_RETURN(nvmlDevice_t device, Handle(index));
    nvmlPciInfo_t pci{};
    GPUOP_RETURN_IF_ERROR(
        Call(lib_->fn().nvmlDeviceGetPciInfo_v3, "nvmlDeviceGetPciInfo_v3", index, device, &pci));
    bus_ids.push_back(NormalizePciBusId(CString(pci.busId, sizeof(pci.busId))));
  }
  FreeGpmSamples();  // samples do not outlive the NVML session
  absl::MutexLock lock(&mu_);
  // The event set holds the GPUs too; it is registered again by the next WaitEvents.
  if (event_set_ != nullptr && lib_->fn().nvmlEventSetFree != nullptr) {
    lib_->fn().nvmlEventSetFree(event_set_);
  }
  event_set_ = nullptr;
  event_devices_.clear();
  return lib_->WhileReleased([&] { return reset_gpus_(bus_ids); });
}

absl::Status NvmlAccelerator::CreateMigDeviceNodes() {
  if (!create_mig_device_nodes_) {
    return absl::UnimplementedError("no command that creates MIG device nodes is configured");
  }
  return create_mig_device_nodes_();
}

absl::StatusOr<nvmlDevice_t> NvmlAccelerator::Handle(int gpu_index) const {
  nvmlDevice_t device = nullptr;
  GPUOP_RETURN_IF_ERROR(Call(lib_->fn().nvmlDeviceGetHandleByIndex_v2,
                             "nvmlDeviceGetHandleByIndex_v2", gpu_index,
                             static_cast<unsigned int>(gpu_index), &device));
  return device;
}

absl::StatusOr<Gpu> NvmlAccelerator::DescribeGpu(int index, nvmlDevice_t device) const {
  const NvmlFunctions& f = lib_->fn();
  Gpu gpu{.vendor = Vendor::kNvidia, .index = index};
  char buffer[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {0};
  GPUOP_RETURN_IF_ERROR(
      Call(f.nvmlDeviceGetName, "nvmlDeviceGetName", index, device, buffer, sizeof(buffer)));
  gpu.product = CString(buffer, sizeof(buffer));
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {0};
  GPUOP_RETURN_IF_ERROR(
      Call(f.nvmlDeviceGetUUID, "nvmlDeviceGetUUID", index, device, uuid, sizeof(uuid)));
  gpu.uuid = CString(uuid, sizeof(uuid));
  nvmlPciInfo_t pci{};
  GPUOP_RETURN_IF_ERROR(
      Call(f.nvmlDeviceGetPciInfo_v3, "nvmlDeviceGetPciInfo_v3", index, device, &pci));
  gpu.pci_bus_id = NormalizePciBusId(CString(pci.busId, sizeof(pci.busId)));
  gpu.pci_device_id = pci.pciDeviceId;
  gpu.pci_subsystem_id = pci.pciSubSystemId;

  bool lost = false;
  int major = 0, minor = 0;
  if (f.nvmlDeviceGetCudaComputeCapability != nullptr &&
      f.nvmlDeviceGetCudaComputeCapability(device, &major, &minor) == NVML_SUCCESS) {
    gpu.compute_major = major;
    gpu.compute_minor = minor;
  }
  gpu.architecture = NvidiaFamily(gpu.compute_major, gpu.compute_minor);
  if (auto mem = Optional<nvmlMemory_t>(f.nvmlDeviceGetMemoryInfo, &lost, device)) {
    gpu.memory_bytes = mem->total;
  }
  const std::string pci_dir =
      absl::StrCat(sysfs_root_, "/bus/pci/devices/", absl::AsciiStrToLower(gpu.pci_bus_id));
  // -1 is the kernel's "no affinity" (a single-node machine, or firmware that says nothing).
  if (std::optional<int64_t> numa = sysfs::ReadOptionalInt(pci_dir + "/numa_node");
      numa.has_value() && *numa >= 0 && *numa < 1024) {
    gpu.numa_node = static_cast<int>(*numa);
  }
  if (absl::StatusOr<uint64_t> pci_class = sysfs::ReadHex(pci_dir + "/class");
      pci_class.ok() && *pci_class <= 0xffffff) {
    gpu.pci_class = static_cast<uint32_t>(*pci_class);
  }
  gpu.fabric = DescribeFabric(device);
  if (auto minor_number = Optional<unsigned int>(f.nvmlDeviceGetMinorNumber, &lost, device)) {
    gpu.minor_number = *minor_number;
    gpu.device_nodes.push_back(absl::StrCat("/dev/nvidia", *minor_number));
  }
  char serial[NVML_DEVICE_SERIAL_BUFFER_SIZE] = {0};
  if (f.nvmlDeviceGetSerial != nullptr &&
      f.nvmlDeviceGetSerial(device, serial, sizeof(serial)) == NVML_SUCCESS) {
    gpu.serial = CString(serial, sizeof(serial));
  }
  DescribeMig(device, gpu);
  return gpu;
}

std::optional<GpuFabric> NvmlAccelerator::DescribeFabric(nvmlDevice_t device) const {
  std::optional<nvmlGpuFabricInfo_t> info =
      Optional<nvmlGpuFabricInfo_t>(lib_->fn().nvmlDeviceGetGpuFabricInfo, nullptr, device);
  if (!info.has_value() || info->state != NVML_GPU_FABRIC_STATE_COMPLETED ||
      info->status != NVML_SUCCESS) {
    return std::nullopt;
  }
  const unsigned char* u = info->clusterUuid;
  if (std::all_of(u, u + NVML_GPU_FABRIC_UUID_LEN, [](unsigned char c) { return c == 0; })) {
    return std::nullopt;
  }
  return GpuFabric{
      .cluster_uuid = absl::StrFormat(
          "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
          u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]),
      .clique_id = info->cliqueId};
}

void NvmlAccelerator::DescribeTopology(const std::vector<nvmlDevice_t>& devices,
                                       std::vector<Gpu>& gpus) const {
  const NvmlFunctions& f = lib_->fn();
  // NVLink endpoints per GPU: the remote PCI bus ids of its active links. A remote that is one of
  // our GPUs is a direct link; any other remote is an NVSwitch, and GPUs sharing a switch are
  // NVLink peers.
  std::vector<std::multiset<std::string>> remotes(devices.size());
  std::map<std::string, int> gpu_by_bus;
  for (size_t i = 0; i < gpus.size(); ++i) gpu_by_bus[gpus[i].pci_bus_id] = static_cast<int>(i);
  for (size_t i = 0; i < devices.size(); ++i) {
    if (f.nvmlDeviceGetNvLinkState == nullptr || f.nvmlDeviceGetNvLinkRemotePciInfo_v2 == nullptr) {
      break;
    }
    for (unsigned int link = 0; link < kMaxNvLinks; ++link) {
      nvmlEnableState_t active = NVML_FEATURE_DISABLED;
      calls_.fetch_add(1, std::memory_order_relaxed);
      if (f.nvmlDeviceGetNvLinkState(devices[i], link, &active) != NVML_SUCCESS) break;
      if (active != NVML_FEATURE_ENABLED) continue;
      nvmlPciInfo_t remote{};
      calls_.fetch_add(1, std::memory_order_relaxed);
      if (f.nvmlDeviceGetNvLinkRemotePciInfo_v2(devices[i], link, &remote) != NVML_SUCCESS) {
        continue;
      }
      remotes[i].insert(NormalizePciBusId(CString(remote.busId, sizeof(remote.busId))));
    }
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    for (size_t j = 0; j < devices.size(); ++j) {
      if (i == j) continue;
      Link link{.peer_index = gpus[j].index};
      // Direct links to j, and links to switches j also reaches.
      int nvlinks = static_cast<int>(remotes[i].count(gpus[j].pci_bus_id));
      for (const auto& endpoint : std::set<std::string>(remotes[i].begin(), remotes[i].end())) {
        if (!gpu_by_bus.contains(endpoint) && remotes[j].contains(endpoint)) {
          nvlinks += static_cast<int>(remotes[i].count(endpoint));
        }
      }
      int level = NVML_TOPOLOGY_SYSTEM;
      if (f.nvmlDeviceGetTopologyCommonAncestor != nullptr) {
        calls_.fetch_add(1, std::memory_order_relaxed);
        if (f.nvmlDeviceGetTopologyCommonAncestor(devices[i], devices[j], &level) != NVML_SUCCESS) {
          level = NVML_TOPOLOGY_SYSTEM;
        }
      }
      if (level <= NVML_TOPOLOGY_MULTIPLE) {
        link.pcie = LinkKind::kSamePcieSwitch;
      } else if (level <= NVML_TOPOLOGY_NODE) {
        link.pcie = LinkKind::kSameNumaNode;
      } else {
        link.pcie = LinkKind::kCrossSocket;
      }
      link.kind = link.pcie;
      if (nvlinks > 0) {
        link.kind = LinkKind::kGpuFabric;
        link.fabric_links = nvlinks;
      }
      gpus[i].links.push_back(link);
    }
  }
}

absl::StatusOr<Inventory> NvmlAccelerator::Discover() {
  const NvmlFunctions& f = lib_->fn();
  Inventory inventory;
  char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {0};
  GPUOP_RETURN_IF_ERROR(Call(f.nvmlSystemGetDriverVersion, "nvmlSystemGetDriverVersion", -1, driver,
                             static_cast<unsigned int>(sizeof(driver))));
  inventory.driver_version = CString(driver, sizeof(driver));
  if (auto cuda = Optional<int>(f.nvmlSystemGetCudaDriverVersion, nullptr)) {
    inventory.cuda_driver_version = *cuda;
  }
  unsigned int count = 0;
  GPUOP_RETURN_IF_ERROR(Call(f.nvmlDeviceGetCount_v2, "nvmlDeviceGetCount_v2", -1, &count));
  std::vector<nvmlDevice_t> devices;
  for (unsigned int i = 0; i < count; ++i) {
    // Each GPU on its own: one that cannot be described is reported, not fatal.
    const int index = static_cast<int>(i);
    absl::StatusOr<nvmlDevice_t> device = Handle(index);
    absl::StatusOr<Gpu> gpu = device.ok() ? DescribeGpu(index, *device) : device.status();
    absl::MutexLock lock(&described_mu_);
    if (gpu.ok()) {
      described_[index] = *gpu;
    } else if (auto known = described_.find(index);
               gpu.status().code() == absl::StatusCode::kUnavailable && known != described_.end()) {
      gpu = known->second;  // lost since: still in the machine, as last described
      gpu->links.clear();
    } else {
      inventory.unavailable.push_back(
          {.index = index, .reason = std::string(gpu.status().message())});
      continue;
    }
    devices.push_back(device.ok() ? *device : nullptr);
    inventory.gpus.push_back(*std::move(gpu));
  }
  DescribeTopology(devices, inventory.gpus);
  return inventory;
}

absl::Status NvmlAccelerator::SetPowerLimit(int gpu_index, double watts) {
  GPUOP_ASSIGN_OR_RETURN(nvmlDevice_t device, Handle(gpu_index));
  if (!(watts > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("set power limit of GPU ", gpu_index, ": ", watts, " W is not positive"));
  }
  return Call(lib_->fn().nvmlDeviceSetPowerManagementLimit, "nvmlDeviceSetPowerManagementLimit",
              gpu_index, device, static_cast<unsigned int>(watts * 1000.0 + 0.5));
}

absl::Status NvmlAccelerator::SetComputeMode(int gpu_index, ComputeMode mode) {
  GPUOP_ASSIGN_OR_RETURN(nvmlDevice_t device, Handle(gpu_index));
  nvmlComputeMode_t value = NVML_COMPUTEMODE_DEFAULT;
  if (mode == ComputeMode::kExclusiveProcess) value = NVML_COMPUTEMODE_EXCLUSIVE_PROCESS;
  if (mode == ComputeMode::kProhibited) value = NVML_COMPUTEMODE_PROHIBITED;
  return Call(lib_->fn().nvmlDeviceSetComputeMode, "nvmlDeviceSetComputeMode", gpu_index, device,
              value);
}

absl::StatusOr<ComputeMode> NvmlAccelerator::GetComputeMode(int gpu_index) {
  GPUOP_ASSIGN_OR_RETURN(nvmlDevice_t device, Handle(gpu_index));
  nvmlComputeMode_t value = NVML_COMPUTEMODE_DEFAULT;
  GPUOP_RETURN_IF_ERROR(Call(lib_->fn().nvmlDeviceGetComputeMode, "nvmlDeviceGetComputeMode",
                             gpu_index, device, &value));
  switch (value) {
    case NVML_COMPUTEMODE_DEFAULT:
      return ComputeMode::kDefault;
    case NVML_COMPUTEMODE_EXCLUSIVE_PROCESS:
      return ComputeMode::kExclusiveProcess;
    case NVML_COMPUTEMODE_PROHIBITED:
      return ComputeMode::kProhibited;
    default:
      return absl::InternalError(absl::StrCat("nvmlDeviceGetComputeMode(GPU ", gpu_index,
                                              "): compute mode ", value, " is not one gpuop sets"));
  }
}

}  // namespace gpuop::hw
