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
  LoadedDriverPaths Paths() const {
    return {.module_dir = (dir_.path() / "sys/module/nvidia").string(),
            .driver_root = (dir_.path() / "run/nvidia/driver").string()};
  }
  fakes::TempDir dir_;
};

TEST_F(LoadedDriverTest, NothingLoadedOnAFreshNode) {
  EXPECT_EQ(LoadedDriver(Paths()), std::nullopt) << "neither path exists";
  std::filesystem::create_directories(Paths().driver_root);
  EXPECT_EQ(LoadedDriver(Paths()), std::nullopt) << "an empty driver root is an unloaded one";
}

TEST_F(LoadedDriverTest, TheKernelModuleCounts) {
  std::filesystem::create_directories(Paths().module_dir);
  EXPECT_THAT(LoadedDriver(Paths()), Optional(HasSubstr("kernel module is loaded")));
}

TEST_F(LoadedDriverTest, APublishedDriverRootCounts) {
  std::filesystem::create_directories(Paths().driver_root + "/usr/bin");
  EXPECT_THAT(LoadedDriver(Paths()), Optional(HasSubstr("driver root is published")));
}

TEST_F(LoadedDriverTest, ADriverRootThatIsNotADirectoryCountsAsLoaded) {
  std::filesystem::create_directories(dir_.path() / "run/nvidia");
  std::ofstream(Paths().driver_root) << "x";
  EXPECT_THAT(LoadedDriver(Paths()), Optional(HasSubstr("cannot be read")));
}

}  // namespace
}  // namespace gpuop::agent
