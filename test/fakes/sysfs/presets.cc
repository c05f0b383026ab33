#include "test/fakes/sysfs/presets.h"

#include <array>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpuop::fakes {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

// Bus numbers of one 8-OAM MI300X platform; the root bus of each is its 0x20-aligned base.
constexpr std::array<const char*, 8> kMi300xAddresses = {
    "0000:05:00.0", "0000:26:00.0", "0000:46:00.0", "0000:65:00.0",
    "0000:85:00.0", "0000:a6:00.0", "0000:c6:00.0", "0000:e5:00.0"};

// DGX H100 bus numbers: GPUs, then NVSwitches.
constexpr std::array<const char*, 8> kH100Addresses = {
    "0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
    "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"};
constexpr std::array<const char*, 4> kNvSwitchAddresses = {"0000:05:00.0", "0000:06:00.0",
                                                           "0000:07:00.0", "0000:08:00.0"};

// An AMD EPYC root port (or switch port) for `address`.
FakePciDevice Bridge(const std::string& address, uint16_t vendor, uint16_t device, int numa,
                     const std::string& parent = "") {
  return {.address = address,
          .vendor = vendor,
          .device = device,
          .class_code = 0x060400,
          .numa_node = numa,
          .driver = "pcieport",
          .parent = parent};
}

// The BMC's display behind its own bridge, and an Ethernet controller: on every server.
void AddPlatformDevices(FakeSysfs& sysfs, int numa) {
  sysfs.AddPciDevice(Bridge("0000:02:00.0", 0x1a03, 0x1150, numa));
  sysfs.AddPciDevice({.address = "0000:03:00.0",
                      .vendor = 0x1a03,
                      .device = 0x2000,
                      .class_code = 0x030000,
                      .subsystem_vendor = 0x1a03,
                      .subsystem_device = 0x2000,
                      .revision = 0x52,
                      .numa_node = numa,
                      .driver = "ast",
                      .iommu_group = 14,
                      .parent = "0000:02:00.0"});
  sysfs.AddPciDevice({.address = "0000:04:00.0",
                      .vendor = 0x8086,
                      .device = 0x1572,
                      .class_code = 0x020000,
                      .subsystem_vendor = 0x8086,
                      .subsystem_device = 0x0007,
                      .revision = 0x02,
                      .numa_node = numa,
                      .driver = "i40e",
                      .iommu_group = 15,
                      .sriov_totalvfs = 64});
}

}  // namespace

FakeAmdGpu Mi300xGpu(int i) {
  const bool socket1 = i >= 4;
  const int64_t k = i;
  return {
      .pci = {.address = kMi300xAddresses.at(static_cast<size_t>(i)),
              .device = 0x74a1,
              .class_code = 0x120000,
              .subsystem_vendor = 0x1002,
              .subsystem_device = 0x74a1,
              .numa_node = socket1 ? 1 : 0,
              .local_cpulist = socket1 ? "96-191,288-383" : "0-95,192-287",
              .iommu_group = 30 + 8 * i},
      .card = i + 1,
      .render_minor = 128 + i,
      .hwmon = i + 2,
      .product_name = "AMD Instinct MI300X OAM",
      .serial_number = absl::StrFormat("692324%06d", 1017 + 31 * i),
      .unique_id = 0x3a1c5d0a6b9e2c10ULL + (static_cast<uint64_t>(i) << 8),
      .vram_total_bytes = 192 * kGiB,
      .vram_used_bytes = static_cast<uint64_t>(i + 1) * kGiB,
      .gpu_busy_percent = 10 * i,
      .mem_busy_percent = 5 * i,
      .ras_ce = 0,
      .ras_ue = 0,
      .compute_partition = "SPX",
      .memory_partition = "NPS1",
      .available_compute_partitions = "SPX, DPX, QPX, CPX",
      .available_memory_partitions = "NPS1, NPS4",
      .hwmon_values = {.junction_mc = 42000 + 1000 * k,
                       .mem_mc = 36000 + 1000 * k,
                       .power_input_uw = 140000000 + 1000000 * static_cast<uint64_t>(i),
                       .power_cap_uw = 750000000,
                       .power_cap_min_uw = 0,
                       .power_cap_max_uw = 750000000,
                       .power_cap_default_uw = 750000000,
                       .sclk_hz = 132000000,
                       .mclk_hz = 900000000},
      .kfd_node = 2 + i,
      .kfd_gpu_id = static_cast<uint32_t>(20000 + 4111 * i),
      .gfx_target_version = 90402,
      .simd_count = 1216,
      .simd_per_cu = 4,
      .num_xcc = 8,
      .array_count = 32,
      .simd_arrays_per_engine = 1,
      .cu_per_simd_array = 10,
      .max_engine_clk_fcompute = 2100,
      .num_sdma_xgmi_engines = 14,
      .vram_width_bits = 8192,
      .mem_clk_max_mhz = 1300,
      .hive_id = 0xa1b2c3d4e5f60718ULL,
  };
}

FakeAmdGpu Mi210Gpu(int i) {
  const int64_t k = i;
  return {
      .pci = {.address = i == 0 ? "0000:43:00.0" : "0000:44:00.0",
              .device = 0x740f,
              .class_code = 0x038000,
              .subsystem_vendor = 0x1002,
              .subsystem_device = 0x0c34,
              .revision = 0x02,
              .numa_node = 0,
              .local_cpulist = "0-127",
              .iommu_group = 40 + i},
      .card = i,
      .render_minor = 128 + i,
      .hwmon = i + 1,
      .product_name = "AMD Instinct MI210",
      .serial_number = absl::StrFormat("PCB05270%04d", 311 + i),
      .unique_id = 0x19019a2b3c4d5e60ULL + static_cast<uint64_t>(i),
      .vram_total_bytes = 68702699520,
      .vram_used_bytes = 11927552 + static_cast<uint64_t>(i) * kGiB,
      .gpu_busy_percent = 50 + 25 * i,
      .mem_busy_percent = 3 + i,
      .pcie_replay_count = static_cast<uint64_t>(i),
      .ras_ce = static_cast<uint64_t>(2 * i),
      .ras_ue = 0,
      .hwmon_values = {.edge_mc = 35000 + 2000 * k,
                       .edge_crit_mc = 100000,
                       .edge_emergency_mc = 105000,
                       .junction_mc = 38000 + 2000 * k,
                       .junction_crit_mc = 110000,
                       .junction_emergency_mc = 115000,
                       .mem_mc = 34000 + 2000 * k,
                       .mem_crit_mc = 100000,
                       .mem_emergency_mc = 105000,
                       .power_average_uw = 42000000 + 500000 * static_cast<uint64_t>(i),
                       .power_cap_uw = 300000000,
                       .power_cap_min_uw = 0,
                       .power_cap_max_uw = 300000000,
                       .power_cap_default_uw = 300000000,
                       .sclk_hz = 800000000,
                       .mclk_hz = 1600000000},
      .kfd_node = 1 + i,
      .kfd_gpu_id = static_cast<uint32_t>(53011 + 7 * i),
      .gfx_target_version = 90010,
      .simd_count = 416,
      .simd_per_cu = 4,
      .num_xcc = 1,
      .array_count = 8,
      .simd_arrays_per_engine = 1,
      .cu_per_simd_array = 14,
      .max_engine_clk_fcompute = 1700,
      .num_sdma_xgmi_engines = 3,
      .vram_width_bits = 4096,
      .mem_clk_max_mhz = 1600,
  };
}

FakeSysfs Mi300xNode(const std::filesystem::path& root) {
  FakeSysfs sysfs(root);
  AddPlatformDevices(sysfs, 0);
  for (int node = 0; node < 2; ++node) {
    sysfs.AddKfdCpuNode({.kfd_node = node,
                         .cpu_cores_count = 192,
                         .cpu_core_id_base = static_cast<uint32_t>(192 * node),
                         .memory_bytes = 768 * kGiB,
                         .max_engine_clk_ccompute = 3700});
  }
  std::vector<FakeAmdGpu> gpus;
  for (int i = 0; i < 8; ++i) {
    FakeAmdGpu gpu = Mi300xGpu(i);
    const std::string base = gpu.pci.address.substr(0, 5);
    const unsigned int bus = std::stoul(gpu.pci.address.substr(5, 2), nullptr, 16);
    const std::string port = absl::StrFormat("%s%02x:01.1", base, bus & 0xe0);
    sysfs.AddPciDevice(Bridge(port, 0x1022, 0x14ab, gpu.pci.numa_node));
    gpu.pci.parent = port;
    gpus.push_back(gpu);
  }
  sysfs.AddAmdGpus(gpus);
  sysfs.SetAmdgpuVersion("6.10.5");
  sysfs.SetAmdgpuSrcVersion("A1C35B0E7F2D9E4C6B8D0F1");
  return sysfs;
}

FakeSysfs Mi210Node(const std::filesystem::path& root) {
  FakeSysfs sysfs(root);
  AddPlatformDevices(sysfs, 0);
  sysfs.AddKfdCpuNode({.kfd_node = 0,
                       .cpu_cores_count = 128,
                       .memory_bytes = 512 * kGiB,
                       .max_engine_clk_ccompute = 2450});
  // Root port, then a Broadcom PEX switch: its upstream port and one downstream port per GPU.
  sysfs.AddPciDevice(Bridge("0000:40:01.1", 0x1022, 0x1483, 0));
  sysfs.AddPciDevice(Bridge("0000:41:00.0", 0x1000, 0xc010, 0, "0000:40:01.1"));
  std::vector<FakeAmdGpu> gpus;
  for (int i = 0; i < 2; ++i) {
    const std::string down = i == 0 ? "0000:42:00.0" : "0000:42:04.0";
    sysfs.AddPciDevice(Bridge(down, 0x1000, 0xc010, 0, "0000:41:00.0"));
    FakeAmdGpu gpu = Mi210Gpu(i);
    gpu.pci.parent = down;
    gpus.push_back(gpu);
  }
  sysfs.AddAmdGpus(gpus);
  return sysfs;
}

FakeSysfs NvidiaHgxNode(const std::filesystem::path& root, bool driver_loaded) {
  FakeSysfs sysfs(root);
  AddPlatformDevices(sysfs, 0);
  for (size_t i = 0; i < kNvSwitchAddresses.size(); ++i) {
    sysfs.AddPciDevice({.address = kNvSwitchAddresses[i],
                        .vendor = 0x10de,
                        .device = 0x22a3,
                        .class_code = 0x068000,
                        .subsystem_vendor = 0x10de,
                        .subsystem_device = 0x1796,
                        .revision = 0xa1,
                        .numa_node = 0,
                        .local_cpulist = "0-55,112-167",
                        .driver = driver_loaded ? "nvidia-nvswitch" : "",
                        .iommu_group = 20 + static_cast<int>(i)});
  }
  for (size_t i = 0; i < kH100Addresses.size(); ++i) {
    const bool socket1 = i >= 4;
    sysfs.AddPciDevice({.address = kH100Addresses[i],
                        .vendor = 0x10de,
                        .device = 0x2330,
                        .class_code = 0x030200,
                        .subsystem_vendor = 0x10de,
                        .subsystem_device = 0x16c1,
                        .revision = 0xa1,
                        .numa_node = socket1 ? 1 : 0,
                        .local_cpulist = socket1 ? "56-111,168-223" : "0-55,112-167",
                        .driver = driver_loaded ? "nvidia" : "",
                        .iommu_group = 60 + 10 * static_cast<int>(i)});
  }
  sysfs.AddPciDevice({.address = "0000:1a:00.0",
                      .vendor = 0x15b3,
                      .device = 0x1021,
                      .class_code = 0x020700,
                      .subsystem_vendor = 0x15b3,
                      .subsystem_device = 0x0041,
                      .numa_node = 0,
                      .local_cpulist = "0-55,112-167",
                      .driver = "mlx5_core",
                      .iommu_group = 52,
                      .sriov_totalvfs = 16});
  if (driver_loaded) sysfs.WriteFile("module/nvidia/version", "550.127.05\n");
  return sysfs;
}

FakeSysfs EmptyNode(const std::filesystem::path& root) {
  FakeSysfs sysfs(root);
  sysfs.AddPciDevice({.address = "0000:00:00.0",
                      .vendor = 0x8086,
                      .device = 0x09a2,
                      .class_code = 0x088000,
                      .subsystem_vendor = 0x8086,
                      .subsystem_device = 0x0000,
                      .revision = 0x04,
                      .numa_node = 0});
  AddPlatformDevices(sysfs, 0);
  return sysfs;
}

}  // namespace gpuop::fakes
