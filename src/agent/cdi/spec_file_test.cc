#include "agent/cdi/spec_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "agent/cdi/fake_driver_root.h"
#include "common/files.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi {
namespace {

using ::testing::HasSubstr;

Spec SmallSpec() {
  Spec spec{.cdi_version = "0.5.0", .kind = "nvidia.com/gpu"};
  spec.devices = {{.name = "0", .container_edits = {.device_nodes = {{.path = "/dev/nvidia0"}}}}};
  return spec;
}

ino_t Inode(const std::filesystem::path& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_ino;
}

TEST(CdiSpecFileTest, WritesOnceThenReportsUnchanged) {
  fakes::TempDir dir;
  const SpecFile file{.dir = dir.path() / "var/run/cdi", .name = "gpuop-nvidia.json"};
  absl::StatusOr<bool> written = WriteSpec(SmallSpec(), file);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_TRUE(*written);
  EXPECT_EQ(*common::ReadFile(file.path()), SpecToJsonText(SmallSpec()));
  struct stat st {};
  ASSERT_EQ(stat(file.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);

  // The same content again: no write (an atomic write would have replaced the inode).
  const ino_t before = Inode(file.path());
  absl::StatusOr<bool> again = WriteSpec(SmallSpec(), file);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(*again);
  EXPECT_EQ(Inode(file.path()), before);

  Spec changed = SmallSpec();
  changed.devices[0].name = "1";
  EXPECT_TRUE(*WriteSpec(changed, file));
  EXPECT_THAT(*common::ReadFile(file.path()), HasSubstr("\"name\": \"1\""));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(file.dir),
                          std::filesystem::directory_iterator()),
            1);  // no temporary left behind
}

TEST(CdiSpecFileTest, YamlByExtension) {
  fakes::TempDir dir;
  const SpecFile file{.dir = dir.path(), .name = "gpuop-nvidia.yaml"};
  ASSERT_TRUE(*WriteSpec(SmallSpec(), file));
  EXPECT_EQ(*common::ReadFile(file.path()), SpecToYaml(SmallSpec()));
}

TEST(CdiSpecFileTest, RefusesBadNamesAndInvalidSpecs) {
  fakes::TempDir dir;
  for (const char* name : {"", "spec", "spec.yml", "../x.json", "a/b.json"}) {
    const absl::Status status = WriteSpec(SmallSpec(), {.dir = dir.path(), .name = name}).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
  }
  Spec invalid = SmallSpec();
  invalid.cdi_version = "0.3.0";
  const SpecFile file{.dir = dir.path(), .name = "x.json"};
  const absl::Status status = WriteSpec(invalid, file).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("write " + file.path().string() + ": invalid CDI spec"));
  EXPECT_FALSE(std::filesystem::exists(file.path()));
}

TEST(CdiSpecFileTest, RemoveSaysWhetherThereWasAFile) {
  fakes::TempDir dir;
  const SpecFile file{.dir = dir.path(), .name = "gpuop-nvidia.json"};
  ASSERT_TRUE(*WriteSpec(SmallSpec(), file));
  EXPECT_TRUE(*RemoveSpec(file));
  EXPECT_FALSE(std::filesystem::exists(file.path()));
  EXPECT_FALSE(*RemoveSpec(file));
  EXPECT_EQ(RemoveSpec({.dir = dir.path(), .name = ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(std::filesystem::exists(dir.path()));
}

}  // namespace
}  // namespace gpuop::agent::cdi
