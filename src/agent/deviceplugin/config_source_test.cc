#include "agent/deviceplugin/config_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/files.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent {
namespace {

using ::testing::HasSubstr;

TEST(ConfigSourceTest, SelectsByNameAndFallsBackToDefault) {
  fakes::TempDir dir;
  ASSERT_TRUE(
      common::WriteFileAtomically(dir.path() / "default", "flags:\n  migStrategy: mixed\n").ok());
  ASSERT_TRUE(common::WriteFileAtomically(
                  dir.path() / "shared",
                  "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                  "      replicas: 4\n")
                  .ok());
  ConfigSource source(dir.path(), "default");
  auto config = source.Load();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mig_strategy, MigStrategy::kMixed);
  source.SetSelected("shared");
  config = source.Load();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->Shared());
  source.SetSelected("");
  EXPECT_EQ(source.selected(), "default");
}

TEST(ConfigSourceTest, MissingSelectionNamesTheChoices) {
  fakes::TempDir dir;
  ASSERT_TRUE(common::WriteFileAtomically(dir.path() / "a100", "").ok());
  ASSERT_TRUE(common::WriteFileAtomically(dir.path() / "h100", "").ok());
  ConfigSource source(dir.path(), "default");
  EXPECT_TRUE(source.Load().ok());  // No default file: the defaults.
  source.SetSelected("l40s");
  auto config = source.Load();
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("available: a100, h100"));
}

TEST(ConfigSourceTest, NoDirectoryMeansDefaults) {
  ConfigSource source("", "default");
  auto config = source.Load();
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(config->Shared());
}

}  // namespace
}  // namespace gpuop::agent
