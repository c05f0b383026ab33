#include "agent/cdi/hook/root_dir.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi::hook {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A container root under a temp dir, with a sibling "host" directory standing for everything
// outside the root that a hostile image would like to reach.
class RootDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "usr/lib");
    fs::create_directories(host_ / "etc");
    std::ofstream(host_ / "etc/passwd") << "host";
  }
  RootDir Open() {
    StatusOr<RootDir> dir = RootDir::Open(root_.string());
    EXPECT_TRUE(dir.ok()) << dir.status().message();
    return std::move(*dir);
  }
  std::string Link(const fs::path& path) { return fs::read_symlink(path).string(); }

  fakes::TempDir temp_;
  fs::path root_ = temp_.path() / "rootfs";
  fs::path host_ = temp_.path() / "host";
};

TEST_F(RootDirTest, SymlinkCreatesParentsAndIsIdempotent) {
  RootDir root = Open();
  StatusOr<bool> made =
      root.Symlink("libcuda.so.570.86.15", "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_TRUE(*made);
  EXPECT_EQ(Link(root_ / "usr/lib/x86_64-linux-gnu/libcuda.so.1"), "libcuda.so.570.86.15");
  StatusOr<bool> again =
      root.Symlink("libcuda.so.570.86.15", "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

TEST_F(RootDirTest, SymlinkReplacesAnotherLinkOrAFileButNotADirectory) {
  fs::create_symlink("libcuda.so.535.54.03", root_ / "usr/lib/libcuda.so.1");
  std::ofstream(root_ / "usr/lib/libnvidia-ml.so.1") << "stub";
  fs::create_directories(root_ / "usr/lib/libdir.so.1");
  RootDir root = Open();
  ASSERT_TRUE(root.Symlink("libcuda.so.570.86.15", "/usr/lib/libcuda.so.1").ok());
  EXPECT_EQ(Link(root_ / "usr/lib/libcuda.so.1"), "libcuda.so.570.86.15");
  ASSERT_TRUE(root.Symlink("libnvidia-ml.so.570.86.15", "/usr/lib/libnvidia-ml.so.1").ok());
  EXPECT_EQ(Link(root_ / "usr/lib/libnvidia-ml.so.1"), "libnvidia-ml.so.570.86.15");
  StatusOr<bool> dir = root.Symlink("x", "/usr/lib/libdir.so.1");
  EXPECT_FALSE(dir.ok());
  EXPECT_THAT(dir.status().message(), HasSubstr("/usr/lib/libdir.so.1 in container root"));
  // No temp files left behind.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(root_ / "usr/lib")) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_THAT(names, ElementsAre("libcuda.so.1", "libdir.so.1", "libnvidia-ml.so.1"));
}

// Hostile images: directory symlinks that point out of the root, absolutely or with "..", are
// resolved as a chroot would, so the link lands inside the root and the host is untouched.
TEST_F(RootDirTest, SymlinkEscapesStayInsideTheRoot) {
  fs::create_symlink("/../../host/etc", root_ / "usr/lib/abs");
  fs::create_symlink("../../../../../host/etc", root_ / "usr/lib/rel");
  fs::create_symlink(host_ / "etc", root_ / "usr/lib/hostpath");
  RootDir root = Open();
  for (const char* link : {"/usr/lib/abs/passwd", "/usr/lib/rel/passwd", "/usr/lib/hostpath/passwd",
                           "/../../host/etc/passwd"}) {
    SCOPED_TRACE(link);
    StatusOr<bool> made = root.Symlink("pwned", link);
    ASSERT_TRUE(made.ok()) << made.status().message();
  }
  std::ifstream host_file(host_ / "etc/passwd");
  std::string content((std::istreambuf_iterator<char>(host_file)), {});
  EXPECT_EQ(content, "host");
  EXPECT_FALSE(fs::is_symlink(host_ / "etc/passwd"));
  // What the links resolved to inside the root.
  EXPECT_EQ(Link(root_ / "host/etc/passwd"), "pwned");
  EXPECT_EQ(Link(root_ / fs::path(host_.relative_path()) / "etc/passwd"), "pwned");
}

TEST_F(RootDirTest, WriteFileReplacesASymlinkInsteadOfWritingThroughIt) {
  fs::create_directories(root_ / "etc");
  fs::create_symlink(host_ / "etc/passwd", root_ / "etc/ld.so.conf");
  RootDir root = Open();
  ASSERT_TRUE(root.WriteFile("/etc/ld.so.conf", "include x\n").ok());
  EXPECT_FALSE(fs::is_symlink(root_ / "etc/ld.so.conf"));
  StatusOr<std::optional<std::string>> text = root.ReadFile("/etc/ld.so.conf", 100);
  ASSERT_TRUE(text.ok() && text->has_value());
  EXPECT_EQ(**text, "include x\n");
  EXPECT_EQ((fs::status(root_ / "etc/ld.so.conf").permissions() & fs::perms::mask),
            fs::perms(0644));
  std::ifstream host_file(host_ / "etc/passwd");
  std::string content((std::istreambuf_iterator<char>(host_file)), {});
  EXPECT_EQ(content, "host");
}

TEST_F(RootDirTest, ReadsStatsAndListsInsideTheRoot) {
  fs::create_directories(root_ / "etc/ld.so.conf.d");
  std::ofstream(root_ / "etc/ld.so.conf.d/b.conf") << "/b\n";
  std::ofstream(root_ / "etc/ld.so.conf.d/a.conf") << "/a\n";
  fs::create_symlink("/etc/ld.so.conf.d", root_ / "conf");
  RootDir root = Open();
  StatusOr<std::vector<std::string>> names = root.List("/conf");
  ASSERT_TRUE(names.ok()) << names.status().message();
  EXPECT_THAT(*names, ElementsAre("a.conf", "b.conf"));
  StatusOr<std::vector<std::string>> none = root.List("/missing");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  StatusOr<std::optional<std::string>> a = root.ReadFile("/conf/a.conf", 100);
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_EQ(**a, "/a\n");
  EXPECT_FALSE(root.ReadFile("/conf/a.conf", 2).ok());  // larger than allowed
  StatusOr<std::optional<std::string>> missing = root.ReadFile("/etc/nothing", 100);
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  StatusOr<std::optional<struct stat>> st = root.Stat("/conf");
  ASSERT_TRUE(st.ok() && st->has_value());
  EXPECT_TRUE(S_ISDIR((*st)->st_mode));
  StatusOr<std::optional<std::string>> target = root.ReadLink("/conf");
  ASSERT_TRUE(target.ok() && target->has_value());
  EXPECT_EQ(**target, "/etc/ld.so.conf.d");
  StatusOr<bool> removed = root.Remove("/conf/a.conf");
  ASSERT_TRUE(removed.ok());
  EXPECT_TRUE(*removed);
  EXPECT_FALSE(fs::exists(root_ / "etc/ld.so.conf.d/a.conf"));
}

TEST_F(RootDirTest, SymlinkLoopsAreErrorsNotHangs) {
  fs::create_symlink("b", root_ / "a");
  fs::create_symlink("a", root_ / "b");
  RootDir root = Open();
  StatusOr<bool> made = root.Symlink("x", "/a/link");
  EXPECT_FALSE(made.ok());
  EXPECT_EQ(made.status().error_number(), ELOOP);
}

TEST_F(RootDirTest, AMissingRootIsAnError) {
  StatusOr<RootDir> dir = RootDir::Open((temp_.path() / "nope").string());
  EXPECT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().error_number(), ENOENT);
}

}  // namespace
}  // namespace gpuop::agent::cdi::hook
