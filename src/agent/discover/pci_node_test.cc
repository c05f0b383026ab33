#include "agent/discover/pci_node.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/fakes/sysfs/fake_sysfs.h"
#include "test/fakes/sysfs/presets.h"

namespace gpuop::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::SizeIs;
using Labels = std::map<std::string, std::string>;

fakes::FakePciDevice Device(const std::string& address, uint16_t vendor, uint16_t device,
                            uint32_t class_code) {
  return {.address = address,
          .vendor = vendor,
          .device = device,
          .class_code = class_code,
          .subsystem_vendor = vendor,
          .subsystem_device = 0x0001};
}

// A virtual machine's host bridge, ISA bridge and Ethernet: what every node has.
void AddChipset(fakes::FakeSysfs& sysfs) {
  sysfs.AddPciDevice(Device("0000:00:00.0", 0x8086, 0x1237, 0x060000));
  sysfs.AddPciDevice(Device("0000:00:01.0", 0x8086, 0x7000, 0x060100));
  sysfs.AddPciDevice(Device("0000:00:03.0", 0x1af4, 0x1000, 0x020000));
}

absl::StatusOr<PciNodeVerdict> Scan(const fakes::FakeSysfs& sysfs) {
  return ScanPciNode(sysfs.root_string());
}

TEST(PciNodeTest, AnH100IsAnNvidiaGpuNode) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs(dir.path());
  AddChipset(sysfs);
  sysfs.AddPciDevice(Device("0000:17:00.0", 0x10de, 0x2330, 0x030200));  // no driver bound
  absl::StatusOr<PciNodeVerdict> verdict = Scan(sysfs);
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_TRUE(verdict->conclusive);
  EXPECT_THAT(verdict->nvidia, ElementsAre("0000:17:00.0"));
  EXPECT_THAT(verdict->amd, IsEmpty());
  EXPECT_THAT(DiscoveryLabels(*verdict), ElementsAre(Pair("gpuop.io/gpu.present", "true"),
                                                     Pair("gpuop.io/gpu.vendor", "nvidia")));
}

TEST(PciNodeTest, AnHgxBoardBeforeTheDriverCountsGpusNotNvSwitches) {
  fakes::TempDir dir;
  const fakes::FakeSysfs sysfs = fakes::NvidiaHgxNode(dir.path(), /*driver_loaded=*/false);
  absl::StatusOr<PciNodeVerdict> verdict = Scan(sysfs);
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_THAT(verdict->nvidia, SizeIs(8));
  EXPECT_EQ(verdict->vendor(), "nvidia");
}

TEST(PciNodeTest, AHostWithTheNvidiaModuleLoadedHasItsOwnDriver) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs(dir.path());
  AddChipset(sysfs);
  sysfs.AddPciDevice(Device("0000:17:00.0", 0x10de, 0x2330, 0x030200));
  std::filesystem::create_directories(sysfs.root() / "module" / "nvidia");  // the loaded module
  absl::StatusOr<PciNodeVerdict> verdict = Scan(sysfs);
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_TRUE(verdict->nvidia_module_loaded);
  EXPECT_THAT(DiscoveryLabels(*verdict), ElementsAre(Pair("gpuop.io/driver.preinstalled", "true"),
                                                     Pair("gpuop.io/gpu.present", "true"),
                                                     Pair("gpuop.io/gpu.vendor", "nvidia")));
  // nouveau holding the GPUs is reported for the operator to show.
  std::filesystem::create_directories(sysfs.root() / "module" / "nouveau");
  verdict = Scan(sysfs);
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_EQ(DiscoveryLabels(*verdict)["gpuop.io/nouveau.loaded"], "true");
  // Only on a node with NVIDIA GPUs.
  PciNodeVerdict cpu_only;
  cpu_only.nvidia_module_loaded = true;
  EXPECT_THAT(DiscoveryLabels(cpu_only), ElementsAre(Pair("gpuop.io/gpu.present", "false")));
}

TEST(PciNodeTest, AnMi300xIsAnAmdGpuNode) {
  fakes::TempDir dir;
  const fakes::FakeSysfs sysfs = fakes::Mi300xNode(dir.path());  // class 0x120000
  absl::StatusOr<PciNodeVerdict> verdict = Scan(sysfs);
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_THAT(verdict->amd, SizeIs(8));
  EXPECT_THAT(verdict->nvidia, IsEmpty());
  EXPECT_THAT(DiscoveryLabels(*verdict), ElementsAre(Pair("gpuop.io/gpu.present", "true"),
                                                     Pair("gpuop.io/gpu.vendor", "amd")));

  fakes::TempDir one;
  fakes::FakeSysfs single(one.path());
  single.AddPciDevice(Device("0000:05:00.0", 0x1002, 0x74a1, 0x120000));
  EXPECT_EQ(Scan(single)->vendor(), "amd");
}

TEST(PciNodeTest, BothVendorsAreMixed) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs(dir.path());
  sysfs.AddPciDevice(Device("0000:17:00.0", 0x10de, 0x2330, 0x030200));
  sysfs.AddPciDevice(Device("0000:85:00.0", 0x1002, 0x740f, 0x038000));  // MI210
  EXPECT_EQ(DiscoveryLabels(*Scan(sysfs)).at("gpuop.io/gpu.vendor"), "mixed");
}

TEST(PciNodeTest, CpuNodesWithOnlyAPlatformDisplayAreNotGpuNodes) {
  struct Case {
    const char* name;
    uint16_t vendor;
    uint16_t device;
  };
  for (const Case& c : {Case{"virtio-gpu", 0x1af4, 0x1050}, Case{"Matrox G200eW", 0x102b, 0x0532},
                        Case{"ASPEED", 0x1a03, 0x2000}, Case{"Intel UHD", 0x8086, 0x9a49}}) {
    fakes::TempDir dir;
    fakes::FakeSysfs sysfs(dir.path());
    AddChipset(sysfs);
    sysfs.AddPciDevice(Device("0000:00:02.0", c.vendor, c.device, 0x030000));
    absl::StatusOr<PciNodeVerdict> verdict = Scan(sysfs);
    ASSERT_TRUE(verdict.ok()) << c.name << ": " << verdict.status();
    EXPECT_TRUE(verdict->conclusive) << c.name;
    EXPECT_FALSE(verdict->present()) << c.name;
    EXPECT_THAT(DiscoveryLabels(*verdict), ElementsAre(Pair("gpuop.io/gpu.present", "false")))
        << c.name;
  }
  fakes::TempDir dir;
  EXPECT_FALSE(Scan(fakes::EmptyNode(dir.path()))->present());
}

TEST(PciNodeTest, NvidiaDevicesThatAreNotGpusDoNotCount) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs(dir.path());
  sysfs.AddPciDevice(Device("0000:05:00.0", 0x10de, 0x22a3, 0x068000));  // NVSwitch
  sysfs.AddPciDevice(Device("0000:17:00.1", 0x10de, 0x22bc, 0x040300));  // HDMI audio
  EXPECT_THAT(DiscoveryLabels(*Scan(sysfs)), ElementsAre(Pair("gpuop.io/gpu.present", "false")));
}

TEST(PciNodeTest, AnUnreadableDeviceMakesNoGpusInconclusive) {
  // A device whose vendor file holds garbage might have been a GPU: no verdict, no labels.
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs(dir.path());
  AddChipset(sysfs);
  sysfs.AddPciDevice(Device("0000:17:00.0", 0x10de, 0x2330, 0x030200));
  sysfs.WriteFile(sysfs.DevicePath("0000:17:00.0") + "/vendor",
                  "\x7f"
                  "ELF\n");
  absl::StatusOr<PciNodeVerdict> verdict = Scan(sysfs);
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_FALSE(verdict->conclusive);
  EXPECT_THAT(verdict->problems, SizeIs(1));
  EXPECT_THAT(DiscoveryLabels(*verdict), IsEmpty());

  // With a GPU found, the broken device does not matter.
  sysfs.AddPciDevice(Device("0000:2a:00.0", 0x10de, 0x2330, 0x030200));
  verdict = Scan(sysfs);
  ASSERT_TRUE(verdict.ok());
  EXPECT_TRUE(verdict->conclusive);
  EXPECT_EQ(DiscoveryLabels(*verdict).at("gpuop.io/gpu.present"), "true");
}

TEST(PciNodeTest, HostileFileContentsNeverThrow) {
  const char* const contents[] = {
      "",       "\n",           "0x",     "0x10de0000000000000000000", "-1",           "10de",
      "0X10DE", "0x10de\n\n\n", "\0\0\0", "0x030200 trailing",         "\xff\xfe\xfd", "0x030200",
      "0x10de"};
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs(dir.path());
  sysfs.AddPciDevice(Device("0000:17:00.0", 0x10de, 0x2330, 0x030200));
  const std::string device = sysfs.DevicePath("0000:17:00.0");
  for (const char* vendor : contents) {
    for (const char* klass : contents) {
      sysfs.WriteFile(device + "/vendor", vendor);
      sysfs.WriteFile(device + "/class", klass);
      absl::StatusOr<PciNodeVerdict> verdict = Scan(sysfs);
      ASSERT_TRUE(verdict.ok()) << verdict.status();
      if (std::string(vendor) == "0x10de" && std::string(klass) == "0x030200") {
        EXPECT_TRUE(verdict->present());
      }
      // Whatever it read, a verdict of "no GPUs" is only given when every file parsed.
      if (!verdict->present() && verdict->conclusive) {
        EXPECT_THAT(verdict->problems, IsEmpty()) << "vendor '" << vendor << "' class '" << klass;
      }
    }
  }
}

TEST(PciNodeTest, ANodeWithoutAPciBusHasNoPciGpusButAMissingSysfsIsAnError) {
  fakes::TempDir dir;
  std::filesystem::create_directories(dir.path() / "bus/platform");
  absl::StatusOr<PciNodeVerdict> verdict = ScanPciNode(dir.string());
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_TRUE(verdict->conclusive);
  EXPECT_FALSE(verdict->present());

  fakes::TempDir empty;
  EXPECT_EQ(ScanPciNode(empty.string()).status().code(), absl::StatusCode::kNotFound)
      << "an empty --sysfs-root is a missing mount, not a CPU node";
  EXPECT_EQ(ScanPciNode((empty.path() / "nonexistent").string()).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpuop::agent

namespace gpuop::agent {
namespace {

TEST(OsReleaseTest, IdAndVersionIdBecomeLabels) {
  fakes::TempDir dir;
  const std::string path = (dir.path() / "os-release").string();
  std::ofstream(path)
      << "PRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"22.04\"\n"
         "ID=ubuntu\nID_LIKE=debian\n";
  EXPECT_EQ(OsReleaseLabels(path),
            (std::map<std::string, std::string>{{"gpuop.io/os-release.ID", "ubuntu"},
                                                {"gpuop.io/os-release.VERSION_ID", "22.04"}}));
  std::ofstream(path) << "ID='rhel'\nVERSION_ID=\"9.4\"\n";
  EXPECT_EQ(OsReleaseLabels(path).at("gpuop.io/os-release.ID"), "rhel");
  std::ofstream(path) << "ID=\"not a label value\"\nVERSION_ID=\n";
  EXPECT_TRUE(OsReleaseLabels(path).empty());
  EXPECT_TRUE(OsReleaseLabels((dir.path() / "missing").string()).empty());
}

}  // namespace
}  // namespace gpuop::agent
