#include "agent/cdi/management.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/cdi/validate.h"

namespace gpuop::agent::cdi {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

DeviceNode Node(const std::string& path, const std::string& host_path = "") {
  return {.path = path, .host_path = host_path};
}

// What the NVIDIA generator writes for a node with one whole GPU and one MIG GPU (nvidia-ctk's
// layout: control nodes spec-wide, one node per GPU, the parent's node and two capabilities per
// MIG device, and "all").
Spec NvidiaSpec() {
  const std::string root = "/run/nvidia/driver/dev";
  Spec spec{.cdi_version = "0.5.0", .kind = "nvidia.gpuop.io/gpu"};
  spec.container_edits.device_nodes = {Node("/dev/nvidiactl", root + "/nvidiactl"),
                                       Node("/dev/nvidia-uvm", root + "/nvidia-uvm")};
  spec.container_edits.env = {"NVIDIA_VISIBLE_DEVICES=void"};
  spec.container_edits.mounts = {{.host_path = "/lib/libnvidia-ml.so.1",
                                  .container_path = "/lib/libnvidia-ml.so.1",
                                  .options = {"ro"}}};
  spec.devices.push_back(
      {.name = "0",
       .container_edits = {.device_nodes = {Node("/dev/nvidia0", root + "/nvidia0")}}});
  spec.devices.push_back(
      {.name = "1",
       .container_edits = {.device_nodes = {Node("/dev/nvidia1", root + "/nvidia1")}}});
  spec.devices.push_back(
      {.name = "1:0",
       .container_edits = {.device_nodes = {Node("/dev/nvidia1", root + "/nvidia1"),
                                            Node("/dev/nvidia-caps/nvidia-cap21"),
                                            Node("/dev/nvidia-caps/nvidia-cap22")}}});
  return spec;
}

std::vector<std::string> Paths(const std::vector<DeviceNode>& nodes) {
  std::vector<std::string> paths;
  for (const DeviceNode& node : nodes) paths.push_back(node.path);
  return paths;
}

TEST(ManagementSpecTest, AllHoldsEveryControlAndGpuNodeButNoCapabilityOrLibrary) {
  absl::StatusOr<Spec> spec = ManagementSpec({NvidiaSpec()}, std::nullopt);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->kind, kManagementCdiKind);
  EXPECT_TRUE(ValidateSpec(*spec).ok());
  ASSERT_EQ(spec->devices.size(), 2u);
  const Device& all = spec->devices[0];
  EXPECT_EQ(all.name, "all");
  EXPECT_THAT(Paths(all.container_edits.device_nodes),
              ElementsAre("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidia1"));
  EXPECT_EQ(all.container_edits.device_nodes[2].host_path, "/run/nvidia/driver/dev/nvidia0");
  EXPECT_TRUE(all.container_edits.mounts.empty());
  EXPECT_TRUE(all.container_edits.env.empty());
  EXPECT_TRUE(spec->container_edits.empty());
}

TEST(ManagementSpecTest, TheMonitorDeviceCarriesTheCapabilityOrSaysItIsUnavailable) {
  absl::StatusOr<Spec> with =
      ManagementSpec({NvidiaSpec()}, MigMonitorNode("/run/nvidia/driver/dev", 2));
  ASSERT_TRUE(with.ok()) << with.status();
  const Device& monitor = with->devices[1];
  EXPECT_EQ(monitor.name, "mig-monitor");
  ASSERT_EQ(monitor.container_edits.device_nodes.size(), 1u);
  EXPECT_EQ(monitor.container_edits.device_nodes[0].path, "/dev/nvidia-caps/nvidia-cap2");
  EXPECT_EQ(monitor.container_edits.device_nodes[0].host_path,
            "/run/nvidia/driver/dev/nvidia-caps/nvidia-cap2");
  EXPECT_EQ(MigMonitorNode("/dev", 2).host_path, "");

  absl::StatusOr<Spec> without = ManagementSpec({NvidiaSpec()}, std::nullopt);
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_TRUE(without->devices[1].container_edits.device_nodes.empty());
  EXPECT_THAT(without->devices[1].container_edits.env,
              ElementsAre("GPUOP_MIG_MONITOR=unavailable"));
}

TEST(ManagementSpecTest, VendorSpecsWithoutNodesAreRefused) {
  Spec empty{.kind = "nvidia.gpuop.io/gpu"};
  empty.devices.push_back({.name = "0", .container_edits = {.env = {"A=1"}}});
  absl::StatusOr<Spec> spec = ManagementSpec({empty}, std::nullopt);
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(), HasSubstr("nothing to manage"));
}

class MigMonitorMinorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    proc_ = fs::path(::testing::TempDir()) /
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(proc_);
  }
  void Write(const std::string& relative, const std::string& content) {
    fs::create_directories((proc_ / relative).parent_path());
    std::ofstream(proc_ / relative) << content;
  }
  fs::path proc_;
};

TEST_F(MigMonitorMinorTest, ReadsTheCapabilityFileFirst) {
  Write("driver/nvidia/capabilities/mig/monitor",
        "DeviceFileMinor: 2\nDeviceFileMode: 292\nDeviceFileModify: 1\n");
  Write("driver/nvidia-caps/mig-minors", "config 1\nmonitor 7\n");
  absl::StatusOr<unsigned int> minor = MigMonitorMinor(proc_);
  ASSERT_TRUE(minor.ok()) << minor.status();
  EXPECT_EQ(*minor, 2u);
}

TEST_F(MigMonitorMinorTest, FallsBackToTheMinorsTable) {
  Write("driver/nvidia-caps/mig-minors", "config 1\nmonitor 2\ngpu0/gi1/access 12\n");
  absl::StatusOr<unsigned int> minor = MigMonitorMinor(proc_);
  ASSERT_TRUE(minor.ok()) << minor.status();
  EXPECT_EQ(*minor, 2u);
}

TEST_F(MigMonitorMinorTest, NamesBothFilesWhenNeitherHasIt) {
  absl::StatusOr<unsigned int> none = MigMonitorMinor(proc_);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr("capabilities/mig/monitor"));
  EXPECT_THAT(none.status().message(), HasSubstr("mig-minors does not exist"));

  Write("driver/nvidia-caps/mig-minors", "config 1\n");
  EXPECT_THAT(MigMonitorMinor(proc_).status().message(), HasSubstr("does not list it"));

  Write("driver/nvidia/capabilities/mig/monitor", "DeviceFileMode: 292\n");
  EXPECT_EQ(MigMonitorMinor(proc_).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpuop::agent::cdi
