#include "common/version.h"

#include <gtest/gtest.h>

namespace gpuop::common {
namespace {

TEST(VersionTest, IsSemanticVersion) {
  EXPECT_TRUE(std::string(Version()).find_first_not_of("0123456789.") == std::string::npos)
      << Version();
  EXPECT_EQ(std::count(Version().begin(), Version().end(), '.'), 2) << Version();
}

TEST(VersionTest, VersionLineNamesProgramAndVersion) {
  const std::string line = VersionLine("gpuop-agent");
  EXPECT_EQ(line.rfind("gpuop-agent ", 0), 0u) << line;
  EXPECT_NE(line.find(std::string(Version())), std::string::npos) << line;
}

TEST(VersionTest, UserAgentNamesGpuopAndComponent) {
  EXPECT_EQ(UserAgent("operator"), std::string("gpuop-operator/") + std::string(Version()));
}

}  // namespace
}  // namespace gpuop::common
