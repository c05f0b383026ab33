#ifndef GPUOP_HW_AMD_AMD_ACCELERATOR_H_
#define GPUOP_HW_AMD_AMD_ACCELERATOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "hw/accelerator.h"

namespace gpuop::hw {

struct AmdOptions {
  // The host's sysfs, or a test tree.
  std::string sysfs_root = "/sys";
  // The directory device node paths are reported under: the host's /dev as kubelet and the
  // container runtime see it ("/dev/kfd", "/dev/dri/renderD128"). Not read.
  std::string dev_root = "/dev";
  const common::Clock* clock = &common::Clock::Real();
};

// AMD facts the vendor-neutral Gpu has no field for: what the k8s-node-labeller labels and the
// AMD device plugin's resource naming need. One per Inventory GPU, same index.
struct AmdGpuInfo {
  int index = 0;
  std::string pci_bus_id;
  uint16_t device_id = 0;  // PCI device id: 0x74a1
  uint8_t revision = 0;
  int card = -1;                    // /dev/dri/card<N>; -1 when DRM has none
  int render_minor = -1;            // /dev/dri/renderD<N>; -1 when DRM has none
  std::optional<int> kfd_node;      // KFD topology node; empty without KFD
  uint32_t gfx_target_version = 0;  // 90402; 0 without KFD
  std::string family;               // "AI"; empty when not derivable (see AmdFamilyName)
  uint32_t simd_count = 0;          // from KFD; 0 when unknown
  uint32_t simd_per_cu = 0;
  uint32_t cu_count = 0;          // simd_count / simd_per_cu
  uint32_t num_xcc = 0;           // accelerator complex dies in this node
  uint64_t kfd_memory_bytes = 0;  // KFD memory bank 0; the labeller's VRAM size
  uint64_t hive_id = 0;           // XGMI hive; 0 = none
  std::string compute_partition;  // "spx", "cpx", ... lower case; empty before MI300
  std::string memory_partition;   // "nps1", ...
  // Whether the GPU can be repartitioned: amdgpu shows available_compute_partition /
  // available_memory_partition.
  bool compute_partitioning_supported = false;
  bool memory_partitioning_supported = false;
};

// What DiscoverAmd returns: the vendor-neutral inventory and the AMD facts beside it.
struct AmdDiscovery {
  Inventory inventory;
  // /sys/module/amdgpu/srcversion, the module's source checksum; empty when absent.
  std::string driver_src_version;
  std::vector<AmdGpuInfo> gpus;  // parallel to inventory.gpus
  // Oddities that did not stop discovery: a GPU without a KFD node or render node, a KFD node
  // that could not be read, a non-AMD device bound to amdgpu.
  std::vector<std::string> warnings;
};

// The AMD backend: amdgpu's sysfs attributes, its hwmon and the KFD topology, with no ROCm
// library. It reads what the ROCm device plugin and node labeller read.
//
// Discovery: one Gpu per PCI function bound to amdgpu
// (<sysfs>/module/amdgpu/drivers/pci:amdgpu/<address>), indexed in PCI address order. No
// amdgpu module means an empty Inventory, not an error. A GPU whose identity files cannot be
// read fails Discover with the path; a GPU removed while discovery runs is left out.
//   uuid           unique_id (16 hex digits) from sysfs or KFD, else the PCI address
//   product        product_name, else the Instinct name of the device id, else
//                  "AMD GPU <device id>"
//   architecture   the gfx target from KFD's gfx_target_version ("gfx942")
//   memory_bytes   mem_info_vram_total, else KFD's memory bank
//   device_nodes   <dev>/kfd (when KFD is present), <dev>/dri/card<N>, <dev>/dri/renderD<N>
//   links          kNvLink for XGMI peers (same hive, or a KFD XGMI io_link; fabric_links is
//                  the number of direct XGMI io_links), kSamePcieSwitch for GPUs below a common
//                  PCIe bridge, kSameNumaNode, else kCrossSocket (also when NUMA is unknown)
//   driver_version /sys/module/amdgpu/version; empty for the in-tree driver
// Compute partitions (CPX and the like) are reported as their physical GPU.
//
// Telemetry reads the same files on every call, for the GPUs of the latest Discover (which
// TakeSample runs first if it never ran). A GPU no longer bound to amdgpu, or whose directory
// disappeared, is reported lost. Sensors the ASIC lacks stay empty: MI300 has no edge sensor
// and no temperature limits, so its temperature is the junction (hotspot) sensor.
//
// Control: SetPowerLimit writes hwmon power1_cap. There is no event source without ROCm
// (WaitEvents is Unimplemented) and no MIG (the MIG calls are Unimplemented).
//
// Errors name the operation, the GPU index and PCI address, and the file. Thread-safe.
class AmdAccelerator final : public Accelerator {
 public:
  explicit AmdAccelerator(AmdOptions options = {});

  Vendor vendor() const override { return Vendor::kAmd; }
  // DiscoverAmd().inventory.
  [[nodiscard]] absl::StatusOr<Inventory> Discover() override;
  [[nodiscard]] absl::StatusOr<AmdDiscovery> DiscoverAmd();
  [[nodiscard]] absl::StatusOr<Sample> TakeSample() override;
  [[nodiscard]] absl::StatusOr<std::vector<HardwareEvent>> WaitEvents(
      absl::Duration timeout) override;
  // Rounds to whole watts (amdgpu keeps whole watts) and writes microwatts to power1_cap.
  // InvalidArgument, naming the limits, outside [power1_cap_min, power1_cap_max]; Unimplemented
  // when the GPU has no power1_cap; the driver's own refusal is passed on.
  [[nodiscard]] absl::Status SetPowerLimit(int gpu_index, double watts) override;
  [[nodiscard]] absl::StatusOr<bool> SetMigMode(int gpu_index, bool enabled) override;
  [[nodiscard]] absl::StatusOr<MigDevice> CreateMigDevice(int gpu_index,
                                                          const std::string& profile) override;
  [[nodiscard]] absl::Status DestroyMigDevice(int gpu_index, unsigned int gpu_instance_id) override;

 private:
  // PCI addresses bound to amdgpu, sorted; empty without the amdgpu module.
  absl::StatusOr<std::vector<std::string>> BoundAddresses() const;
  // The addresses of the latest Discover, enumerating them if Discover never ran.
  absl::StatusOr<std::vector<std::string>> KnownAddresses() ABSL_LOCKS_EXCLUDED(mu_);
  // The GPU's address for a control call, or InvalidArgument / Unavailable (lost).
  absl::StatusOr<std::string> AddressFor(const char* operation, int gpu_index);
  std::string DeviceDir(const std::string& address) const;
  bool Bound(const std::string& address) const;
  // <device>/hwmon/hwmon<N>, or NotFound.
  absl::StatusOr<std::string> HwmonDir(const std::string& address) const;
  GpuSample SampleGpu(int index, const std::string& address) const;

  const AmdOptions options_;
  absl::Mutex mu_;
  std::optional<std::vector<std::string>> addresses_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuop::hw

#endif  // GPUOP_HW_AMD_AMD_ACCELERATOR_H_
