#ifndef GPUOP_TEST_FAKES_NVML_SCENARIO_H_
#define GPUOP_TEST_FAKES_NVML_SCENARIO_H_

// The description of a fake machine: what the fake libnvidia-ml.so.1 reports and how it changes
// over time. Parsed from the YAML format documented in README.md. Plain data, no behaviour.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hw/nvml/nvml_abi.h"
#include "test/fakes/nvml/call_errors.h"

namespace gpuop::fakenvml {

// Per-GPU numbers a scenario sets, scripts over time and a control file changes.
enum class Field : int {
  kTemperature,
  kMemoryTemperature,
  kPower,
  kGpuUtil,
  kMemoryUtil,
  kEncoderUtil,
  kDecoderUtil,
  kGraphicsClock,
  kSmClock,
  kMemoryClock,
  kVideoClock,
  kMemoryUsed,
  kPcieReplay,
  kClockEventReasons,
  kEccCorrectedVolatile,
  kEccCorrectedAggregate,
  kEccUncorrectedVolatile,
  kEccUncorrectedAggregate,
  kRetiredPagesSingleBit,
  kRetiredPagesDoubleBit,
  kRetiredPagesPending,
  kRemappedRowsCorrected,
  kRemappedRowsUncorrected,
  kRemappedRowsPending,
  kRemappedRowsFailure,
  kRecoveryAction,  // NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (nvmlDeviceGpuRecoveryAction_t)
  kPowerCap,        // a cap set outside the management limit (0: none); see EnforcedPowerLimitMw
  // What GPM reports (Hopper and newer), percent of the interval or MiB/s.
  kSmActive,
  kTensorActive,
  kDramActive,
  kPcieTxMibps,
  kPcieRxMibps,
  // NVLink traffic since the driver loaded, all links, headers included (KiB).
  kNvlinkRawTxKib,
  kNvlinkRawRxKib,
  kCount,
};
inline constexpr int kFieldCount = static_cast<int>(Field::kCount);
using FieldValues = std::array<double, kFieldCount>;

struct FieldInfo {
  Field field;
  const char* name;  // the scenario and control-file name, e.g. "temperature_c"
  double min;
  double max;
};

// The field called `name`, or nullptr.
const FieldInfo* FindField(absl::string_view name);
const FieldInfo& GetFieldInfo(Field field);
// Every field name, comma-separated, for error messages.
std::string FieldNames();
// An idle GPU: 30 C, no load, no errors; memory_used_mib < 0 means "sum of the processes".
FieldValues DefaultFieldValues();

struct PciAddress {
  unsigned int domain = 0;
  unsigned int bus = 0;
  unsigned int device = 0;
  bool operator==(const PciAddress&) const = default;
};

// One MIG GPU-instance profile, as nvmlDeviceGetGpuInstanceProfileInfoV reports it.
struct GiProfile {
  std::string name;         // "1g.5gb"; NVML reports "MIG 1g.5gb"
  unsigned int index = 0;   // NVML_GPU_INSTANCE_PROFILE_* (what the *ProfileInfo calls take)
  unsigned int id = 0;      // what create, capacity and placement calls take
  unsigned int slices = 0;  // compute slices
  unsigned int instances = 0;
  unsigned long long memory_mib = 0;
  unsigned int multiprocessors = 0;
  unsigned int copy_engines = 0;
  unsigned int decoders = 0;
  unsigned int encoders = 0;
  unsigned int jpegs = 0;
  unsigned int ofas = 0;
  unsigned int placement_size = 0;  // memory slots one instance occupies
  std::vector<unsigned int> placement_starts;
  std::vector<unsigned int> compute_slices;  // compute-instance sizes a GI of this profile offers
};

struct MigSpec {
  unsigned int memory_slots = 8;  // width of the placement axis
  unsigned int sm_per_slice = 0;  // multiprocessors of a compute instance smaller than its GI
  std::vector<GiProfile> profiles;
};

// A GPU instance that exists when the scenario starts.
struct MigInstanceSpec {
  std::string profile;
  std::optional<unsigned int> start;
  std::vector<unsigned int> compute_slices;  // one compute instance per entry
};

struct LinkSpec {
  // kHiddenGpu: a GPU this process cannot see (VisibleSubset); the link and its remote PCI
  // identity remain, as they do for the real driver.
  enum class Kind { kGpu, kSwitch, kHiddenGpu };
  Kind kind = Kind::kGpu;
  int target = 0;  // GPU index or NVSwitch index
  bool active = true;
  PciAddress peer_pci;  // kHiddenGpu only
  unsigned int peer_device_id = 0;
  unsigned int peer_subsystem_id = 0;
};

struct ProcessSpec {
  unsigned int pid = 0;
  unsigned long long used_mib = 0;
  std::optional<unsigned int> gpu_instance;
  std::optional<unsigned int> compute_instance;
};

struct PowerSpec {
  unsigned int default_mw = 0;
  unsigned int min_mw = 0;
  unsigned int max_mw = 0;
};

struct ThermalSpec {
  unsigned int shutdown_c = 0;
  unsigned int slowdown_c = 0;
  unsigned int gpu_max_c = 0;
  unsigned int memory_max_c = 0;
};

struct ClockSpec {
  unsigned int graphics_mhz = 0;
  unsigned int sm_mhz = 0;
  unsigned int memory_mhz = 0;
  unsigned int video_mhz = 0;
};

// nvmlDeviceGetGpuFabricInfo: the GPU's registration with a multi-node NVLink fabric.
struct FabricSpec {
  std::array<unsigned char, 16> cluster_uuid{};
  unsigned int clique_id = 0;
  unsigned char state = 3;  // NVML_GPU_FABRIC_STATE_*; COMPLETED
};

struct GpuSpec {
  std::string name;
  std::string uuid;    // "GPU-..."
  std::string serial;  // empty: not reported (consumer parts)
  PciAddress pci;
  unsigned int pci_device_id = 0;     // 16-bit device id; NVML reports id << 16 | 0x10de
  unsigned int pci_subsystem_id = 0;  // 32-bit, subsystem device << 16 | subsystem vendor
  unsigned int architecture = 0;      // NVML_DEVICE_ARCH_*
  int compute_major = 0;
  int compute_minor = 0;
  unsigned long long memory_mib = 0;
  unsigned long long reserved_mib = 0;
  // The PCI device's NUMA affinity (sysfs numa_node): it decides the topology level between
  // GPUs. NVML itself does not report it.
  std::optional<unsigned int> numa_node;
  // The NUMA node the GPU is itself, on platforms where GPUs are NUMA nodes (Grace: coherent
  // GPU memory); the only case where nvmlDeviceGetNumaNodeId answers.
  std::optional<unsigned int> gpu_numa_node;
  unsigned int minor_number = 0;
  int host_bridge = -1;            // -1: a root port of its own
  std::vector<int> pcie_switches;  // switch ids from the root down to the GPU
  std::optional<PowerSpec> power;  // absent: power management not supported
  std::optional<ThermalSpec> thermal;
  ClockSpec max_clocks;
  bool ecc_supported = false;
  bool ecc_enabled = false;
  std::optional<MigSpec> mig;  // absent: not MIG-capable
  bool mig_enabled = false;
  // `mig_mode_activation: reset_required`: the platform cannot reset the GPU from the API
  // (pass-through virtualization), so every MIG mode change stays pending until a reset
  // (nvmlDeviceSetMigMode's activationStatus NVML_ERROR_RESET_REQUIRED).
  bool mig_reset_required = false;
  std::vector<MigInstanceSpec> mig_instances;
  unsigned int nvlink_version = 0;
  std::vector<LinkSpec> links;
  std::optional<FabricSpec> fabric;  // absent: fabric info NOT_SUPPORTED (PCIe, pre-Hopper)
  std::vector<ProcessSpec> processes;
  FieldValues values = DefaultFieldValues();
  CallErrors call_errors;  // `errors`: calls this GPU answers with an error (call_errors.h)
};

struct NvSwitchSpec {
  PciAddress pci;
  unsigned int pci_device_id = 0;
};

struct TopologyOverride {
  int first = 0;
  int second = 0;
  int level = 0;  // NVML_TOPOLOGY_*
};

// Something that happens to a GPU: from the timeline or the control file.
struct Action {
  enum class Kind {
    kSet,
    kXid,
    kEccSingle,
    kEccDouble,
    kLost,
    kRecover,
    kProcessStart,  // starts `process`, or updates the one with its pid
    kProcessExit,   // ends process.pid
    kFail,          // `call` (or "*") answers `error` from now on
    kUnfail,        // every injected error of the GPU is gone
    kReset,         // a GPU reset (control file only; refused while simulated processes run)
  };
  Kind kind = Kind::kSet;
  int gpu = -1;  // -1: every GPU
  Field field = Field::kTemperature;
  double value = 0;
  unsigned long long xid = 0;
  std::optional<unsigned int> gpu_instance;
  std::optional<unsigned int> compute_instance;
  ProcessSpec process;
  std::string call;                   // kFail
  nvmlReturn_t error = NVML_SUCCESS;  // kFail
};

struct TimedAction {
  int64_t at_ms = 0;  // since the first nvmlInit_v2
  Action action;
};

struct Scenario {
  std::string name;
  // Where the device nodes are (top-level `device_nodes`); empty: no device nodes are needed and
  // every GPU is visible. See README.md, "Device visibility".
  std::string device_nodes;
  // The SIMULATED kernel module's device nodes (top-level `module_device_nodes`): a directory,
  // relative to the library's own directory or absolute. Its nvidiactl existing means the module
  // is loaded; a root process then gets the nodes it lacks in `device_nodes` created for it, as
  // the real user-space driver creates device files (README.md, "Device visibility").
  std::string module_device_nodes;
  std::string driver_version;
  std::string nvml_version;
  int cuda_version = 0;  // 12080 for 12.8
  std::vector<GpuSpec> gpus;
  std::vector<NvSwitchSpec> nvswitches;
  std::vector<TopologyOverride> topology;
  std::vector<TimedAction> timeline;  // sorted by at_ms, stable
};

// Parses a scenario. `origin` names it in errors; `node_seed` (GPUOP_FAKE_NVML_NODE) is mixed
// into derived UUIDs and serials so that simulated nodes differ. Errors name the field:
// "gpus[1].memory_mib: expected a non-negative integer, got \"lots\"".
absl::StatusOr<Scenario> ParseScenario(absl::string_view yaml, absl::string_view origin,
                                       absl::string_view node_seed);

// The machine as a process sees it when only the GPUs with `visible[i]` set (scenario order) have
// device nodes it can open: those GPUs, renumbered densely in order, keeping their UUIDs, serials
// and minor numbers; NVLinks to hidden GPUs keep their remote PCI identity; topology overrides
// and timeline entries for hidden GPUs are dropped. `visible` has one entry per GPU.
Scenario VisibleSubset(const Scenario& scenario, const std::vector<bool>& visible);

// Reads and parses the scenario file at `path`; errors start with the path.
absl::StatusOr<Scenario> LoadScenarioFile(const std::string& path, absl::string_view node_seed);

// "250ms", "2s", "1.5m", "1h", or a bare number of seconds.
absl::StatusOr<int64_t> ParseDurationMs(absl::string_view text);

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_SCENARIO_H_
