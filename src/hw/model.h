#ifndef GPUOP_HW_MODEL_H_
#define GPUOP_HW_MODEL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace gpuop::hw {

// The vendor-neutral description of a node's accelerators. Optional fields are empty when the
// vendor or the device does not report them (NOT_SUPPORTED is a normal answer).

enum class Vendor { kNvidia, kAmd, kIntel, kUnknown };
std::string VendorName(Vendor vendor);  // "nvidia", "amd", "intel", "unknown"

// How two GPUs are connected, best first (the order topology-aware allocation prefers).
enum class LinkKind {
  kGpuFabric,       // a direct GPU-to-GPU fabric: NVLink or one NVSwitch fabric, AMD XGMI
  kSamePcieSwitch,  // a common PCIe switch (NVML SINGLE/MULTIPLE)
  kSameNumaNode,    // the same host bridge or NUMA node (NVML HOSTBRIDGE/NODE)
  kCrossSocket,     // across the CPU interconnect (NVML SYSTEM)
};
std::string LinkKindName(LinkKind kind);

struct Link {
  int peer_index = 0;
  LinkKind kind = LinkKind::kCrossSocket;
  int fabric_links = 0;  // active NVLink or XGMI links to the peer (0 unless kGpuFabric)
  // The PCIe path between the two (kSamePcieSwitch, kSameNumaNode or kCrossSocket), also when
  // a fabric joins them: on an NVSwitch board every pair has the same fabric, and the PCIe path
  // is what tells the sockets apart.
  LinkKind pcie = LinkKind::kCrossSocket;
};

// A MIG compute instance exposed as a device.
struct MigDevice {
  std::string uuid;     // "MIG-..."
  std::string profile;  // "1g.10gb"
  unsigned int gpu_instance_id = 0;
  unsigned int compute_instance_id = 0;
  unsigned int placement_start = 0;
  unsigned int placement_size = 0;
  uint64_t memory_bytes = 0;
  // What the device owns of its GPU (NVIDIA: nvmlDeviceGetAttributes_v2): multiprocessors, the
  // compute slices of its GPU instance and of its compute instance, and the engines it shares
  // with the other compute instances of its GPU instance. 0 where the driver does not say.
  unsigned int multiprocessor_count = 0;
  unsigned int gpu_instance_slices = 0;
  unsigned int compute_instance_slices = 0;
  unsigned int copy_engines = 0;
  unsigned int decoders = 0;
  unsigned int encoders = 0;
  unsigned int jpeg_engines = 0;
  unsigned int ofa_engines = 0;
  bool has_attributes = false;  // whether the driver reported the fields above
};

// A GPU's membership of a multi-node NVLink fabric (an NVL72 rack): the fabric's cluster and
// the clique (NVLink partition) the GPU registered in.
struct GpuFabric {
  std::string cluster_uuid;  // canonical lower-case UUID, "a1b2c3d4-...."
  unsigned int clique_id = 0;
  bool operator==(const GpuFabric&) const = default;
};

// A MIG GPU-instance profile the GPU supports.
struct MigProfile {
  std::string name;  // "1g.10gb"
  unsigned int id = 0;
  unsigned int slice_count = 0;
  unsigned int instance_count = 0;  // how many fit on an empty GPU
  uint64_t memory_bytes = 0;
};

struct Gpu {
  Vendor vendor = Vendor::kUnknown;
  int index = 0;
  std::string uuid;        // "GPU-..." for NVIDIA; the PCI address or unique id for AMD
  std::string pci_bus_id;  // normalised sysfs form "0000:17:00.0"
  // The PCI identity as NVML reports it: device id << 16 | vendor id (0x233010DE for an H100
  // SXM5) and subsystem device << 16 | subsystem vendor; 0 when unknown. mig-parted's
  // device-filter matches on these.
  uint32_t pci_device_id = 0;
  uint32_t pci_subsystem_id = 0;
  std::string product;       // "NVIDIA H100 80GB HBM3"
  std::string architecture;  // "hopper", "ampere", "gfx90a", ...
  int compute_major = 0;     // CUDA compute capability; 0 when not NVIDIA
  int compute_minor = 0;
  uint64_t memory_bytes = 0;
  std::optional<int> numa_node;
  std::optional<unsigned int> minor_number;  // /dev/nvidia<minor>
  std::vector<std::string> device_nodes;     // every device file a container needs for this GPU
  std::string serial;
  bool mig_capable = false;
  bool mig_enabled = false;
  bool mig_pending_change = false;  // mode change waiting for a GPU reset
  // Why the MIG devices' profiles and placements could not be read ("" when they could): NVML
  // answers NO_PERMISSION for GPU instances to a process without the MIG monitor capability.
  std::string mig_unreadable;
  std::vector<MigProfile> mig_profiles;
  std::vector<MigDevice> mig_devices;
  std::vector<Link> links;
  // The PCI class code from sysfs (0x030200 for a 3D controller); empty when unreadable.
  std::optional<uint32_t> pci_class;
  // Set only when the GPU finished registering with a fabric (NVIDIA: fabric state COMPLETED
  // with a successful status and a non-zero cluster UUID).
  std::optional<GpuFabric> fabric;
};

// A GPU the driver counts but that could not be described: no handle (NVML answers NO_PERMISSION
// for a GPU whose device node the process may not open), a lost GPU, or its identity unreadable.
struct UnavailableGpu {
  int index = 0;
  std::string reason;  // the failed call and its error
};

struct Inventory {
  std::string driver_version;   // "570.86.15"
  int cuda_driver_version = 0;  // 12080 for 12.8; 0 when unknown
  // The GPUs that could be described, in index order. A GPU that could not is in `unavailable`
  // instead, so one bad GPU never hides the others: a Gpu's `index` (and a Link's peer_index)
  // is the driver's index, not a position in this vector.
  std::vector<Gpu> gpus;
  std::vector<UnavailableGpu> unavailable;
};

struct ProcessUsage {
  unsigned int pid = 0;
  uint64_t used_memory_bytes = 0;
  std::optional<unsigned int> gpu_instance_id;  // set on MIG
  std::optional<unsigned int> compute_instance_id;
};

// Activity over the time since the previous sample, as ratios 0..1, from the GPU's performance
// counters (NVIDIA: GPM, Hopper and newer): a context active on the engine, the SMs busy, the
// tensor pipes busy, DRAM bandwidth used. Empty where there are no such counters and at the first
// sample (there is no interval yet): absent, never 0.
struct Activity {
  std::optional<double> graphics_active;
  std::optional<double> sm_active;
  std::optional<double> tensor_active;
  std::optional<double> dram_active;
  // PCIe traffic over the same interval, bytes per second.
  std::optional<double> pcie_tx_bytes_per_second;
  std::optional<double> pcie_rx_bytes_per_second;
};

// One telemetry sample of one GPU.
struct GpuSample {
  int index = 0;
  std::optional<unsigned int> gpu_utilization_percent;
  std::optional<unsigned int> memory_utilization_percent;
  std::optional<unsigned int> encoder_utilization_percent;
  std::optional<unsigned int> decoder_utilization_percent;
  std::optional<uint64_t> memory_used_bytes;
  std::optional<uint64_t> memory_free_bytes;
  std::optional<uint64_t> memory_reserved_bytes;
  std::optional<int> temperature_celsius;
  std::optional<int> memory_temperature_celsius;
  std::optional<int> slowdown_temperature_celsius;
  std::optional<int> shutdown_temperature_celsius;
  std::optional<double> power_watts;
  // The limit that was set (NVIDIA: the management limit, the one nvmlDeviceSetPowerManagementLimit
  // changes; AMD: power1_cap): what power management works from.
  std::optional<double> power_limit_watts;
  // The limit the GPU holds to, which other limiters can put below the one set (NVIDIA:
  // nvmlDeviceGetEnforcedPowerLimit); nullopt where the driver does not tell them apart.
  std::optional<double> enforced_power_limit_watts;
  std::optional<double> power_limit_min_watts;
  std::optional<double> power_limit_max_watts;
  std::optional<double> power_limit_default_watts;
  std::optional<double> energy_joules;  // since the driver loaded
  std::optional<unsigned int> sm_clock_mhz;
  std::optional<unsigned int> memory_clock_mhz;
  std::optional<uint64_t> ecc_volatile_corrected;
  std::optional<uint64_t> ecc_volatile_uncorrected;
  std::optional<uint64_t> ecc_aggregate_corrected;
  std::optional<uint64_t> ecc_aggregate_uncorrected;
  std::optional<unsigned int> retired_pages_single_bit;
  std::optional<unsigned int> retired_pages_double_bit;
  std::optional<bool> retired_pages_pending;
  std::optional<unsigned int> remapped_rows_corrected;
  std::optional<unsigned int> remapped_rows_uncorrected;
  std::optional<bool> remapped_rows_pending;
  std::optional<bool> remapped_rows_failure;
  std::optional<unsigned int> pcie_replay_count;
  std::optional<uint64_t> throttle_reasons;  // NVML clock-event reason bits
  // What the driver says the GPU needs (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: NONE 0, GPU_RESET 1,
  // NODE_REBOOT 2, DRAIN_P2P 3, DRAIN_AND_RESET 4); empty where the driver does not report it.
  std::optional<unsigned int> recovery_action;
  // The whole GPU's activity.
  Activity activity;
  // Each MIG GPU instance's own activity, by GPU instance id (NVIDIA: nvmlGpmMigSampleGet); an
  // instance is missing where its counters are (MIG off, no GPM, no MIG monitor capability).
  std::map<unsigned int, Activity> instance_activity;
  // NVLink traffic since the driver loaded, sent and received, protocol headers included, in
  // bytes; empty on GPUs without NVLink.
  std::optional<uint64_t> nvlink_bytes_total;
  std::vector<ProcessUsage> processes;
  // Set when the GPU stopped answering (NVML GPU_IS_LOST): every other field is empty.
  bool lost = false;
};

struct Sample {
  absl::Time time;
  std::vector<GpuSample> gpus;
};

// Something the hardware reported that may change a GPU's health.
struct HardwareEvent {
  // kUnwatched: the GPU refused event registration, so its XIDs cannot be seen (reported once,
  // when the event set is built; `reason` says why).
  enum class Kind { kXid, kDoubleBitEcc, kSingleBitEcc, kGpuLost, kUnwatched };
  Kind kind = Kind::kXid;
  int gpu_index = 0;     // -1: the event named no GPU gpuop registered
  std::string gpu_uuid;  // empty when unknown
  uint64_t xid = 0;      // for kXid
  std::optional<unsigned int> gpu_instance_id;
  std::optional<unsigned int> compute_instance_id;
  absl::Time time;
  std::string reason;  // for kUnwatched
};
std::string HardwareEventKindName(HardwareEvent::Kind kind);

}  // namespace gpuop::hw

#endif  // GPUOP_HW_MODEL_H_
