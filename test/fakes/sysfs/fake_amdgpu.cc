// FakeSysfs: what amdgpu and amdkfd add to sysfs for AMD GPUs.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::fakes {
namespace fs = std::filesystem;
namespace {

std::string Lines(const std::vector<std::pair<std::string, uint64_t>>& properties) {
  std::string text;
  for (const auto& [key, value] : properties) absl::StrAppend(&text, key, " ", value, "\n");
  return text;
}

// KFD's location_id: bus in bits 8..15, device in bits 3..7, function in bits 0..2.
std::pair<uint64_t, uint64_t> DomainAndLocation(const std::string& address) {
  unsigned int domain = 0, bus = 0, device = 0, function = 0;
  std::sscanf(address.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function);
  return {domain, (bus << 8) | (device << 3) | function};
}

}  // namespace

void FakeSysfs::SetAmdgpuVersion(const std::string& version) {
  if (version.empty()) {
    Remove("module/amdgpu/version");
  } else {
    WriteFile("module/amdgpu/version", version + "\n");
  }
}

void FakeSysfs::SetAmdgpuSrcVersion(const std::string& srcversion) {
  if (srcversion.empty()) {
    Remove("module/amdgpu/srcversion");
  } else {
    WriteFile("module/amdgpu/srcversion", srcversion + "\n");
  }
}

void FakeSysfs::AddAmdGpu(const FakeAmdGpu& gpu) { AddAmdGpus({gpu}); }

void FakeSysfs::AddAmdGpus(const std::vector<FakeAmdGpu>& gpus) {
  for (const FakeAmdGpu& gpu : gpus) WriteAmdGpu(gpu);
  WriteKfdTopology();
}

void FakeSysfs::WriteAmdGpu(const FakeAmdGpu& original) {
  FakeAmdGpu gpu = original;
  gpu.pci.vendor = 0x1002;
  gpu.pci.driver = "amdgpu";
  AddPciDevice(gpu.pci);
  amd_gpus_[gpu.pci.address] = gpu;
  const fs::path dir = Abs(device_paths_.at(gpu.pci.address));

  Write(dir / "mem_info_vram_total", absl::StrCat(gpu.vram_total_bytes, "\n"));
  Write(dir / "mem_info_vram_used", absl::StrCat(gpu.vram_used_bytes, "\n"));
  Write(dir / "mem_info_vis_vram_total", absl::StrCat(gpu.vram_total_bytes, "\n"));
  Write(dir / "mem_info_vis_vram_used", absl::StrCat(gpu.vram_used_bytes, "\n"));
  Write(dir / "gpu_busy_percent", absl::StrCat(gpu.gpu_busy_percent, "\n"));
  Write(dir / "mem_busy_percent", absl::StrCat(gpu.mem_busy_percent, "\n"));
  Write(dir / "pcie_replay_count", absl::StrCat(gpu.pcie_replay_count, "\n"));
  Write(dir / "power_dpm_force_performance_level", "auto\n");
  if (!gpu.product_name.empty()) Write(dir / "product_name", gpu.product_name + "\n");
  if (!gpu.product_number.empty()) Write(dir / "product_number", gpu.product_number + "\n");
  if (!gpu.serial_number.empty()) Write(dir / "serial_number", gpu.serial_number + "\n");
  if (gpu.unique_id != 0) Write(dir / "unique_id", absl::StrFormat("%016x\n", gpu.unique_id));
  if (!gpu.compute_partition.empty()) {
    Write(dir / "current_compute_partition", gpu.compute_partition + "\n");
  }
  if (!gpu.memory_partition.empty()) {
    Write(dir / "current_memory_partition", gpu.memory_partition + "\n");
  }
  if (!gpu.available_compute_partitions.empty()) {
    Write(dir / "available_compute_partition", gpu.available_compute_partitions + "\n");
  }
  if (!gpu.available_memory_partitions.empty()) {
    Write(dir / "available_memory_partition", gpu.available_memory_partitions + "\n");
  }
  if (gpu.ras_ce || gpu.ras_ue) {
    Write(dir / "ras/umc_err_count",
          absl::StrCat("ue: ", gpu.ras_ue.value_or(0), "\nce: ", gpu.ras_ce.value_or(0), "\n"));
  }

  for (const auto& [name, minor] : {std::pair<std::string, int>{"card", gpu.card},
                                    std::pair<std::string, int>{"renderD", gpu.render_minor}}) {
    const std::string node = absl::StrCat(name, minor);
    const fs::path drm = dir / "drm" / node;
    Write(drm / "dev", absl::StrCat("226:", minor, "\n"));
    Write(drm / "uevent", absl::StrCat("MAJOR=226\nMINOR=", minor, "\nDEVNAME=dri/", node,
                                       "\nDEVTYPE=drm_minor\n"));
    Link(drm / "device", dir);
    Link(drm / "subsystem", Abs("class/drm"));
    Link(Abs("class/drm") / node, drm);
  }

  const FakeAmdHwmon& h = gpu.hwmon_values;
  const fs::path hwmon = dir / "hwmon" / absl::StrCat("hwmon", gpu.hwmon);
  Write(hwmon / "name", "amdgpu\n");
  Link(hwmon / "device", dir);
  Link(Abs("class/hwmon") / absl::StrCat("hwmon", gpu.hwmon), hwmon);
  auto put = [&](const char* file, const auto& value) {
    if (value) Write(hwmon / file, absl::StrCat(*value, "\n"));
  };
  if (h.edge_mc) Write(hwmon / "temp1_label", "edge\n");
  put("temp1_input", h.edge_mc);
  put("temp1_crit", h.edge_crit_mc);
  put("temp1_crit_hyst", h.edge_crit_hyst_mc);
  put("temp1_emergency", h.edge_emergency_mc);
  if (h.junction_mc) Write(hwmon / "temp2_label", "junction\n");
  put("temp2_input", h.junction_mc);
  put("temp2_crit", h.junction_crit_mc);
  put("temp2_emergency", h.junction_emergency_mc);
  if (h.mem_mc) Write(hwmon / "temp3_label", "mem\n");
  put("temp3_input", h.mem_mc);
  put("temp3_crit", h.mem_crit_mc);
  put("temp3_emergency", h.mem_emergency_mc);
  put("power1_average", h.power_average_uw);
  put("power1_input", h.power_input_uw);
  put("power1_cap", h.power_cap_uw);
  put("power1_cap_min", h.power_cap_min_uw);
  put("power1_cap_max", h.power_cap_max_uw);
  put("power1_cap_default", h.power_cap_default_uw);
  if (h.sclk_hz) Write(hwmon / "freq1_label", "sclk\n");
  put("freq1_input", h.sclk_hz);
  if (h.mclk_hz) Write(hwmon / "freq2_label", "mclk\n");
  put("freq2_input", h.mclk_hz);
}

void FakeSysfs::AddKfdCpuNode(const FakeKfdCpuNode& node) {
  cpu_nodes_[node.kfd_node] = node;
  WriteKfdTopology();
}

// Rewrites the whole KFD topology from the CPU nodes and GPUs added so far: node properties
// (whose io_links_count depends on the others), memory banks and io_links.
void FakeSysfs::WriteKfdTopology() {
  const fs::path topology = Abs("class/kfd/kfd/topology");
  Remove("class/kfd/kfd/topology/nodes");
  Write(topology / "generation_id", "1\n");
  Write(topology / "system_properties", "platform_oem 0\nplatform_id 0\nplatform_rev 0\n");
  auto node_dir = [&](int node) { return topology / "nodes" / absl::StrCat(node); };

  // io_links per node: (to, type, weight, bandwidth).
  struct IoLink {
    int to;
    uint64_t type, weight, min_bw, max_bw;
  };
  std::map<int, std::vector<IoLink>> links;
  for (const auto& [address, gpu] : amd_gpus_) {
    int cpu = cpu_nodes_.empty() ? -1 : cpu_nodes_.begin()->first;
    if (cpu_nodes_.contains(gpu.pci.numa_node)) cpu = gpu.pci.numa_node;
    if (cpu >= 0) {
      links[gpu.kfd_node].push_back({cpu, 2, 20, 312, 64000});
      links[cpu].push_back({gpu.kfd_node, 2, 20, 312, 64000});
    }
    for (const auto& [peer_address, peer] : amd_gpus_) {
      if (peer_address != address && gpu.hive_id != 0 && peer.hive_id == gpu.hive_id) {
        links[gpu.kfd_node].push_back({peer.kfd_node, 11, 15, 50000, 50000});
      }
    }
  }
  auto write_links = [&](int node) {
    int index = 0;
    for (const IoLink& link : links[node]) {
      Write(node_dir(node) / "io_links" / absl::StrCat(index++) / "properties",
            Lines({{"type", link.type},
                   {"version_major", 0},
                   {"version_minor", 0},
                   {"node_from", static_cast<uint64_t>(node)},
                   {"node_to", static_cast<uint64_t>(link.to)},
                   {"weight", link.weight},
                   {"min_latency", 0},
                   {"max_latency", 0},
                   {"min_bandwidth", link.min_bw},
                   {"max_bandwidth", link.max_bw},
                   {"recommended_transfer_size", 0},
                   {"flags", 1}}));
    }
    return static_cast<uint64_t>(links[node].size());
  };

  for (const auto& [id, cpu] : cpu_nodes_) {
    const uint64_t io_links = write_links(id);
    Write(node_dir(id) / "gpu_id", "0\n");
    Write(node_dir(id) / "properties",
          Lines({{"cpu_cores_count", cpu.cpu_cores_count},
                 {"simd_count", 0},
                 {"mem_banks_count", 1},
                 {"caches_count", 0},
                 {"io_links_count", io_links},
                 {"p2p_links_count", 0},
                 {"cpu_core_id_base", cpu.cpu_core_id_base},
                 {"simd_id_base", 0},
                 {"max_waves_per_simd", 0},
                 {"lds_size_in_kb", 0},
                 {"gds_size_in_kb", 0},
                 {"num_gws", 0},
                 {"wave_front_size", 0},
                 {"array_count", 0},
                 {"simd_arrays_per_engine", 0},
                 {"cu_per_simd_array", 0},
                 {"simd_per_cu", 0},
                 {"max_slots_scratch_cu", 0},
                 {"gfx_target_version", 0},
                 {"vendor_id", 0},
                 {"device_id", 0},
                 {"location_id", 0},
                 {"domain", 0},
                 {"drm_render_minor", 0},
                 {"hive_id", 0},
                 {"num_sdma_engines", 0},
                 {"num_sdma_xgmi_engines", 0},
                 {"num_sdma_queues_per_engine", 0},
                 {"num_cp_queues", 0},
                 {"max_engine_clk_ccompute", cpu.max_engine_clk_ccompute}}));
    Write(node_dir(id) / "mem_banks/0/properties", Lines({{"heap_type", 0},
                                                          {"size_in_bytes", cpu.memory_bytes},
                                                          {"flags", 0},
                                                          {"width", 64},
                                                          {"mem_clk_max", 4800}}));
  }
  for (const auto& [address, gpu] : amd_gpus_) {
    const uint64_t io_links = write_links(gpu.kfd_node);
    const auto [domain, location] = DomainAndLocation(address);
    Write(node_dir(gpu.kfd_node) / "gpu_id", absl::StrCat(gpu.kfd_gpu_id, "\n"));
    Write(node_dir(gpu.kfd_node) / "properties",
          Lines({{"cpu_cores_count", 0},
                 {"simd_count", gpu.simd_count},
                 {"mem_banks_count", 1},
                 {"caches_count", 0},
                 {"io_links_count", io_links},
                 {"p2p_links_count", 0},
                 {"cpu_core_id_base", 0},
                 {"simd_id_base", 2147487744u},
                 {"max_waves_per_simd", 8},
                 {"lds_size_in_kb", 64},
                 {"gds_size_in_kb", 0},
                 {"num_gws", 64},
                 {"wave_front_size", 64},
                 {"array_count", gpu.array_count},
                 {"simd_arrays_per_engine", gpu.simd_arrays_per_engine},
                 {"cu_per_simd_array", gpu.cu_per_simd_array},
                 {"simd_per_cu", gpu.simd_per_cu},
                 {"max_slots_scratch_cu", 32},
                 {"gfx_target_version", gpu.gfx_target_version},
                 {"vendor_id", 0x1002},
                 {"device_id", gpu.pci.device},
                 {"location_id", location},
                 {"domain", domain},
                 {"drm_render_minor", static_cast<uint64_t>(gpu.render_minor)},
                 {"hive_id", gpu.hive_id},
                 {"num_sdma_engines", 2},
                 {"num_sdma_xgmi_engines", gpu.num_sdma_xgmi_engines},
                 {"num_sdma_queues_per_engine", 8},
                 {"num_cp_queues", 24},
                 {"max_engine_clk_fcompute", gpu.max_engine_clk_fcompute},
                 {"local_mem_size", 0},
                 {"fw_version", 0},
                 {"capability", 0},
                 {"debug_prop", 0},
                 {"sdma_fw_version", 0},
                 {"unique_id", gpu.unique_id},
                 {"num_xcc", gpu.num_xcc},
                 {"max_engine_clk_ccompute", 0}}));
    Write(node_dir(gpu.kfd_node) / "mem_banks/0/properties",
          Lines({{"heap_type", 1},
                 {"size_in_bytes", gpu.kfd_vram_bytes.value_or(gpu.vram_total_bytes)},
                 {"flags", 0},
                 {"width", gpu.vram_width_bits},
                 {"mem_clk_max", gpu.mem_clk_max_mhz}}));
  }
}

}  // namespace gpuop::fakes
