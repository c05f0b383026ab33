#include "agent/cdi/host_files.h"

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/cdi/fake_driver_root.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(CdiHostFilesTest, JoinPath) {
  EXPECT_EQ(JoinPath("/", "usr/lib"), "/usr/lib");
  EXPECT_EQ(JoinPath("/", "/usr/lib"), "/usr/lib");
  EXPECT_EQ(JoinPath("/run/nvidia/driver", "usr/lib"), "/run/nvidia/driver/usr/lib");
  EXPECT_EQ(JoinPath("/run/nvidia/driver/", "/usr/lib"), "/run/nvidia/driver/usr/lib");
  EXPECT_EQ(JoinPath("/dev", ""), "/dev");
  EXPECT_EQ(JoinPath("/", ""), "/");
}

TEST(CdiHostFilesTest, ResolveInRootKeepsLinksInsideTheRoot) {
  fakes::TempDir dir;
  const fs::path root = dir.path() / "root";
  testing::WriteFile(root / "usr/lib64/libx.so.1.0");
  testing::Symlink("/usr/lib64", root / "lib64");              // absolute: inside the root
  testing::Symlink("../../../../usr/lib64", root / "a/b/up");  // ".." clamps at the root
  testing::Symlink("libx.so.1.0", root / "usr/lib64/libx.so.1");
  testing::Symlink("loop2", root / "loop1");
  testing::Symlink("loop1", root / "loop2");

  auto resolve = [&](const char* path) { return ResolveInRoot(root, path); };
  EXPECT_EQ(**resolve("lib64/libx.so.1"), fs::path("usr/lib64/libx.so.1.0"));
  EXPECT_EQ(**resolve("/lib64/libx.so.1"), fs::path("usr/lib64/libx.so.1.0"));
  EXPECT_EQ(**resolve("a/b/up/libx.so.1.0"), fs::path("usr/lib64/libx.so.1.0"));
  EXPECT_EQ(**resolve("usr/./lib64/../lib64"), fs::path("usr/lib64"));
  EXPECT_FALSE(resolve("usr/lib64/missing")->has_value());
  EXPECT_FALSE(resolve("loop1")->has_value());
}

TEST(CdiHostFilesTest, StatDeviceNodeReadsDevicesOnly) {
  fakes::TempDir dir;
  absl::StatusOr<std::optional<DeviceNumbers>> null = StatDeviceNode("/dev/null");
  ASSERT_TRUE(null.ok()) << null.status();
  ASSERT_TRUE(null->has_value());
  EXPECT_EQ(**null, (DeviceNumbers{.type = "c", .major = 1, .minor = 3}));

  testing::WriteFile(dir.path() / "file");
  absl::StatusOr<std::optional<DeviceNumbers>> file = StatDeviceNode(dir.path() / "file");
  ASSERT_TRUE(file.ok());
  EXPECT_FALSE(file->has_value());

  const absl::Status missing = StatDeviceNode(dir.path() / "missing").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr((dir.path() / "missing").string()));
}

TEST(CdiHostFilesTest, NodeSetsHostPathOnlyWhenItDiffers) {
  fakes::TempDir dir;
  testing::FakeDevices devices(dir.path());
  devices.AddChar("/dev/nvidia0", 195, 0);
  devices.AddChar("/run/nvidia/driver/dev/nvidia0", 195, 0);
  testing::WriteFile(dir.path() / "dev/plain");
  HostFiles files = devices.files();

  // By default nodes are named by path only: the runtime stats them.
  EXPECT_FALSE(files.record_device_numbers);
  EXPECT_EQ(*files.Node("/dev/nvidia0", "/dev/nvidia0"), (DeviceNode{.path = "/dev/nvidia0"}));

  files.record_device_numbers = true;
  absl::StatusOr<DeviceNode> same = files.Node("/dev/nvidia0", "/dev/nvidia0");
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(*same, (DeviceNode{.path = "/dev/nvidia0", .type = "c", .major = 195, .minor = 0}));

  absl::StatusOr<DeviceNode> other = files.Node("/dev/nvidia0", "/run/nvidia/driver/dev/nvidia0");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->host_path, "/run/nvidia/driver/dev/nvidia0");

  absl::StatusOr<DeviceNode> plain = files.Node("/dev/plain", "/dev/plain");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, (DeviceNode{.path = "/dev/plain"}));  // not a device: the runtime stats it

  const absl::Status missing = files.Node("/dev/nvidia9", "/dev/nvidia9").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.message(), "device node /dev/nvidia9 does not exist");
}

}  // namespace
}  // namespace gpuop::agent::cdi
