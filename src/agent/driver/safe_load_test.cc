#include "agent/driver/safe_load.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

class LoadedDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A mount table as /proc/self/mountinfo has it, without a mount on the driver root.
    std::ofstream(Paths().mountinfo)
        << "22 1 0:21 / / rw,relatime shared:1 - overlay overlay rw\n"
           "30 22 0:25 /run/nvidia /run/nvidia ro,relatime master:9 - tmpfs tmpfs rw\n";
  }
  LoadedDriverPaths Paths() const {
    return {.module_dir = (dir_.path() / "sys/module/nvidia").string(),
            .driver_root = (dir_.path() / "run/nvidia/driver").string(),
            .mountinfo = (dir_.path() / "mountinfo").string()};
  }
  fakes::TempDir dir_;
};

TEST_F(LoadedDriverTest, NothingLoadedOnAFreshNode) {
  EXPECT_EQ(LoadedDriver(Paths()), std::nullopt) << "neither path exists";
  // What the kubelet creates for the driver pod's firmware volume before any driver ran.
  std::filesystem::create_directories(Paths().driver_root + "/lib/firmware");
  EXPECT_EQ(LoadedDriver(Paths()), std::nullopt) << "the pod's own volume is no driver";
}

TEST_F(LoadedDriverTest, TheKernelModuleCounts) {
  std::filesystem::create_directories(Paths().module_dir);
  EXPECT_THAT(LoadedDriver(Paths()), Optional(HasSubstr("kernel module is loaded")));
}

TEST_F(LoadedDriverTest, AMountOnTheDriverRootCounts) {
  // NVIDIA's container rbinds its root there; a space in the path is written \040.
  LoadedDriverPaths paths = Paths();
  paths.driver_root = (dir_.path() / "run/nvidia/the driver").string();
  std::ofstream(paths.mountinfo, std::ios::app)
      << "41 30 0:40 / " << (dir_.path() / "run/nvidia/the\\040driver").string()
      << " rw,relatime shared:12 - overlay overlay rw\n";
  EXPECT_THAT(LoadedDriver(paths), Optional(HasSubstr("driver root is mounted")));
}

TEST_F(LoadedDriverTest, ADriversFilesLeftInTheRootCount) {
  std::filesystem::create_directories(Paths().driver_root + "/usr/bin");
  std::ofstream(Paths().driver_root + "/usr/bin/nvidia-smi") << "x";
  EXPECT_THAT(LoadedDriver(Paths()), Optional(HasSubstr("driver's files are published")));
}

TEST_F(LoadedDriverTest, AnUnreadableMountTableCountsAsLoaded) {
  std::filesystem::remove(Paths().mountinfo);
  EXPECT_THAT(LoadedDriver(Paths()), Optional(HasSubstr("cannot be read")));
}

}  // namespace
}  // namespace gpuop::agent
