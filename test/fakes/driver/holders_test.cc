// Finding the processes that hold the simulated driver: a fake /proc, and real processes.

#include "test/fakes/driver/holders.h"

#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "test/fakes/driver/nodes.h"
#include "test/fakes/driver/test_children.h"

namespace gpuop::fakedriver {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class HoldersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "holders_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    dev_ = dir_ + "/dev";
    ASSERT_EQ(mkdir(dev_.c_str(), 0755), 0);
  }
  void TearDown() override {
    for (const pid_t child : children_) {
      kill(child, SIGKILL);
      waitpid(child, nullptr, 0);
    }
  }
  // A simulated device node; skips the test where mknod is not permitted.
  std::string Node(const std::string& name) {
    const std::string path = dev_ + "/" + name;
    if (mknod(path.c_str(), S_IFCHR | 0666, makedev(kNodeMajor, kNodeMinor)) != 0) {
      skip_ = true;
    }
    return path;
  }
  void Write(const std::string& path, const std::string& text) {
    const size_t slash = path.rfind('/');
    ASSERT_EQ(system(("mkdir -p '" + path.substr(0, slash) + "'").c_str()), 0);
    std::ofstream(path) << text;
  }
  // Runs `body` in a child that signals through a pipe once it holds what it should, then waits
  // to be killed; returns its pid (0 when it failed).
  template <typename Fn>
  pid_t Child(Fn body) {
    return ForkHolder(body, children_);
  }

  std::string dir_;
  std::string dev_;
  bool skip_ = false;
  std::vector<pid_t> children_;
};

TEST_F(HoldersTest, FindsNodesAndLibrariesInAFakeProc) {
  const std::string node = Node("nvidia0");
  const std::string full = Node("full");  // 1:7 too, but not named like the driver's nodes
  if (skip_) GTEST_SKIP() << "mknod is not permitted here";
  const std::string library = dir_ + "/lib/libnvidia-ml.so.570.86.15";
  Write(library, "not really an ELF image");
  FileId id;
  ASSERT_TRUE(IdentifyFile(library, &id));
  const std::string proc = dir_ + "/proc";
  // 100 holds a node; 200 maps the library (another device, same inode and name: how an
  // overlayfs file can appear); 300 holds /dev/full and maps a file with the same inode under
  // another name on another device; 400 is this scan (excluded).
  Write(proc + "/100/comm", "python3\n");
  ASSERT_EQ(mkdir((proc + "/100/fd").c_str(), 0755), 0);
  ASSERT_EQ(symlink(node.c_str(), (proc + "/100/fd/3").c_str()), 0);
  ASSERT_EQ(symlink(library.c_str(), (proc + "/100/fd/4").c_str()), 0);
  const std::string maps_line = absl::StrCat("7f0000000000-7f0000001000 r--p 00000000 ");
  char other_device[32];  // not the library's device
  std::snprintf(other_device, sizeof(other_device), "%02x:%02x ", major(id.device),
                minor(id.device) + 1);
  Write(proc + "/200/comm", "dcgm\n");
  Write(proc + "/200/maps",
        absl::StrCat("55d0c0000000-55d0c0001000 r-xp 00000000 fd:01 42   /usr/bin/dcgm\n",
                     maps_line, other_device, id.inode,
                     "                    /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.86.15\n",
                     "7ffd00000000-7ffd00001000 rw-p 00000000 00:00 0    [stack]\n"));
  Write(proc + "/300/comm", "other\n");
  ASSERT_EQ(mkdir((proc + "/300/fd").c_str(), 0755), 0);
  ASSERT_EQ(symlink(full.c_str(), (proc + "/300/fd/5").c_str()), 0);
  Write(proc + "/300/maps",
        absl::StrCat(maps_line, other_device, id.inode, "   /usr/lib/libsomething-else.so\n"));
  Write(proc + "/400/comm", "nvidia-driver\n");
  ASSERT_EQ(mkdir((proc + "/400/fd").c_str(), 0755), 0);
  ASSERT_EQ(symlink(node.c_str(), (proc + "/400/fd/3").c_str()), 0);
  Write(proc + "/self/comm", "not a pid\n");

  const std::vector<Holder> holders =
      FindHolders({.proc = proc, .self = 400, .dev_root = dev_, .libraries = {id}});
  ASSERT_EQ(holders.size(), 2u);
  EXPECT_EQ(holders[0].pid, 100);
  EXPECT_EQ(holders[0].command, "python3");
  EXPECT_THAT(holders[0].what, ElementsAre(node));
  EXPECT_EQ(holders[1].pid, 200);
  EXPECT_THAT(holders[1].what,
              ElementsAre("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.86.15 (mapped)"));
  EXPECT_EQ(DescribeHolders(holders), absl::StrCat("  pid 100 (python3): ", node,
                                                   "\n  pid 200 (dcgm): /usr/lib/x86_64-linux-gnu/"
                                                   "libnvidia-ml.so.570.86.15 (mapped)\n"));
}

// The scanning process is excluded by the number the scanned /proc gives it (its "self" link):
// a container's nvidia-smi that reads the host's /proc through a driver root has another pid
// there than getpid() says.
TEST_F(HoldersTest, ExcludesItselfByTheNumberTheScannedProcGivesIt) {
  const std::string node = Node("nvidia0");
  if (skip_) GTEST_SKIP() << "mknod is not permitted here";
  const std::string proc = dir_ + "/proc";
  for (const char* pid : {"100", "4242"}) {
    Write(absl::StrCat(proc, "/", pid, "/comm"), "nvidia-smi\n");
    ASSERT_EQ(mkdir(absl::StrCat(proc, "/", pid, "/fd").c_str(), 0755), 0);
    ASSERT_EQ(symlink(node.c_str(), absl::StrCat(proc, "/", pid, "/fd/3").c_str()), 0);
  }
  ASSERT_EQ(symlink("4242", (proc + "/self").c_str()), 0);
  const std::vector<Holder> holders = FindHolders({.proc = proc, .dev_root = dev_});
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].pid, 100);
}

TEST_F(HoldersTest, FindsARealProcessHoldingANode) {
  const std::string node = Node("nvidia3");
  if (skip_) GTEST_SKIP() << "mknod is not permitted here";
  EXPECT_THAT(FindHolders({.dev_root = dev_}), IsEmpty());
  const pid_t child = Child([&] { return open(node.c_str(), O_RDWR) >= 0; });
  ASSERT_GT(child, 0);
  const std::vector<Holder> holders = FindHolders({.dev_root = dev_});
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].pid, child);
  EXPECT_THAT(holders[0].what, ElementsAre(node));
}

// What the fake NVML asks about one GPU: only that GPU's node counts, and outside /dev a regular
// file standing in for it (open_files) counts too.
TEST_F(HoldersTest, FindsTheHoldersOfOneGpusNode) {
  const std::string node3 = Node("nvidia3");
  const std::string node4 = Node("nvidia4");
  if (skip_) GTEST_SKIP() << "mknod is not permitted here";
  const std::string file = dir_ + "/nvidia5";
  Write(file, "");
  FileId id;
  ASSERT_TRUE(IdentifyFile(file, &id));
  const pid_t child =
      Child([&] { return open(node4.c_str(), O_RDWR) >= 0 && open(file.c_str(), O_RDWR) >= 0; });
  ASSERT_GT(child, 0);
  EXPECT_THAT(FindHolders({.dev_root = dev_, .node_names = {"nvidia3"}}), IsEmpty());
  const std::vector<Holder> four = FindHolders({.dev_root = dev_, .node_names = {"nvidia4"}});
  ASSERT_EQ(four.size(), 1u);
  EXPECT_EQ(four[0].pid, child);
  EXPECT_THAT(four[0].what, ElementsAre(node4));
  const std::vector<Holder> five =
      FindHolders({.dev_root = dev_, .node_names = {"nvidia5"}, .open_files = {id}});
  ASSERT_EQ(five.size(), 1u);
  EXPECT_THAT(five[0].what, ElementsAre(file));
  EXPECT_THAT(FindHolders({.self = child, .dev_root = dev_, .node_names = {"nvidia4"}}), IsEmpty());
}

TEST_F(HoldersTest, FindsARealProcessMappingTheLibrary) {
  const std::string library = dir_ + "/libnvidia-ml.so.570.86.15";
  Write(library, std::string(8192, 'x'));
  FileId id;
  ASSERT_TRUE(IdentifyFile(library, &id));
  const pid_t child = Child([&] {
    const int fd = open(library.c_str(), O_RDONLY);
    if (fd < 0) return false;
    void* mapped = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);  // the mapping alone holds it
    return mapped != MAP_FAILED;
  });
  ASSERT_GT(child, 0);
  const std::vector<Holder> holders = FindHolders({.dev_root = dev_, .libraries = {id}});
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].pid, child);
  EXPECT_THAT(holders[0].what, ElementsAre(library + " (mapped)"));
}

TEST_F(HoldersTest, FindsAProcessInAnotherMountNamespaceByItsOwnPath) {
  // A container's process: its node lives in a mount only its namespace has. /proc shows the
  // path as that namespace sees it, and stat(2) through /proc still reaches the node.
  const std::string private_dev = dir_ + "/private-dev";
  ASSERT_EQ(mkdir(private_dev.c_str(), 0755), 0);
  const pid_t child = Child([&] {
    if (unshare(CLONE_NEWNS) != 0 ||
        mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("tmpfs", private_dev.c_str(), "tmpfs", 0, nullptr) != 0) {
      return false;
    }
    const std::string node = private_dev + "/nvidia0";
    return mknod(node.c_str(), S_IFCHR | 0666, makedev(kNodeMajor, kNodeMinor)) == 0 &&
           open(node.c_str(), O_RDWR) >= 0;
  });
  if (child == 0) GTEST_SKIP() << "cannot make a mount namespace with a device node here";
  struct stat outside {};
  EXPECT_NE(stat((private_dev + "/nvidia0").c_str(), &outside), 0);  // not in this namespace
  const std::vector<Holder> holders = FindHolders({.dev_root = private_dev});
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].pid, child);
  EXPECT_THAT(holders[0].what, ElementsAre(private_dev + "/nvidia0"));
}

}  // namespace
}  // namespace gpuop::fakedriver
