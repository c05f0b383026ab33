#ifndef GPUOP_TEST_FAKES_NVML_MACHINE_H_
#define GPUOP_TEST_FAKES_NVML_MACHINE_H_

// A running fake machine: the scenario's GPUs with their live state, the handles handed out, the
// event sets, and the scenario clock. Answers with NVML return codes; the C exports only check
// arguments and copy results out. Not thread-safe: the Driver's mutex guards every call.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hw/nvml/nvml_abi.h"
#include "test/fakes/nvml/events.h"
#include "test/fakes/nvml/scenario.h"
#include "test/fakes/nvml/state.h"

namespace gpuop::fakenvml {

// Clock-event (throttle) reason bits the fake derives from its state.
inline constexpr unsigned long long kClocksEventGpuIdle = 0x1;
inline constexpr unsigned long long kClocksEventSwPowerCap = 0x4;
inline constexpr unsigned long long kClocksEventHwSlowdown = 0x8;
inline constexpr unsigned long long kClocksEventHwThermalSlowdown = 0x40;

// XIDs the driver reports with the faults the fake models.
inline constexpr unsigned long long kXidDoubleBitEcc = 48;
inline constexpr unsigned long long kXidFallenOffBus = 79;

struct MemoryUse {
  unsigned long long total = 0;  // bytes
  unsigned long long reserved = 0;
  unsigned long long used = 0;  // excluding reserved
};

class Machine {
 public:
  // Fails when the scenario's initial MIG layout does not fit.
  static absl::StatusOr<std::unique_ptr<Machine>> Create(Scenario scenario);

  const Scenario& scenario() const { return scenario_; }
  unsigned int gpu_count() const { return static_cast<unsigned int>(gpus_.size()); }
  GpuState& gpu(unsigned int index) { return *gpus_[index]; }
  HandleRegistry& handles() { return handles_; }
  EventHub& events() { return events_; }

  // The MIG capabilities this process holds (the driver's /proc/driver/nvidia/capabilities/mig/
  // monitor and .../config, reached through /dev/nvidia-caps/nvidia-cap2 and -cap1): monitor
  // lets it see GPU and compute instances and a MIG-enabled GPU's aggregate memory and
  // processes, config lets it change MIG mode and instances (and implies monitor). A process
  // without device_nodes is a root process on the host: it holds both.
  struct MigAccess {
    bool monitor = true;
    bool config = true;
  };
  void set_mig_access(MigAccess access) { mig_access_ = access; }
  // NO_PERMISSION unless the process holds the capability.
  nvmlReturn_t NeedMigMonitor() const {
    return mig_access_.monitor || mig_access_.config ? NVML_SUCCESS : NVML_ERROR_NO_PERMISSION;
  }
  nvmlReturn_t NeedMigConfig() const {
    return mig_access_.config ? NVML_SUCCESS : NVML_ERROR_NO_PERMISSION;
  }
  // The MIG devices of `gpu` this process may use, in NVML's order: every one with the MIG
  // monitor capability; without it, those whose two access capabilities it holds (a container
  // given MIG devices sees those alone, as with the real driver).
  std::vector<nvmlComputeInstance_st*> VisibleMigDevices(const GpuState& gpu) const;

  // INVALID_ARGUMENT for a handle this machine did not hand out or has destroyed since;
  // GPU_IS_LOST when its GPU fell off the bus.
  nvmlReturn_t Resolve(nvmlDevice_t handle, DeviceRef* out) const;
  nvmlReturn_t ResolveGpuInstance(nvmlGpuInstance_t handle, nvmlGpuInstance_st** out) const;
  nvmlReturn_t ResolveComputeInstance(nvmlComputeInstance_t handle,
                                      nvmlComputeInstance_st** out) const;

  // "GPU-...", "MIG-..." or the legacy "MIG-GPU-<uuid>/<gi>/<ci>"; NOT_FOUND when unknown.
  nvmlReturn_t FindByUuid(absl::string_view uuid, nvmlDevice_t* out) const;
  // Any spelling ParseBusId accepts; NOT_FOUND when unknown.
  nvmlReturn_t FindByBusId(absl::string_view bus_id, nvmlDevice_t* out) const;

  // Derived readings.
  unsigned int PowerUsageMw(const GpuState& gpu) const;
  // The limit the GPU enforces: the management limit, or a lower power_cap_w.
  static unsigned int EnforcedPowerLimitMw(const GpuState& gpu);
  unsigned long long ClockEventReasons(const GpuState& gpu) const;
  // Current clock of NVML clock type 0..3 (graphics, SM, memory, video) in MHz.
  unsigned int ClockMhz(const GpuState& gpu, int type) const;
  static unsigned int MaxClockMhz(const GpuState& gpu, int type);
  MemoryUse Memory(const DeviceRef& device) const;
  std::vector<nvmlProcessInfo_t> Processes(const DeviceRef& device) const;
  std::vector<unsigned long long> RetiredPages(const GpuState& gpu, bool double_bit) const;
  int CommonAncestor(const GpuState& first, const GpuState& second) const;
  static nvmlPciInfo_t PciInfo(const GpuState& gpu);
  nvmlPciInfo_t LinkRemotePciInfo(const LinkSpec& link) const;
  std::string MigDeviceName(const nvmlComputeInstance_st& compute) const;

  // Whether a client other than the calling process uses the GPU: it has simulated processes
  // (the scenario's `processes`, the control file's `process`), or, with `os_processes` and a
  // scenario with device_nodes, another process on the node has the GPU's device node open
  // (holders.h scans /proc). The caller never counts.
  bool InUse(const GpuState& gpu, bool os_processes) const;

  // nvmlDeviceSetMigMode, `enabled` the requested mode. The same mode as the current one cancels
  // a pending change. Turning MIG off while GPU instances exist is IN_USE. Otherwise the change
  // stays pending (current unchanged, *activation RESET_REQUIRED) on a GPU whose platform cannot
  // reset it (mig_reset_required), and while the GPU is in use (*activation IN_USE), as the real
  // driver leaves it pending until a reset; else it takes effect at once.
  nvmlReturn_t SetMigMode(GpuState& gpu, bool enabled, nvmlReturn_t* activation);

  // A GPU reset (nvidia-smi -r): IN_USE while the GPU is in use (InUse with `os_processes`).
  // Otherwise the pending MIG mode becomes the current one (when `mig`) and every GPU and compute
  // instance is destroyed, a lost GPU answers again, the volatile ECC counters go to 0, and
  // pending row remaps and page retirements are applied.
  struct ResetScope {
    bool os_processes = true;
    bool mig = true;
  };
  nvmlReturn_t ResetGpu(GpuState& gpu, ResetScope scope);

  // Set when the node's MIG state lives in a state file that every process shares (the Driver's
  // NodeStateFile): a control-file `reset`, which every process following the file applies, then
  // leaves MIG alone, and only gpuop_fake_nvml_reset_gpu changes it, once, for the node.
  void set_shared_mig_state(bool shared) { shared_mig_state_ = shared; }
  // The /proc listing the node's processes, for the GPUs' users (InUse); "/proc" by default.
  void set_node_proc(std::string proc) { node_proc_ = std::move(proc); }

  // Scenario time of the latest AdvanceTo, in ms.
  int64_t now_ms() const { return integrated_ms_; }

  // Runs the timeline entries due by `now_ms` (scenario time) and integrates energy up to it.
  void AdvanceTo(int64_t now_ms);
  // When the next timeline entry is due, if any.
  std::optional<int64_t> NextDueMs() const;
  // Applies an action from the timeline or the control file. Returns an empty string, or why
  // the action was ignored.
  std::string Apply(const Action& action);

 private:
  explicit Machine(Scenario scenario);
  void Integrate(int64_t now_ms);
  std::string ApplyToGpu(GpuState& gpu, const Action& action);
  void FallOffBus(GpuState& gpu);

  Scenario scenario_;
  std::vector<std::unique_ptr<GpuState>> gpus_;
  HandleRegistry handles_;
  EventHub events_;
  size_t next_timed_ = 0;
  int64_t integrated_ms_ = 0;
  MigAccess mig_access_;
  bool shared_mig_state_ = false;
  std::string node_proc_ = "/proc";
};

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_MACHINE_H_
