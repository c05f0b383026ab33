#include "agent/cdi/nvidia_generator.h"

#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/cdi/fake_driver_root.h"
#include "agent/cdi/hook_install.h"
#include "agent/cdi/validate.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kHook[] = "/usr/bin/nvidia-cdi-hook";

std::vector<std::string> Names(const Spec& spec) {
  std::vector<std::string> names;
  for (const Device& device : spec.devices) names.push_back(device.name);
  return names;
}

const Device* Find(const Spec& spec, const std::string& name) {
  for (const Device& device : spec.devices) {
    if (device.name == name) return &device;
  }
  return nullptr;
}

// A host with the driver installed at "/" and nodes for GPUs with minors 0..gpus-1.
class CdiNvidiaGeneratorTest : public ::testing::Test {
 protected:
  void InstallHost(int gpus) {
    testing::InstallNvidiaDriver(root_.path(), "/");
    std::vector<unsigned int> minors;
    for (int i = 0; i < gpus; ++i) minors.push_back(static_cast<unsigned int>(i));
    testing::AddNvidiaDeviceNodes(devices_, "/dev", minors);
  }
  NvidiaCdiOptions Options(std::string hook = kHook) const {
    return NvidiaCdiOptions{.hook_path = std::move(hook), .files = devices_.files()};
  }

  fakes::TempDir root_;
  testing::FakeDevices devices_{root_.path()};
};

TEST_F(CdiNvidiaGeneratorTest, EightGpusOnAHostDriver) {
  InstallHost(8);
  absl::StatusOr<GeneratedSpec> out =
      NvidiaCdiGenerator(Options()).Generate(testing::NvidiaInventory(8));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->warnings, IsEmpty());
  EXPECT_EQ(out->spec.devices.size(), 17u);
  EXPECT_TRUE(ValidateSpec(out->spec).ok());
  EXPECT_THAT(testing::CdiDocumentProblems(SpecToJsonText(out->spec)), IsEmpty());
  testing::ExpectGolden(SpecToJsonText(out->spec), "nvidia_8gpu.json");
}

TEST_F(CdiNvidiaGeneratorTest, MigDevicesByIndexAndUuid) {
  InstallHost(2);
  testing::AddMigCaps(root_.path(), devices_, "/dev", /*gpu_minor=*/0, /*gi=*/1, /*ci=*/0, 12, 13);
  testing::AddMigCaps(root_.path(), devices_, "/dev", 0, 2, 0, 21, 22);
  absl::StatusOr<GeneratedSpec> out =
      NvidiaCdiGenerator(Options()).Generate(testing::MigInventory());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->warnings, IsEmpty());
  EXPECT_THAT(Names(out->spec), ElementsAre("0", "GPU-00000000-1111-2222-3333-444444444440", "0:0",
                                            "MIG-aaaaaaaa-0000-5000-8000-000000000001", "0:1",
                                            "MIG-aaaaaaaa-0000-5000-8000-000000000002", "1",
                                            "GPU-10000000-1111-2222-3333-444444444441", "all"));
  EXPECT_TRUE(ValidateSpec(out->spec).ok());
  EXPECT_THAT(testing::CdiDocumentProblems(SpecToJsonText(out->spec)), IsEmpty());
  testing::ExpectGolden(SpecToJsonText(out->spec), "nvidia_mig.json");
}

TEST_F(CdiNvidiaGeneratorTest, MigCapsFallBackToMigMinors) {
  InstallHost(2);
  devices_.AddChar("/dev/nvidia-caps/nvidia-cap12", 511, 12);
  devices_.AddChar("/dev/nvidia-caps/nvidia-cap13", 511, 13);
  testing::WriteFile(root_.path() / "proc/driver/nvidia-caps/mig-minors",
                     "config 1\nmonitor 2\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n");
  absl::StatusOr<GeneratedSpec> out =
      NvidiaCdiGenerator(Options()).Generate(testing::MigInventory());
  ASSERT_TRUE(out.ok()) << out.status();
  const Device* mig = Find(out->spec, "0:0");
  ASSERT_NE(mig, nullptr);
  std::vector<std::string> paths;
  for (const DeviceNode& node : mig->container_edits.device_nodes) paths.push_back(node.path);
  EXPECT_THAT(paths, ElementsAre("/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap12",
                                 "/dev/nvidia-caps/nvidia-cap13"));
  // gi2 is in neither place: that MIG device is left out, the rest stays.
  EXPECT_EQ(Find(out->spec, "0:1"), nullptr);
  EXPECT_EQ(Find(out->spec, "MIG-aaaaaaaa-0000-5000-8000-000000000002"), nullptr);
  ASSERT_EQ(out->warnings.size(), 1u);
  EXPECT_THAT(out->warnings[0],
              AllOf(HasSubstr("MIG device 0:1 (MIG-aaaaaaaa-0000-5000-8000-000000000002) left "
                              "out: MIG capability gpu0/gi2/access: "),
                    HasSubstr("capabilities/gpu0/mig/gi2/access does not exist and "),
                    HasSubstr("mig-minors does not list it")));
}

TEST_F(CdiNvidiaGeneratorTest, ContainerisedDriverRoot) {
  testing::InstallNvidiaDriver(root_.path(), "/run/nvidia/driver");
  testing::AddNvidiaDeviceNodes(devices_, "/run/nvidia/driver/dev", {0});
  NvidiaCdiOptions options = Options();
  options.driver.driver_root = "/run/nvidia/driver";
  options.dev_root = "/run/nvidia/driver/dev";
  absl::StatusOr<GeneratedSpec> out =
      NvidiaCdiGenerator(options).Generate(testing::NvidiaInventory(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->warnings, IsEmpty());
  const ContainerEdits& edits = out->spec.container_edits;
  ASSERT_FALSE(edits.mounts.empty());
  for (const Mount& mount : edits.mounts) {
    EXPECT_EQ(mount.host_path, "/run/nvidia/driver" + mount.container_path);
    EXPECT_FALSE(mount.container_path.starts_with("/run/nvidia/driver")) << mount.container_path;
  }
  for (const DeviceNode& node : out->spec.devices[0].container_edits.device_nodes) {
    EXPECT_EQ(node.host_path, "/run/nvidia/driver" + node.path);
  }
  EXPECT_EQ(out->spec.cdi_version, "0.5.0");
  testing::ExpectGolden(SpecToJsonText(out->spec), "nvidia_containerised.json");
}

// The node profile's simulated driver: a driver container's root with real ELF libraries and no
// links on disk. The SONAME links, libcuda.so, the IPC sockets and the hooks come out as
// nvidia-ctk writes them (testdata/README.md), with gpuop's kind and hook.
TEST_F(CdiNvidiaGeneratorTest, DriverContainerWithRealLibraries) {
  testing::InstallDriverContainer(root_.path(), "/run/nvidia/driver");
  testing::AddNvidiaDeviceNodes(devices_, "/dev", {0, 1});
  NvidiaCdiOptions options = Options(kHookHostPath);
  options.driver.driver_root = "/run/nvidia/driver";
  absl::StatusOr<GeneratedSpec> out =
      NvidiaCdiGenerator(options).Generate(testing::NvidiaInventory(2));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->warnings, IsEmpty());
  EXPECT_TRUE(ValidateSpec(out->spec).ok());
  EXPECT_THAT(testing::CdiDocumentProblems(SpecToJsonText(out->spec)), IsEmpty());
  testing::ExpectSpec(out->spec, "nvidia_driver_container.json");
}

TEST_F(CdiNvidiaGeneratorTest, TheCheckerCatchesWhatAConsumerRejects) {
  EXPECT_THAT(
      testing::CdiDocumentProblems(R"({"cdiVersion": "0.5", "kind": "gpu",
      "devices": [], "containerEdits": []})"),
      ElementsAre("cdiVersion missing or not a version", "kind \"gpu\" is not <vendor>/<class>",
                  "no devices", "containerEdits is not an object"));
  EXPECT_THAT(testing::CdiDocumentProblems(R"({"cdiVersion": "0.5.0", "kind": "a.io/gpu",
      "devices": [{"name": "-x", "containerEdits": {"mounts": [{"hostPath": "/a"}],
      "hooks": [{"hookName": "prestop", "path": "hook"}]}}]})"),
              ElementsAre("device name \"-x\" is not valid",
                          "device -x containerEdits: mount without hostPath or containerPath",
                          "device -x containerEdits: hook with an unknown hookName",
                          "device -x containerEdits: hook path not absolute"));
}

TEST_F(CdiNvidiaGeneratorTest, MissingOptionalPiecesAreLeftOut) {
  // Libraries only (no binaries, no firmware), nvidiactl and the GPU node only, no hook.
  const fs::path lib = root_.path() / "usr/lib64";
  testing::WriteFile(lib / "libcuda.so.570.86.15");
  testing::Symlink("libcuda.so.570.86.15", lib / "libcuda.so.1");
  devices_.AddChar("/dev/nvidiactl", 195, 255);
  devices_.AddChar("/dev/nvidia0", 195, 0);
  absl::StatusOr<GeneratedSpec> out =
      NvidiaCdiGenerator(Options(/*hook=*/"")).Generate(testing::NvidiaInventory(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->warnings,
              ElementsAre("control device node /dev/nvidia-uvm does not exist; CUDA needs it"));
  const ContainerEdits& edits = out->spec.container_edits;
  EXPECT_EQ(edits.env, std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=void"});
  ASSERT_EQ(edits.device_nodes.size(), 1u);
  EXPECT_EQ(edits.device_nodes[0].path, "/dev/nvidiactl");
  ASSERT_EQ(edits.mounts.size(), 1u);
  EXPECT_EQ(edits.mounts[0], (Mount{.host_path = "/usr/lib64/libcuda.so.570.86.15",
                                    .container_path = "/usr/lib64/libcuda.so.570.86.15",
                                    .options = {"ro", "nosuid", "nodev", "rbind", "rprivate"}}));
  EXPECT_THAT(edits.hooks, IsEmpty());
  EXPECT_TRUE(ValidateSpec(out->spec).ok());
}

TEST_F(CdiNvidiaGeneratorTest, GpusWithoutANodeAreLeftOutWithAWarning) {
  InstallHost(1);  // only /dev/nvidia0
  hw::Inventory inventory = testing::NvidiaInventory(3);
  inventory.gpus[2].minor_number.reset();
  absl::StatusOr<GeneratedSpec> out = NvidiaCdiGenerator(Options()).Generate(inventory);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Names(out->spec),
              ElementsAre("0", "GPU-00000000-1111-2222-3333-444444444440", "all"));
  EXPECT_THAT(out->warnings,
              ElementsAre("GPU 1 (GPU-10000000-1111-2222-3333-444444444441) left out: device node "
                          "/dev/nvidia1 does not exist",
                          "GPU 2 (GPU-20000000-1111-2222-3333-444444444442) left out: the "
                          "inventory has no minor number for it"));
}

TEST_F(CdiNvidiaGeneratorTest, NoDriverLibrariesIsAWarning) {
  testing::AddNvidiaDeviceNodes(devices_, "/dev", {0});
  absl::StatusOr<GeneratedSpec> out =
      NvidiaCdiGenerator(Options()).Generate(testing::NvidiaInventory(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->warnings, ElementsAre(HasSubstr("no driver libraries lib*.so.570.86.15 under / "
                                                   "in usr/lib/x86_64-linux-gnu, ")));
  EXPECT_THAT(out->spec.container_edits.mounts, IsEmpty());
  EXPECT_THAT(out->spec.container_edits.hooks, IsEmpty());
}

TEST_F(CdiNvidiaGeneratorTest, NoUsableDeviceIsFailedPrecondition) {
  const absl::Status status =
      NvidiaCdiGenerator(Options()).Generate(testing::NvidiaInventory(1)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("no device to describe among 1 GPU(s): GPU 0 "));
  EXPECT_EQ(NvidiaCdiGenerator(Options()).Generate({}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(CdiNvidiaGeneratorTest, RejectsUnusableOptionsAndInventories) {
  InstallHost(1);
  hw::Inventory amd = testing::NvidiaInventory(1);
  amd.gpus[0].vendor = hw::Vendor::kAmd;
  hw::Inventory no_version = testing::NvidiaInventory(1);
  no_version.driver_version.clear();
  NvidiaCdiOptions bad_class = Options();
  bad_class.device_class = "gpu/x";
  NvidiaCdiOptions relative_dev = Options();
  relative_dev.dev_root = "dev";
  struct Case {
    NvidiaCdiOptions options;
    hw::Inventory inventory;
    const char* want;
  };
  const Case cases[] = {
      {Options(), amd, "GPU 0 (GPU-00000000-1111-2222-3333-444444444440) is from vendor amd"},
      {Options(), no_version, "driver version is empty"},
      {bad_class, testing::NvidiaInventory(1), "CDI class \"gpu/x\" contains '/'"},
      {relative_dev, testing::NvidiaInventory(1), "device root \"dev\" is not an absolute path"},
      {Options("nvidia-cdi-hook"), testing::NvidiaInventory(1), "hook path \"nvidia-cdi-hook\""},
  };
  for (const Case& c : cases) {
    const absl::Status status = NvidiaCdiGenerator(c.options).Generate(c.inventory).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.want;
    EXPECT_THAT(status.message(), HasSubstr(c.want));
  }
}

TEST_F(CdiNvidiaGeneratorTest, OldStyleMigUuidsArePublishedByIndexOnly) {
  InstallHost(2);
  testing::AddMigCaps(root_.path(), devices_, "/dev", 0, 1, 0, 12, 13);
  hw::Inventory inventory = testing::MigInventory();
  inventory.gpus[0].mig_devices.resize(1);
  inventory.gpus[0].mig_devices[0].uuid = "MIG-GPU-00000000-1111-2222-3333-444444444440/1/0";
  absl::StatusOr<GeneratedSpec> out = NvidiaCdiGenerator(Options()).Generate(inventory);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Names(out->spec),
              ElementsAre("0", "GPU-00000000-1111-2222-3333-444444444440", "0:0", "1",
                          "GPU-10000000-1111-2222-3333-444444444441", "all"));
  EXPECT_THAT(out->warnings,
              ElementsAre("device 0:0 is published by index only: CDI device name "
                          "\"MIG-GPU-00000000-1111-2222-3333-444444444440/1/0\" contains '/'; "
                          "only letters, digits, '_', '-', '.' and ':' are allowed"));
}

TEST_F(CdiNvidiaGeneratorTest, DuplicateGpuIndexesAreInvalid) {
  InstallHost(2);
  hw::Inventory inventory = testing::NvidiaInventory(2);
  inventory.gpus[1].index = 0;
  const absl::Status status = NvidiaCdiGenerator(Options()).Generate(inventory).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("device \"0\" is defined twice"));
}

TEST_F(CdiNvidiaGeneratorTest, WithoutDeviceNumbersTheRuntimeStatsNodes) {
  InstallHost(1);
  NvidiaCdiOptions options = Options();
  options.files.record_device_numbers = false;
  options.all_device = false;
  absl::StatusOr<GeneratedSpec> out =
      NvidiaCdiGenerator(options).Generate(testing::NvidiaInventory(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Names(out->spec), ElementsAre("0", "GPU-00000000-1111-2222-3333-444444444440"));
  EXPECT_EQ(out->spec.devices[0].container_edits.device_nodes[0],
            (DeviceNode{.path = "/dev/nvidia0"}));
}

}  // namespace
}  // namespace gpuop::agent::cdi
