#include "hw/mig_profile.h"

#include <gtest/gtest.h>

namespace gpuop::hw {
namespace {

TEST(MigProfileTest, SplitsTheComputeSlicesFromTheGpuInstanceProfile) {
  const MigProfileName split = ParseMigProfileName("2c.4g.20gb");
  EXPECT_EQ(split.compute_slices, 2u);
  EXPECT_EQ(split.gpu_instance, "4g.20gb");
  const MigProfileName plain = ParseMigProfileName("3g.20gb");
  EXPECT_EQ(plain.compute_slices, std::nullopt);
  EXPECT_EQ(plain.gpu_instance, "3g.20gb");
  const MigProfileName media = ParseMigProfileName("1g.10gb+me");
  EXPECT_EQ(media.compute_slices, std::nullopt);
  EXPECT_EQ(media.gpu_instance, "1g.10gb+me");
  // Not a count of slices: left whole, for the planner to name as not offered.
  EXPECT_EQ(ParseMigProfileName("c.4g.20gb").gpu_instance, "c.4g.20gb");
  EXPECT_EQ(ParseMigProfileName("0c.4g.20gb").compute_slices, std::nullopt);
}

TEST(MigProfileTest, ADeviceSmallerThanItsGpuInstanceIsNamedWithItsComputeSlices) {
  MigDevice split{.profile = "4g.20gb"};
  split.has_attributes = true;
  split.gpu_instance_slices = 4;
  split.compute_instance_slices = 2;
  EXPECT_EQ(MigDeviceProfile(split), "2c.4g.20gb");
  MigDevice whole = split;
  whole.compute_instance_slices = 4;
  EXPECT_EQ(MigDeviceProfile(whole), "4g.20gb");
  MigDevice unknown{.profile = "4g.20gb"};  // no attributes: the GPU instance's name
  EXPECT_EQ(MigDeviceProfile(unknown), "4g.20gb");
}

}  // namespace
}  // namespace gpuop::hw
