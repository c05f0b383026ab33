#include "agent/mig/layout_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/files.h"

namespace gpuop::agent::mig {
namespace {

TEST(LayoutFileTest, GenerationGrowsWithEveryWrite) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gpuop-layout-" + std::to_string(getpid()));
  const std::filesystem::path path = dir / "sub" / "mig-layout";
  EXPECT_EQ(ReadLayoutFile(path).generation, 0);
  auto first = WriteLayoutFile(path, "all-1g.5gb");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->generation, 1);
  auto second = WriteLayoutFile(path, "all-1g.5gb");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->generation, 2);
  EXPECT_EQ(*common::ReadFile(path), "generation: 2\nlayout: all-1g.5gb\n");
  const LayoutNotice read = ReadLayoutFile(path);
  EXPECT_EQ(read.generation, 2);
  EXPECT_EQ(read.layout, "all-1g.5gb");
  std::filesystem::remove_all(dir);
}

TEST(LayoutFileTest, UnwritablePathIsAnErrorNamingIt) {
  auto written = WriteLayoutFile("/proc/gpuop-no/mig-layout", "x");
  ASSERT_FALSE(written.ok());
  EXPECT_NE(std::string(written.status().message()).find("/proc/gpuop-no/mig-layout"),
            std::string::npos);
}

}  // namespace
}  // namespace gpuop::agent::mig
