#include "agent/discover/discover.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "test/fakes/sysfs/fake_sysfs.h"
#include "test/fakes/sysfs/presets.h"

namespace gpuop::agent {
namespace {

using ::testing::HasSubstr;

TEST(DiscoverTest, NodeWithoutDriversIsANormalReport) {
  fakes::TempDir root;
  fakes::EmptyNode(root.path());
  auto report =
      DiscoverNode({.nvml_library = "/nonexistent/libnvidia-ml.so.1", .sysfs_root = root.path()});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->vendors.empty());
  ASSERT_TRUE(report->pci.has_value());
  EXPECT_TRUE(report->pci->devices.empty());
  const std::string table = RenderTable(*report);
  EXPECT_THAT(table, HasSubstr("no GPU driver found on this node"));
  EXPECT_THAT(table, HasSubstr("note: nvidia: NVML: cannot load /nonexistent/libnvidia-ml.so.1"));
}

TEST(DiscoverTest, AmdNodeThroughSysfs) {
  fakes::TempDir root;
  fakes::Mi300xNode(root.path());
  auto report =
      DiscoverNode({.nvml_library = "/nonexistent/libnvidia-ml.so.1", .sysfs_root = root.path()});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->vendors.size(), 1u);
  const VendorReport& amd = report->vendors[0];
  EXPECT_EQ(amd.vendor, hw::Vendor::kAmd);
  ASSERT_EQ(amd.inventory.gpus.size(), 8u);
  EXPECT_EQ(amd.inventory.gpus[0].architecture, "gfx942");
  ASSERT_TRUE(amd.sample.has_value());
  EXPECT_EQ(amd.sample->gpus.size(), 8u);
  EXPECT_EQ(report->pci->GpuCount(hw::Vendor::kAmd), 8);

  const std::string table = RenderTable(*report);
  EXPECT_THAT(table, HasSubstr("amd: 8 GPU(s)"));
  EXPECT_THAT(table, HasSubstr("pci: 0 NVIDIA, 8 AMD, 0 Intel GPU(s); 0 NVSwitch(es)"));
  EXPECT_THAT(table, HasSubstr("telemetry at"));
  const nlohmann::json json = RenderJson(*report);
  EXPECT_EQ(json["vendors"][0]["vendor"], "amd");
  EXPECT_EQ(json["vendors"][0]["inventory"]["gpus"].size(), 8u);
  EXPECT_EQ(json["pci"].size(), 8u);
}

TEST(DiscoverTest, NvidiaGpusVisibleOnPciBeforeTheDriverLoads) {
  fakes::TempDir root;
  fakes::NvidiaHgxNode(root.path(), /*driver_loaded=*/false);
  auto report = DiscoverNode({.nvml_library = "/nonexistent/libnvidia-ml.so.1",
                              .sysfs_root = root.path(),
                              .take_sample = false});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->vendors.empty());
  EXPECT_EQ(report->pci->GpuCount(hw::Vendor::kNvidia), 8);
  EXPECT_EQ(report->pci->NvSwitchCount(), 4);
  EXPECT_THAT(RenderTable(*report), HasSubstr("(none)"));  // no driver bound
}

TEST(DiscoverTest, NvidiaNodeThroughNvmlWithTopology) {
  fakes::TempDir root;
  fakes::EmptyNode(root.path());
  setenv("GPUOP_FAKE_NVML_SCENARIO", "h100-8x-nvswitch", 1);
  auto report = DiscoverNode({.nvml_library = GPUOP_FAKE_NVML_LIBRARY, .sysfs_root = root.path()});
  unsetenv("GPUOP_FAKE_NVML_SCENARIO");
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->vendors.size(), 1u);
  EXPECT_EQ(report->vendors[0].vendor, hw::Vendor::kNvidia);
  EXPECT_EQ(report->vendors[0].inventory.gpus.size(), 8u);
  const std::string table = RenderTable(*report);
  EXPECT_THAT(table, HasSubstr("nvidia: 8 GPU(s), driver 570.86.15, CUDA 12.8"));
  EXPECT_THAT(table, HasSubstr("NVIDIA H100 80GB HBM3"));
  EXPECT_THAT(table, HasSubstr("NV18"));
  const nlohmann::json json = RenderJson(*report);
  EXPECT_EQ(json["vendors"][0]["inventory"]["cudaDriverVersion"], "12.8");
  EXPECT_EQ(json["vendors"][0]["sample"]["gpus"].size(), 8u);
}

}  // namespace
}  // namespace gpuop::agent
