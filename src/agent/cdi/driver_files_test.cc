#include "agent/cdi/driver_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/cdi/fake_driver_root.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kVersion[] = "570.86.15";

TEST(CdiDriverFilesTest, FindsTheDriversFilesOnAHostInstall) {
  fakes::TempDir root;
  testing::InstallNvidiaDriver(root.path(), "/");
  absl::StatusOr<DriverFiles> found =
      FindDriverFiles({.sysroot = root.string()}, {.driver_version = kVersion});
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->libraries.size(), 6u);  // not the 535 leftover, not libc
  EXPECT_EQ(found->libraries[0], (DriverFile{"/usr/lib/x86_64-linux-gnu/libcuda.so.570.86.15",
                                             "/usr/lib/x86_64-linux-gnu/libcuda.so.570.86.15"}));
  EXPECT_THAT(found->library_dirs, ElementsAre("/usr/lib/x86_64-linux-gnu"));
  EXPECT_EQ(found->links.size(), 7u);
  EXPECT_EQ(found->binaries.size(), 3u);
  ASSERT_TRUE(found->firmware.has_value());
  EXPECT_EQ(found->firmware->container_path, "/lib/firmware/nvidia/570.86.15");
}

TEST(CdiDriverFilesTest, AbsoluteLinksInAContainerisedRootStayInIt) {
  fakes::TempDir root;
  const auto driver = root.path() / "run/nvidia/driver";
  testing::WriteFile(driver / "usr/lib64/libcuda.so.570.86.15");
  testing::Symlink("/usr/lib64/libcuda.so.570.86.15", driver / "usr/lib64/libcuda.so.1");
  testing::Symlink("/usr/lib64", driver / "lib64");  // the same directory again
  testing::WriteFile(driver / "opt/nvidia/bin/nvidia-smi");
  testing::Symlink("/opt/nvidia/bin/nvidia-smi", driver / "usr/bin/nvidia-smi");
  // What the absolute links would reach if they were followed on the host.
  testing::WriteFile(root.path() / "usr/lib64/libcuda.so.570.86.15");
  testing::WriteFile(root.path() / "opt/nvidia/bin/nvidia-smi");

  absl::StatusOr<DriverFiles> found =
      FindDriverFiles({.sysroot = root.string()}, {.driver_root = "/run/nvidia/driver",
                                                   .driver_version = kVersion,
                                                   .library_dirs = {"usr/lib64", "lib64"}});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_THAT(found->libraries,
              ElementsAre(DriverFile{"/run/nvidia/driver/usr/lib64/libcuda.so.570.86.15",
                                     "/usr/lib64/libcuda.so.570.86.15"}));
  EXPECT_THAT(found->library_dirs, ElementsAre("/usr/lib64"));
  // The link on disk as written, and libcuda.so, which nvidia-ctk always adds.
  EXPECT_THAT(found->links,
              ElementsAre("libcuda.so.1::/usr/lib64/libcuda.so",
                          "/usr/lib64/libcuda.so.570.86.15::/usr/lib64/libcuda.so.1"));
  EXPECT_THAT(found->binaries,
              ElementsAre(DriverFile{"/run/nvidia/driver/opt/nvidia/bin/nvidia-smi",
                                     "/usr/bin/nvidia-smi"}));
  EXPECT_FALSE(found->firmware.has_value());
}

// Real ELF libraries without links on disk: the links come from their DT_SONAME.
TEST(CdiDriverFilesTest, SonameLinksAndIpcEndpointsOfADriverContainer) {
  fakes::TempDir root;
  testing::InstallDriverContainer(root.path(), "/run/nvidia/driver");
  const auto lib = root.path() / "run/nvidia/driver/usr/lib/x86_64-linux-gnu";
  testing::WriteFile(lib / "libnvidia-cfg.so.570.86.15", "not ELF");  // mounted, but no link
  absl::StatusOr<DriverFiles> found =
      FindDriverFiles({.sysroot = root.string()},
                      {.driver_root = "/run/nvidia/driver", .driver_version = kVersion});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->libraries.size(), 3u);
  EXPECT_THAT(
      found->links,
      ElementsAre("libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so",
                  "libcuda.so.570.86.15::/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                  "libnvidia-ml.so.570.86.15::/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"));
  EXPECT_THAT(found->ipc,
              ElementsAre(DriverFile{"/run/nvidia/driver/run/nvidia-persistenced/socket",
                                     "/run/nvidia-persistenced/socket"},
                          DriverFile{"/run/nvidia/driver/run/nvidia-fabricmanager/socket",
                                     "/run/nvidia-fabricmanager/socket"},
                          DriverFile{"/run/nvidia/driver/tmp/nvidia-mps", "/tmp/nvidia-mps"}));
}

TEST(CdiDriverFilesTest, NothingInstalledIsEmptyNotAnError) {
  fakes::TempDir root;
  absl::StatusOr<DriverFiles> found =
      FindDriverFiles({.sysroot = root.string()}, {.driver_version = kVersion});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_THAT(found->libraries, IsEmpty());
  EXPECT_THAT(found->library_dirs, IsEmpty());
  EXPECT_THAT(found->links, IsEmpty());
  EXPECT_THAT(found->binaries, IsEmpty());
  EXPECT_THAT(found->ipc, IsEmpty());
}

TEST(CdiDriverFilesTest, RejectsARelativeRootAndAnEmptyVersion) {
  EXPECT_THAT(
      FindDriverFiles({}, {.driver_root = "run", .driver_version = kVersion}).status().message(),
      HasSubstr("driver root \"run\" is not an absolute path"));
  EXPECT_EQ(FindDriverFiles({}, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpuop::agent::cdi
