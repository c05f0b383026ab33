#include "test/fakes/driver/proc_entries.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/fakes/nvml/mig_cap_minors.h"

namespace gpuop::fakedriver {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The numbers of the real mig-minors file: config and monitor first, then per GPU minor 15 GPU
// instances of 8 compute instances each.
TEST(ProcEntriesTest, MinorsFollowTheDriversNumbering) {
  EXPECT_EQ(fakenvml::MigCapabilityMinor(0, 0), 3u);
  EXPECT_EQ(fakenvml::MigCapabilityMinor(0, 0, 0), 4u);
  EXPECT_EQ(fakenvml::MigCapabilityMinor(0, 1), 12u);
  EXPECT_EQ(fakenvml::MigCapabilityMinor(0, 1, 0), 13u);
  EXPECT_EQ(fakenvml::MigCapabilityMinor(1, 0), 138u);
  const std::string minors = MigMinors({0, 1});
  EXPECT_EQ(minors.rfind("config 1\nmonitor 2\ngpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\n", 0), 0u);
  EXPECT_THAT(minors, HasSubstr("gpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n"));
  EXPECT_THAT(minors, HasSubstr("gpu1/gi14/ci7/access 272\n"));
  EXPECT_EQ(std::count(minors.begin(), minors.end(), '\n'), 2 + 2 * 135);
}

TEST(ProcEntriesTest, WritesTheFilesAndRemovesThemAgain) {
  const fs::path dir = fs::path(::testing::TempDir()) / "proc-driver";
  fs::remove_all(dir);
  ASSERT_TRUE(WriteProcEntries(dir.string(), {3}).ok());
  EXPECT_THAT(Read(dir / "nvidia-caps/mig-minors"), HasSubstr("gpu3/gi0/access 408\n"));
  EXPECT_EQ(Read(dir / "nvidia/capabilities/mig/monitor"),
            "DeviceFileMinor: 2\nDeviceFileMode: 292\nDeviceFileModify: 1\n");
  EXPECT_EQ(Read(dir / "nvidia/capabilities/mig/config"),
            "DeviceFileMinor: 1\nDeviceFileMode: 256\nDeviceFileModify: 1\n");
  ASSERT_TRUE(RemoveProcEntries(dir.string()).ok());
  EXPECT_TRUE(fs::is_empty(dir));
  EXPECT_TRUE(RemoveProcEntries(dir.string()).ok()) << "nothing left to remove is fine";
}

}  // namespace
}  // namespace gpuop::fakedriver
