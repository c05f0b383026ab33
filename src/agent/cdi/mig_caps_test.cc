#include "agent/cdi/mig_caps.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/cdi/fake_driver_root.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(CdiMigCapsTest, ParsesAccessFiles) {
  // The driver's format: "Key: value" lines.
  EXPECT_EQ(
      *ParseDeviceFileMinor("DeviceFileMinor: 21\nDeviceFileMode: 292\nDeviceFileModify: 1\n", "f"),
      21u);
  EXPECT_EQ(*ParseDeviceFileMinor("DeviceFileMode: 292\nDeviceFileMinor:  7  \n", "f"), 7u);
  const absl::Status missing = ParseDeviceFileMinor("DeviceFileMode: 292\n", "/p/access").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.message(), "/p/access: no DeviceFileMinor line");
  EXPECT_THAT(ParseDeviceFileMinor("DeviceFileMinor: x1\n", "/p/access").status().message(),
              HasSubstr("/p/access: DeviceFileMinor \"x1\" is not a number"));
}

TEST(CdiMigCapsTest, ParsesMigMinors) {
  EXPECT_THAT(ParseMigMinors("config 1\nmonitor 2\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n"
                             "garbage\nbad line x\n\n"),
              ElementsAre(Pair("config", 1u), Pair("gpu0/gi1/access", 12u),
                          Pair("gpu0/gi1/ci0/access", 13u), Pair("monitor", 2u)));
}

TEST(CdiMigCapsTest, ResolverPrefersAccessFilesAndFallsBackToMigMinors) {
  fakes::TempDir dir;
  const auto caps = dir.path() / "proc/driver/nvidia/capabilities/gpu3/mig";
  testing::WriteFile(caps / "gi1/access", "DeviceFileMinor: 30\nDeviceFileMode: 292\n");
  testing::WriteFile(caps / "gi1/ci0/access", "DeviceFileMinor: 31\n");
  testing::WriteFile(dir.path() / "proc/driver/nvidia-caps/mig-minors",
                     "gpu3/gi1/access 99\ngpu3/gi2/access 39\ngpu3/gi2/ci1/access 41\n");
  MigCapResolver resolver(dir.path() / "proc");
  EXPECT_EQ(*resolver.GpuInstance(3, 1), 30u);
  EXPECT_EQ(*resolver.ComputeInstance(3, 1, 0), 31u);
  EXPECT_EQ(*resolver.GpuInstance(3, 2), 39u);
  EXPECT_EQ(*resolver.ComputeInstance(3, 2, 1), 41u);

  const absl::Status missing = resolver.ComputeInstance(3, 2, 0).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(),
              HasSubstr("MIG capability gpu3/gi2/ci0/access: " +
                        (caps / "gi2/ci0/access").string() + " does not exist and "));
  EXPECT_THAT(missing.message(), HasSubstr("mig-minors does not list it"));
}

TEST(CdiMigCapsTest, ResolverSaysWhenNeitherSourceExists) {
  fakes::TempDir dir;
  MigCapResolver resolver(dir.path() / "proc");
  const absl::Status missing = resolver.GpuInstance(0, 1).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr("proc/driver/nvidia-caps/mig-minors does not exist"));
}

}  // namespace
}  // namespace gpuop::agent::cdi
