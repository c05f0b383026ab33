#include "agent/cdi/inject/find_runc.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi::inject {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

class FindRuncTest : public ::testing::Test {
 protected:
  fs::path Executable(const fs::path& path, fs::perms mode = fs::perms(0755)) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << "#!/bin/sh\n";
    fs::permissions(path, mode);
    return path;
  }

  FileId Id(const fs::path& path) {
    struct stat info {};
    EXPECT_EQ(::stat(path.c_str(), &info), 0);
    return {info.st_dev, info.st_ino};
  }

  fakes::TempDir temp_;
  fs::path self_ = Executable(temp_.path() / "wrapper/gpuop-container-runtime");
};

TEST_F(FindRuncTest, TakesTheFirstRuncOnPathThatIsNotItself) {
  const fs::path a = temp_.path() / "a";
  fs::create_directories(a);
  fs::create_symlink(self_, a / "runc");                 // the wrapper installed as runc
  Executable(temp_.path() / "b/runc", fs::perms(0644));  // not executable
  fs::create_directories(temp_.path() / "c/runc");       // a directory
  const fs::path d = Executable(temp_.path() / "d/runc");
  Executable(temp_.path() / "e/runc");
  const std::string path = "relative:" + (temp_.path() / "missing").string() + "::" + a.string() +
                           ":" + (temp_.path() / "b").string() + ":" +
                           (temp_.path() / "c").string() + ":" + (temp_.path() / "d/").string() +
                           ":" + (temp_.path() / "e").string();
  StatusOr<std::string> runc = FindRunc(std::nullopt, path, Id(self_));
  ASSERT_TRUE(runc.ok()) << runc.status().message();
  EXPECT_EQ(*runc, d.string());
}

TEST_F(FindRuncTest, AHardLinkToItselfIsItself) {
  fs::create_directories(temp_.path() / "a");
  fs::create_hard_link(self_, temp_.path() / "a/runc");
  const std::string path = (temp_.path() / "a").string();
  StatusOr<std::string> runc = FindRunc(std::nullopt, path, Id(self_));
  ASSERT_FALSE(runc.ok());
  EXPECT_THAT(runc.status().message(),
              AllOf(HasSubstr("no runc or crun found in PATH=" + path), HasSubstr("GPUOP_RUNC")));
}

// A node whose only OCI runtime is crun (CRI-O's default): crun, but runc wherever one is.
TEST_F(FindRuncTest, CrunWhereThePathHasNoRunc) {
  const fs::path crun = Executable(temp_.path() / "a/crun");
  std::string path = crun.parent_path().string();
  StatusOr<std::string> found = FindRunc(std::nullopt, path, Id(self_));
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(*found, crun.string());
  const fs::path runc = Executable(temp_.path() / "b/runc");
  path.append(":").append(runc.parent_path().string());
  found = FindRunc(std::nullopt, path, Id(self_));
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(*found, runc.string()) << "runc, even later on PATH";
}

TEST_F(FindRuncTest, TheOverrideWinsAndIsChecked) {
  const fs::path runc = Executable(temp_.path() / "opt/runc.real");
  const std::string path = Executable(temp_.path() / "bin/runc").parent_path().string();
  StatusOr<std::string> found = FindRunc(runc.string(), path, Id(self_));
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(*found, runc.string());

  EXPECT_THAT(FindRunc("runc", path, Id(self_)).status().message(),
              HasSubstr("GPUOP_RUNC=\"runc\" is not an absolute path"));
  EXPECT_THAT(FindRunc(self_.string(), path, Id(self_)).status().message(),
              HasSubstr("gpuop-container-runtime itself"));
  EXPECT_THAT(FindRunc((temp_.path() / "nope").string(), path, Id(self_)).status().message(),
              HasSubstr("cannot be run"));
}

TEST(SelfIdTest, IsTheRunningExecutable) {
  StatusOr<FileId> self = SelfId();
  ASSERT_TRUE(self.ok()) << self.status().message();
  struct stat info {};
  ASSERT_EQ(::stat("/proc/self/exe", &info), 0);
  EXPECT_EQ(self->inode, info.st_ino);
}

}  // namespace
}  // namespace gpuop::agent::cdi::inject
