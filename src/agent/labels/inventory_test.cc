#include "agent/labels/inventory.h"

#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent {
namespace {

TEST(InventoryTest, AnnotationListsEveryGpuAndMigDevice) {
  hw::Inventory inv{.driver_version = "570.86.15", .cuda_driver_version = 12080};
  hw::Gpu gpu{.index = 0,
              .uuid = "GPU-a",
              .pci_bus_id = "0000:17:00.0",
              .product = "NVIDIA A100-SXM4-80GB",
              .memory_bytes = 80ull << 30,
              .mig_enabled = true};
  gpu.mig_devices.push_back({.uuid = "MIG-1", .profile = "3g.40gb"});
  inv.gpus.push_back(gpu);
  const nlohmann::json a = nlohmann::json::parse(InventoryAnnotation({inv}));
  EXPECT_EQ(a["driver"], "570.86.15");
  EXPECT_EQ(a["cuda"], "12.8");
  ASSERT_EQ(a["gpus"].size(), 1u);
  EXPECT_EQ(a["gpus"][0]["memoryMiB"], 81920);
  EXPECT_EQ(a["gpus"][0]["migDevices"][0]["profile"], "3g.40gb");
}

TEST(InventoryTest, HostDriverIsALoadedModuleWithoutTheDriverContainer) {
  fakes::TempDir dir;
  const auto proc = dir.path() / "proc";
  const auto root = dir.path() / "run-nvidia-driver";
  EXPECT_FALSE(HostDriverPresent(proc, root)) << "no driver loaded";
  std::filesystem::create_directories(proc / "driver" / "nvidia");
  std::ofstream(proc / "driver" / "nvidia" / "version") << "NVRM version: 570.86.15\n";
  EXPECT_TRUE(HostDriverPresent(proc, root));
  std::filesystem::create_directories(root);
  EXPECT_TRUE(HostDriverPresent(proc, root)) << "an empty mount point is not a driver container";
  std::filesystem::create_directories(root / "usr");
  EXPECT_FALSE(HostDriverPresent(proc, root)) << "gpuop's driver container is running";
}

}  // namespace
}  // namespace gpuop::agent
