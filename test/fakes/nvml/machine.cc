#include "test/fakes/nvml/machine.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "test/fakes/driver/holders.h"
#include "test/fakes/nvml/device_nodes.h"
#include "test/fakes/nvml/ids.h"
#include "test/fakes/nvml/mig.h"

namespace gpuop::fakenvml {
namespace {

constexpr unsigned long long kMiB = 1024ULL * 1024ULL;

void CopyBusIds(const PciAddress& pci, nvmlPciInfo_t& info) {
  const std::string bus_id = FormatBusId(pci);
  const std::string legacy = FormatLegacyBusId(pci);
  std::memset(info.busId, 0, sizeof(info.busId));
  std::memset(info.busIdLegacy, 0, sizeof(info.busIdLegacy));
  std::memcpy(info.busId, bus_id.data(), std::min(bus_id.size(), sizeof(info.busId) - 1));
  std::memcpy(info.busIdLegacy, legacy.data(),
              std::min(legacy.size(), sizeof(info.busIdLegacy) - 1));
  info.domain = pci.domain;
  info.bus = pci.bus;
  info.device = pci.device;
}

}  // namespace

Machine::Machine(Scenario scenario) : scenario_(std::move(scenario)) {}

absl::StatusOr<std::unique_ptr<Machine>> Machine::Create(Scenario scenario) {
  std::unique_ptr<Machine> machine(new Machine(std::move(scenario)));
  for (size_t i = 0; i < machine->scenario_.gpus.size(); ++i) {
    auto gpu = std::make_unique<GpuState>();
    gpu->index = static_cast<int>(i);
    gpu->spec = machine->scenario_.gpus[i];
    gpu->handle.gpu = gpu.get();
    gpu->values = gpu->spec.values;
    gpu->power_limit_mw = gpu->spec.power ? gpu->spec.power->default_mw : 0;
    gpu->mig_enabled = gpu->spec.mig_enabled;
    gpu->mig_pending = gpu->mig_enabled;
    gpu->processes = gpu->spec.processes;
    gpu->call_errors = gpu->spec.call_errors;
    machine->handles_.devices.insert(&gpu->handle);
    if (gpu->mig_enabled) GPUOP_RETURN_IF_ERROR(CreateInitialInstances(*gpu, machine->handles_));
    machine->gpus_.push_back(std::move(gpu));
  }
  return machine;
}

nvmlReturn_t Machine::Resolve(nvmlDevice_t handle, DeviceRef* out) const {
  if (handle == nullptr || !handles_.devices.contains(handle)) return NVML_ERROR_INVALID_ARGUMENT;
  if (handle->gpu->lost) return NVML_ERROR_GPU_IS_LOST;
  *out = DeviceRef{handle->gpu, handle->compute};
  return NVML_SUCCESS;
}

nvmlReturn_t Machine::ResolveGpuInstance(nvmlGpuInstance_t handle, nvmlGpuInstance_st** out) const {
  if (handle == nullptr || !handles_.gpu_instances.contains(handle)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (handle->gpu->lost) return NVML_ERROR_GPU_IS_LOST;
  *out = handle;
  return NVML_SUCCESS;
}

nvmlReturn_t Machine::ResolveComputeInstance(nvmlComputeInstance_t handle,
                                             nvmlComputeInstance_st** out) const {
  if (handle == nullptr || !handles_.compute_instances.contains(handle)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (handle->gpu_instance->gpu->lost) return NVML_ERROR_GPU_IS_LOST;
  *out = handle;
  return NVML_SUCCESS;
}

std::vector<nvmlComputeInstance_st*> Machine::VisibleMigDevices(const GpuState& gpu) const {
  std::vector<nvmlComputeInstance_st*> devices = MigDevices(gpu);
  if (NeedMigMonitor() == NVML_SUCCESS || scenario_.device_nodes.empty()) return devices;
  std::erase_if(devices, [&](const nvmlComputeInstance_st* compute) {
    return !HoldsInstanceCaps(scenario_.device_nodes,
                              {gpu.spec.minor_number, compute->gpu_instance->id, compute->id});
  });
  return devices;
}

nvmlReturn_t Machine::FindByUuid(absl::string_view uuid, nvmlDevice_t* out) const {
  absl::string_view legacy = uuid;
  if (absl::ConsumePrefix(&legacy, "MIG-GPU-")) {
    // MIG-GPU-<gpu uuid>/<gi>/<ci>, from drivers before R470.
    const std::vector<absl::string_view> parts = absl::StrSplit(legacy, '/');
    unsigned int gi = 0;
    unsigned int ci = 0;
    if (parts.size() != 3 || !absl::SimpleAtoi(parts[1], &gi) || !absl::SimpleAtoi(parts[2], &ci)) {
      return NVML_ERROR_NOT_FOUND;
    }
    for (const auto& gpu : gpus_) {
      if (gpu->spec.uuid != absl::StrCat("GPU-", parts[0])) continue;
      for (nvmlComputeInstance_st* compute : VisibleMigDevices(*gpu)) {
        if (compute->gpu_instance->id != gi || compute->id != ci) continue;
        if (gpu->lost) return NVML_ERROR_GPU_IS_LOST;
        *out = &compute->device;
        return NVML_SUCCESS;
      }
    }
    return NVML_ERROR_NOT_FOUND;
  }
  for (const auto& gpu : gpus_) {
    nvmlDevice_t found = nullptr;
    if (gpu->spec.uuid == uuid) found = &gpu->handle;
    for (nvmlComputeInstance_st* compute : VisibleMigDevices(*gpu)) {
      if (compute->uuid == uuid) found = &compute->device;
    }
    if (found == nullptr) continue;
    if (gpu->lost) return NVML_ERROR_GPU_IS_LOST;
    *out = found;
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t Machine::FindByBusId(absl::string_view bus_id, nvmlDevice_t* out) const {
  const std::optional<PciAddress> pci = ParseBusId(bus_id);
  if (!pci) return NVML_ERROR_NOT_FOUND;
  for (const auto& gpu : gpus_) {
    if (!(gpu->spec.pci == *pci)) continue;
    if (gpu->lost) return NVML_ERROR_GPU_IS_LOST;
    *out = &gpu->handle;
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_FOUND;
}

unsigned int Machine::EnforcedPowerLimitMw(const GpuState& gpu) {
  const double cap = gpu.value(Field::kPowerCap);
  if (cap <= 0) return gpu.power_limit_mw;
  return std::min(gpu.power_limit_mw, static_cast<unsigned int>(cap * 1000));
}

unsigned int Machine::PowerUsageMw(const GpuState& gpu) const {
  const double drawn = std::max(0.0, gpu.value(Field::kPower) * 1000);
  if (!gpu.spec.power) return static_cast<unsigned int>(drawn);
  return static_cast<unsigned int>(std::min(drawn, static_cast<double>(EnforcedPowerLimitMw(gpu))));
}

unsigned long long Machine::ClockEventReasons(const GpuState& gpu) const {
  auto reasons = static_cast<unsigned long long>(gpu.value(Field::kClockEventReasons));
  if (gpu.value(Field::kGpuUtil) == 0) reasons |= kClocksEventGpuIdle;
  if (gpu.spec.power && gpu.value(Field::kPower) * 1000 > EnforcedPowerLimitMw(gpu)) {
    reasons |= kClocksEventSwPowerCap;
  }
  if (gpu.spec.thermal && gpu.value(Field::kTemperature) >= gpu.spec.thermal->slowdown_c) {
    reasons |= kClocksEventHwSlowdown | kClocksEventHwThermalSlowdown;
  }
  return reasons;
}

unsigned int Machine::ClockMhz(const GpuState& gpu, int type) const {
  static constexpr Field kFields[] = {Field::kGraphicsClock, Field::kSmClock, Field::kMemoryClock,
                                      Field::kVideoClock};
  const double value = gpu.value(kFields[type]);
  return value < 0 ? MaxClockMhz(gpu, type) : static_cast<unsigned int>(value);
}

unsigned int Machine::MaxClockMhz(const GpuState& gpu, int type) {
  const ClockSpec& max = gpu.spec.max_clocks;
  const unsigned int clocks[] = {max.graphics_mhz, max.sm_mhz, max.memory_mhz, max.video_mhz};
  return clocks[type];
}

MemoryUse Machine::Memory(const DeviceRef& device) const {
  MemoryUse memory;
  unsigned long long processes = 0;
  if (device.is_mig()) {
    const nvmlGpuInstance_st& instance = *device.compute->gpu_instance;
    memory.total = instance.profile->memory_mib * kMiB;
    for (const ProcessSpec& p : device.gpu->processes) {
      if (p.gpu_instance == instance.id) processes += p.used_mib * kMiB;
    }
  } else {
    memory.total = device.gpu->spec.memory_mib * kMiB;
    memory.reserved = device.gpu->spec.reserved_mib * kMiB;
    for (const ProcessSpec& p : device.gpu->processes) processes += p.used_mib * kMiB;
    const double set = device.gpu->value(Field::kMemoryUsed);
    if (set >= 0) processes = static_cast<unsigned long long>(set) * kMiB;
  }
  memory.used = std::min(processes, memory.total - memory.reserved);
  return memory;
}

std::vector<nvmlProcessInfo_t> Machine::Processes(const DeviceRef& device) const {
  std::vector<nvmlProcessInfo_t> infos;
  for (const ProcessSpec& p : device.gpu->processes) {
    if (device.is_mig() && (p.gpu_instance != device.compute->gpu_instance->id ||
                            p.compute_instance != device.compute->id)) {
      continue;
    }
    infos.push_back(nvmlProcessInfo_t{p.pid, p.used_mib * kMiB,
                                      p.gpu_instance.value_or(kNvmlNoInstance),
                                      p.compute_instance.value_or(kNvmlNoInstance)});
  }
  return infos;
}

std::vector<unsigned long long> Machine::RetiredPages(const GpuState& gpu, bool double_bit) const {
  const auto count = static_cast<unsigned long long>(
      gpu.value(double_bit ? Field::kRetiredPagesDoubleBit : Field::kRetiredPagesSingleBit));
  std::vector<unsigned long long> pages;
  for (unsigned long long i = 0; i < count; ++i) {
    pages.push_back((double_bit ? 0x400000ULL : 0x200000ULL) + i * 0x10ULL);
  }
  return pages;
}

int Machine::CommonAncestor(const GpuState& first, const GpuState& second) const {
  if (&first == &second) return NVML_TOPOLOGY_INTERNAL;
  for (const TopologyOverride& entry : scenario_.topology) {
    if ((entry.first == first.index && entry.second == second.index) ||
        (entry.first == second.index && entry.second == first.index)) {
      return entry.level;
    }
  }
  const std::vector<int>& a = first.spec.pcie_switches;
  const std::vector<int>& b = second.spec.pcie_switches;
  size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
  if (common > 0) {
    const size_t switches = (a.size() - common) + (b.size() - common) + 1;
    return switches == 1 ? NVML_TOPOLOGY_SINGLE : NVML_TOPOLOGY_MULTIPLE;
  }
  if (first.spec.host_bridge >= 0 && first.spec.host_bridge == second.spec.host_bridge) {
    return NVML_TOPOLOGY_HOSTBRIDGE;
  }
  return first.spec.numa_node == second.spec.numa_node ? NVML_TOPOLOGY_NODE : NVML_TOPOLOGY_SYSTEM;
}

nvmlPciInfo_t Machine::PciInfo(const GpuState& gpu) {
  nvmlPciInfo_t info{};
  CopyBusIds(gpu.spec.pci, info);
  info.pciDeviceId = gpu.spec.pci_device_id << 16 | 0x10de;
  info.pciSubSystemId = gpu.spec.pci_subsystem_id;
  return info;
}

nvmlPciInfo_t Machine::LinkRemotePciInfo(const LinkSpec& link) const {
  if (link.kind == LinkSpec::Kind::kGpu) return PciInfo(*gpus_[link.target]);
  if (link.kind == LinkSpec::Kind::kHiddenGpu) {
    nvmlPciInfo_t info{};
    CopyBusIds(link.peer_pci, info);
    info.pciDeviceId = link.peer_device_id << 16 | 0x10de;
    info.pciSubSystemId = link.peer_subsystem_id;
    return info;
  }
  const NvSwitchSpec& nvswitch = scenario_.nvswitches[link.target];
  nvmlPciInfo_t info{};
  CopyBusIds(nvswitch.pci, info);
  info.pciDeviceId = nvswitch.pci_device_id << 16 | 0x10de;
  return info;
}

std::string Machine::MigDeviceName(const nvmlComputeInstance_st& compute) const {
  const nvmlGpuInstance_st& instance = *compute.gpu_instance;
  return absl::StrCat(instance.gpu->spec.name, " ", ComputeProfileName(instance, compute.slices));
}

bool Machine::InUse(const GpuState& gpu, bool os_processes) const {
  if (!gpu.processes.empty()) return true;
  if (!os_processes || scenario_.device_nodes.empty()) return false;
  const std::string name = absl::StrCat("nvidia", gpu.spec.minor_number);
  fakedriver::HolderQuery query;
  query.proc = node_proc_;
  query.dev_root = scenario_.device_nodes;
  query.node_names = {name};
  if (fakedriver::FileId node;
      fakedriver::IdentifyFile(absl::StrCat(scenario_.device_nodes, "/", name), &node)) {
    query.open_files = {node};
  }
  return !fakedriver::FindHolders(query).empty();
}

nvmlReturn_t Machine::SetMigMode(GpuState& gpu, bool enabled, nvmlReturn_t* activation) {
  if (enabled == gpu.mig_enabled) {
    gpu.mig_pending = enabled;
    *activation = NVML_SUCCESS;
    return NVML_SUCCESS;
  }
  if (!enabled && !gpu.gpu_instances.empty()) return NVML_ERROR_IN_USE;
  // The real driver resets the GPU to apply the mode; where it cannot, the change waits for one.
  if (gpu.spec.mig_reset_required || InUse(gpu, /*os_processes=*/true)) {
    gpu.mig_pending = enabled;
    *activation = gpu.spec.mig_reset_required ? NVML_ERROR_RESET_REQUIRED : NVML_ERROR_IN_USE;
    return NVML_SUCCESS;
  }
  gpu.mig_enabled = gpu.mig_pending = enabled;
  *activation = NVML_SUCCESS;
  return NVML_SUCCESS;
}

nvmlReturn_t Machine::ResetGpu(GpuState& gpu, ResetScope scope) {
  if (InUse(gpu, scope.os_processes)) return NVML_ERROR_IN_USE;
  if (scope.mig) {
    gpu.mig_enabled = gpu.mig_pending;
    DestroyAllInstances(gpu, handles_);
  }
  gpu.lost = false;
  gpu.value(Field::kEccCorrectedVolatile) = 0;
  gpu.value(Field::kEccUncorrectedVolatile) = 0;
  // The remap or retirement waiting for a reset happens now; the counts of remapped rows and
  // retired pages stay.
  gpu.value(Field::kRemappedRowsPending) = 0;
  gpu.value(Field::kRetiredPagesPending) = 0;
  return NVML_SUCCESS;
}

void Machine::Integrate(int64_t now_ms) {
  if (now_ms <= integrated_ms_) return;
  const double elapsed_ms = static_cast<double>(now_ms - integrated_ms_);
  for (const auto& gpu : gpus_) {
    if (!gpu->lost) gpu->energy_mj += PowerUsageMw(*gpu) * elapsed_ms / 1000;
  }
  integrated_ms_ = now_ms;
}

void Machine::AdvanceTo(int64_t now_ms) {
  while (next_timed_ < scenario_.timeline.size() &&
         scenario_.timeline[next_timed_].at_ms <= now_ms) {
    const TimedAction& timed = scenario_.timeline[next_timed_++];
    Integrate(timed.at_ms);
    Apply(timed.action);
  }
  Integrate(now_ms);
}

std::optional<int64_t> Machine::NextDueMs() const {
  if (next_timed_ >= scenario_.timeline.size()) return std::nullopt;
  return scenario_.timeline[next_timed_].at_ms;
}

std::string Machine::Apply(const Action& action) {
  if (action.gpu >= 0) {
    if (static_cast<unsigned int>(action.gpu) >= gpu_count()) {
      return absl::StrCat("no GPU ", action.gpu, " (the machine has ", gpu_count(), ")");
    }
    return ApplyToGpu(*gpus_[action.gpu], action);
  }
  std::string why;
  for (const auto& gpu : gpus_) {
    const std::string gpu_why = ApplyToGpu(*gpu, action);
    if (why.empty()) why = gpu_why;
  }
  return why;
}

void Machine::FallOffBus(GpuState& gpu) {
  if (gpu.lost) return;
  events_.Emit(gpu, nvmlEventTypeXidCriticalError, kXidFallenOffBus, kNvmlNoInstance,
               kNvmlNoInstance);
  events_.Emit(gpu, nvmlEventTypeGpuUnavailableError, 0, kNvmlNoInstance, kNvmlNoInstance);
  gpu.lost = true;
}

std::string Machine::ApplyToGpu(GpuState& gpu, const Action& action) {
  const bool rows = gpu.spec.architecture >= NVML_DEVICE_ARCH_AMPERE;
  switch (action.kind) {
    case Action::Kind::kSet: {
      const double before = gpu.value(action.field);
      gpu.value(action.field) = action.value;
      // Reaching the shutdown temperature takes the GPU off the bus, as the hardware does.
      if (action.field == Field::kTemperature && gpu.spec.thermal &&
          before < gpu.spec.thermal->shutdown_c && action.value >= gpu.spec.thermal->shutdown_c) {
        FallOffBus(gpu);
      }
      return "";
    }
    case Action::Kind::kXid:
      // XID 79 is the driver's report that the GPU fell off the bus: from then on it answers
      // GPU_IS_LOST, its handle lookups fail, until it is reset (`recover`) or the machine
      // restarts.
      if (action.xid == kXidFallenOffBus && !action.gpu_instance.has_value()) {
        FallOffBus(gpu);
        return "";
      }
      events_.Emit(gpu, nvmlEventTypeXidCriticalError, action.xid,
                   action.gpu_instance.value_or(kNvmlNoInstance),
                   action.compute_instance.value_or(kNvmlNoInstance));
      return "";
    case Action::Kind::kEccSingle:
      if (!gpu.spec.ecc_enabled) return absl::StrCat("GPU ", gpu.index, " has ECC disabled");
      gpu.value(Field::kEccCorrectedVolatile) += 1;
      gpu.value(Field::kEccCorrectedAggregate) += 1;
      events_.Emit(gpu, nvmlEventTypeSingleBitEccError, 0, kNvmlNoInstance, kNvmlNoInstance);
      return "";
    case Action::Kind::kEccDouble:
      if (!gpu.spec.ecc_enabled) return absl::StrCat("GPU ", gpu.index, " has ECC disabled");
      gpu.value(Field::kEccUncorrectedVolatile) += 1;
      gpu.value(Field::kEccUncorrectedAggregate) += 1;
      // Ampere and later remap the row; older GPUs retire the page.
      if (rows) {
        gpu.value(Field::kRemappedRowsUncorrected) += 1;
        gpu.value(Field::kRemappedRowsPending) = 1;
      } else {
        gpu.value(Field::kRetiredPagesDoubleBit) += 1;
        gpu.value(Field::kRetiredPagesPending) = 1;
      }
      events_.Emit(gpu, nvmlEventTypeDoubleBitEccError, 0, kNvmlNoInstance, kNvmlNoInstance);
      events_.Emit(gpu, nvmlEventTypeXidCriticalError, kXidDoubleBitEcc, kNvmlNoInstance,
                   kNvmlNoInstance);
      return "";
    case Action::Kind::kLost:
      FallOffBus(gpu);
      return "";
    case Action::Kind::kRecover:
      gpu.lost = false;
      return "";
    case Action::Kind::kFail:
      gpu.call_errors[action.call] = action.error;
      return "";
    case Action::Kind::kUnfail:
      gpu.call_errors.clear();
      return "";
    case Action::Kind::kReset:
      // Every process following the control file applies the line, and each of them holds the
      // GPU: only simulated processes refuse it. A node state file's MIG state is reset only
      // through gpuop_fake_nvml_reset_gpu, which changes it once for the node.
      if (ResetGpu(gpu, {.os_processes = false, .mig = !shared_mig_state_}) != NVML_SUCCESS) {
        return absl::StrCat("GPU ", gpu.index, " is in use by ", gpu.processes.size(),
                            " simulated process(es): not reset");
      }
      return "";
    case Action::Kind::kProcessStart: {
      auto& processes = gpu.processes;
      const auto it = std::find_if(processes.begin(), processes.end(), [&](const ProcessSpec& p) {
        return p.pid == action.process.pid;
      });
      if (it == processes.end()) {
        processes.push_back(action.process);
      } else {
        *it = action.process;
      }
      return "";
    }
    case Action::Kind::kProcessExit: {
      auto& processes = gpu.processes;
      const auto it = std::find_if(processes.begin(), processes.end(), [&](const ProcessSpec& p) {
        return p.pid == action.process.pid;
      });
      if (it == processes.end()) {
        return absl::StrCat("no process ", action.process.pid, " on GPU ", gpu.index);
      }
      processes.erase(it);
      return "";
    }
  }
  return "unknown action";
}

}  // namespace gpuop::fakenvml
