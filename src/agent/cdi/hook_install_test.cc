#include "agent/cdi/hook_install.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "agent/cdi/fake_driver_root.h"
#include "common/files.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi {
namespace {

namespace fs = std::filesystem;

TEST(InstallHookTest, CopiesOnceWithModeAndReplacesAChangedBinary) {
  fakes::TempDir dir;
  const fs::path source = dir.path() / "image/gpuop-cdi-hook";
  const fs::path installed = dir.path() / "host/var/lib/gpuop/bin/gpuop-cdi-hook";
  testing::WriteFile(source,
                     "\x7f"
                     "ELF v1");
  absl::StatusOr<bool> first = InstallHook(source, installed);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(*first);
  EXPECT_EQ(*common::ReadFile(installed),
            "\x7f"
            "ELF v1");
  EXPECT_EQ(fs::status(installed).permissions() & fs::perms::mask, fs::perms(0755));

  absl::StatusOr<bool> again = InstallHook(source, installed);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);

  fs::permissions(installed, fs::perms(0700));  // someone narrowed it: fixed
  EXPECT_TRUE(*InstallHook(source, installed));
  EXPECT_EQ(fs::status(installed).permissions() & fs::perms::mask, fs::perms(0755));

  testing::WriteFile(source,
                     "\x7f"
                     "ELF v2");  // a new image
  EXPECT_TRUE(*InstallHook(source, installed));
  EXPECT_EQ(*common::ReadFile(installed),
            "\x7f"
            "ELF v2");
  // Nothing but the hook in its directory: no temp files left.
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(installed.parent_path())) ++files;
  EXPECT_EQ(files, 1);
}

TEST(InstallHookTest, AMissingSourceIsNotFound) {
  fakes::TempDir dir;
  absl::StatusOr<bool> result = InstallHook(dir.path() / "none", dir.path() / "out");
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(dir.path() / "out"));
}

}  // namespace
}  // namespace gpuop::agent::cdi
