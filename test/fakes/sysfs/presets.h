#ifndef GPUOP_TEST_FAKES_SYSFS_PRESETS_H_
#define GPUOP_TEST_FAKES_SYSFS_PRESETS_H_

#include <filesystem>

#include "test/fakes/sysfs/fake_sysfs.h"

// Whole nodes as sysfs shows them. The values and where they come from: README.md beside this
// file. Each preset writes into `root`, which must exist and be empty.
namespace gpuop::fakes {

// 8 × AMD Instinct MI300X (1002:74a1, class 1200, gfx942, 192 GiB, SPX/NPS1) on two NUMA nodes
// (GPUs 0-3 on node 0, 4-7 on node 1), all in one XGMI hive, each below its own root port;
// amdgpu 6.10.5 from a ROCm driver package. cards 1-8 (card0 belongs to the BMC's display),
// renderD128-135, KFD nodes 2-9 after the two CPU nodes. Power is reported in power1_input;
// there is no edge sensor and no temperature limit (GC 9.4.3 hides them).
FakeSysfs Mi300xNode(const std::filesystem::path& root);

// 2 × AMD Instinct MI210 (1002:740f, class 0380, gfx90a, 64 GiB) on one NUMA node behind one
// PCIe switch, no XGMI bridge; the in-tree amdgpu (no module version). cards 0-1, renderD128-129,
// KFD nodes 1-2. Power is reported in power1_average; edge, junction and memory sensors with
// their limits.
FakeSysfs Mi210Node(const std::filesystem::path& root);

// An HGX H100 8-GPU board: 8 × 10de:2330 (3D controller, class 0302) and 4 NVSwitches 10de:22a3
// (class 0680), plus devices PCI discovery must ignore: a ConnectX-7 (15b3:1021), the BMC's
// ASPEED display (1a03:2000, class 0300) and an Intel Ethernet controller (8086:1572). With
// `driver_loaded` false the GPUs and NVSwitches are unbound, as before the driver is installed.
FakeSysfs NvidiaHgxNode(const std::filesystem::path& root, bool driver_loaded = true);

// A CPU-only node: a host bridge, the BMC's display and an Ethernet controller; no GPU driver.
FakeSysfs EmptyNode(const std::filesystem::path& root);

// One GPU of the presets above (index 0-7 and 0-1), on the root bus (no `parent`), for tests
// that assemble nodes of their own. Card, render minor, hwmon and KFD node follow the preset's
// numbering.
FakeAmdGpu Mi300xGpu(int index);
FakeAmdGpu Mi210Gpu(int index);

}  // namespace gpuop::fakes

#endif  // GPUOP_TEST_FAKES_SYSFS_PRESETS_H_
