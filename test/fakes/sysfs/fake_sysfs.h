#ifndef GPUOP_TEST_FAKES_SYSFS_FAKE_SYSFS_H_
#define GPUOP_TEST_FAKES_SYSFS_FAKE_SYSFS_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

// A builder of fake sysfs trees: it writes, under a directory a test passes as the sysfs root,
// the files and relative symlinks the kernel shows for PCI devices, amdgpu GPUs (DRM, hwmon,
// KFD topology) and driver modules. Code under test reads it with the same paths and link
// resolution it uses on /sys. Where values come from: README.md beside this file.
//
// The builder aborts with a message when the file system refuses a write: a test environment
// that cannot write its temp directory is broken, not a case to handle. Not thread-safe.
namespace gpuop::fakes {

// One PCI function as /sys/bus/pci/devices/<address>/ shows it.
struct FakePciDevice {
  std::string address;  // "0000:17:00.0"
  uint16_t vendor = 0;
  uint16_t device = 0;
  uint32_t class_code = 0;                   // 0xCCSSPP
  std::optional<uint16_t> subsystem_vendor;  // file left out when empty
  std::optional<uint16_t> subsystem_device;
  uint8_t revision = 0;
  int numa_node = -1;              // written as is; -1 is the kernel's "no affinity"
  std::string local_cpulist;       // file left out when empty
  std::string driver;              // bound driver; "" = unbound (no driver link)
  std::optional<int> iommu_group;  // no iommu_group link when empty (IOMMU off)
  std::string iommu_group_type = "DMA-FQ";
  std::optional<int> sriov_totalvfs;
  // The upstream bridge's address (added before this device); "" = on the root bus. The
  // device's directory nests under the bridge's, as in /sys/devices.
  std::string parent;
};

// amdgpu hwmon attributes, in the kernel's units (millidegrees Celsius, microwatts, hertz).
// An empty field leaves the file out, as the driver does for sensors an ASIC lacks.
struct FakeAmdHwmon {
  std::optional<int64_t> edge_mc, edge_crit_mc, edge_crit_hyst_mc, edge_emergency_mc;
  std::optional<int64_t> junction_mc, junction_crit_mc, junction_emergency_mc;
  std::optional<int64_t> mem_mc, mem_crit_mc, mem_emergency_mc;
  std::optional<uint64_t> power_average_uw, power_input_uw;
  std::optional<uint64_t> power_cap_uw, power_cap_min_uw, power_cap_max_uw, power_cap_default_uw;
  std::optional<uint64_t> sclk_hz, mclk_hz;
};

// One amdgpu GPU: its PCI function, DRM nodes, device attributes, hwmon and KFD node.
struct FakeAmdGpu {
  FakePciDevice pci;  // vendor is forced to 0x1002 and driver to "amdgpu"
  int card = 0;       // /sys/class/drm/card<N>
  int render_minor = 128;
  int hwmon = 0;  // /sys/class/hwmon/hwmon<N>
  // Device attributes under the PCI directory; empty strings leave the file out.
  std::string product_name;
  std::string product_number;
  std::string serial_number;
  uint64_t unique_id = 0;  // "%016llx" in unique_id, decimal in KFD; 0 = neither
  uint64_t vram_total_bytes = 0;
  uint64_t vram_used_bytes = 0;
  int gpu_busy_percent = 0;
  int mem_busy_percent = 0;
  uint64_t pcie_replay_count = 0;
  std::optional<uint64_t> ras_ce, ras_ue;  // ras/umc_err_count when RAS is on
  std::string compute_partition;           // "SPX" (MI300 class); "" leaves the file out
  std::string memory_partition;            // "NPS1"
  // available_compute_partition / available_memory_partition: the modes the GPU can switch to
  // ("SPX, DPX, QPX, CPX"); "" leaves the file out, as on GPUs without partitioning.
  std::string available_compute_partitions;
  std::string available_memory_partitions;
  FakeAmdHwmon hwmon_values;
  // KFD topology node.
  int kfd_node = 1;  // CPU nodes come first
  uint32_t kfd_gpu_id = 0;
  uint32_t gfx_target_version = 0;  // 90402 = gfx942
  uint32_t simd_count = 0;
  uint32_t simd_per_cu = 4;
  uint32_t num_xcc = 1;
  uint32_t array_count = 0;
  uint32_t simd_arrays_per_engine = 1;
  uint32_t cu_per_simd_array = 0;
  uint32_t max_engine_clk_fcompute = 0;  // MHz
  uint32_t num_sdma_xgmi_engines = 0;
  uint32_t vram_width_bits = 4096;         // mem_banks/0 width
  uint32_t mem_clk_max_mhz = 1600;         // mem_banks/0 mem_clk_max
  uint64_t hive_id = 0;                    // GPUs sharing a non-zero hive id are XGMI peers
  std::optional<uint64_t> kfd_vram_bytes;  // mem_banks/0 size_in_bytes; vram_total_bytes if empty
};

// A KFD CPU node (one per NUMA node).
struct FakeKfdCpuNode {
  int kfd_node = 0;
  uint32_t cpu_cores_count = 0;
  uint32_t cpu_core_id_base = 0;
  uint64_t memory_bytes = 0;
  uint32_t max_engine_clk_ccompute = 0;  // MHz
};

class FakeSysfs {
 public:
  // Builds under `root`, which must exist (a test's temp directory).
  explicit FakeSysfs(std::filesystem::path root);

  const std::filesystem::path& root() const { return root_; }
  std::string root_string() const { return root_.string(); }

  // /sys/devices/.../<address>, the real directory behind /sys/bus/pci/devices/<address>, and
  // its symlinks: bus entry, driver and module links, IOMMU group.
  void AddPciDevice(const FakePciDevice& device);
  // A GPU bound to amdgpu with everything the driver and KFD create for it; loads the amdgpu
  // module (see SetAmdgpuVersion). The KFD topology is rewritten on every call, so io_links
  // between GPUs of one hive, and between each GPU and its CPU node, stay complete; adding a
  // node's GPUs in one call rewrites it once.
  void AddAmdGpu(const FakeAmdGpu& gpu);
  void AddAmdGpus(const std::vector<FakeAmdGpu>& gpus);
  void AddKfdCpuNode(const FakeKfdCpuNode& node);
  // /sys/module/amdgpu/version; "" removes it (an in-tree driver has none).
  void SetAmdgpuVersion(const std::string& version);
  // /sys/module/amdgpu/srcversion, the checksum of the module's sources; "" removes it.
  void SetAmdgpuSrcVersion(const std::string& srcversion);

  // Raw access for cases the builders do not cover (malformed files, extra attributes).
  // Paths are relative to the root ("bus/pci/devices/0000:17:00.0/class").
  void WriteFile(const std::string& relative, const std::string& content);
  std::string ReadFile(const std::string& relative) const;  // "" when absent
  void Remove(const std::string& relative);
  bool Exists(const std::string& relative) const;

  // Surprise removal: the device's directory disappears with its bus, driver and IOMMU group
  // entries and, for an AMD GPU, its KFD node; class/drm and class/hwmon links are left
  // dangling.
  void RemovePciDevice(const std::string& address);

  // The device's real directory, relative to the root ("devices/pci0000:00/0000:17:00.0").
  std::string DevicePath(const std::string& address) const;
  // The hwmon directory of an AMD GPU added here, relative to the root.
  std::string HwmonPath(const std::string& address) const;

 private:
  std::filesystem::path Abs(const std::string& relative) const { return root_ / relative; }
  void MakeDirs(const std::filesystem::path& dir) const;
  void Write(const std::filesystem::path& path, const std::string& content) const;
  // A symlink at `link` to `target` (both absolute), stored relative as the kernel does.
  void Link(const std::filesystem::path& link, const std::filesystem::path& target) const;
  void BindDriver(const std::string& address, const std::string& driver);
  void WriteAmdGpu(const FakeAmdGpu& gpu);
  void WriteKfdTopology();

  std::filesystem::path root_;
  std::map<std::string, std::string> device_paths_;  // address -> path relative to root
  std::map<std::string, FakeAmdGpu> amd_gpus_;       // address -> GPU
  std::map<int, FakeKfdCpuNode> cpu_nodes_;          // KFD node -> CPU node
  mutable std::set<std::string> made_dirs_;          // directories known to exist
};

// A temporary directory removed with everything under it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string string() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace gpuop::fakes

#endif  // GPUOP_TEST_FAKES_SYSFS_FAKE_SYSFS_H_
