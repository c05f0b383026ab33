// gpuop-cdi-hook against a container laid out as a runtime lays it out for a createContainer
// hook: a bundle directory with config.json (root.path "rootfs") and the OCI state on stdin.
// The expected behaviour is nvidia-cdi-hook's (NVIDIA container toolkit, cmd/nvidia-cdi-hook):
// create-symlinks makes each <target>::<link> like `ln -sf` in a chroot; update-ldcache adds an
// ld.so.conf.d entry for folders the image does not configure and runs ldconfig on the
// container's root; enable-cuda-compat adds /usr/local/cuda/compat first when the image's
// compat libcuda is newer (by major version) than the host's driver.
#include "agent/cdi/hook/hook.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/fakes/sysfs/fake_sysfs.h"

extern char** environ;

namespace gpuop::agent::cdi::hook {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

void Write(const fs::path& path, const std::string& content, fs::perms mode = fs::perms(0644)) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << content;
  fs::permissions(path, mode);
}

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class HookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Write(bundle_ / "config.json",
          R"({"ociVersion": "1.2.0", "process": {"args": ["sh"]}, "root": {"path": "rootfs"}})");
    fs::create_directories(root_ / "usr/lib/x86_64-linux-gnu");
  }

  // The state runc writes to a createContainer hook's stdin.
  std::string State() const {
    return R"({"ociVersion": "1.2.0", "id": "c1", "status": "creating", "pid": 1, "bundle": ")" +
           bundle_.string() + R"("})";
  }

  int Run(std::vector<std::string> args) {
    std::istringstream state(State());
    log_.str("");
    HookEnvironment env{.state = &state, .log = &log_};
    env.run = [this](const std::string& root, const std::vector<std::string>& argv) {
      runs_.push_back({root, argv});
      return StatusOr<int>(ldconfig_exit_);
    };
    return RunHook(args, env);
  }

  // An image's ldconfig and loader configuration, Debian style or not.
  void AddLdconfig(bool debian) {
    Write(root_ / "sbin/ldconfig", "#!", fs::perms(0755));
    Write(root_ / "etc/ld.so.cache", "");
    Write(root_ / "etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
    Write(root_ / "etc/ld.so.conf.d/libc.conf", "# libc default configuration\n/usr/local/lib\n");
    if (debian) {
      Write(root_ / "etc/debian_version", "12.8\n");
      Write(root_ / "etc/ld.so.conf.d/x86_64-linux-gnu.conf",
            "/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n");
    }
  }

  struct Invocation {
    std::string root;
    std::vector<std::string> argv;
  };

  fakes::TempDir temp_;
  fs::path bundle_ = temp_.path() / "bundle";
  fs::path root_ = bundle_ / "rootfs";
  std::ostringstream log_;
  std::vector<Invocation> runs_;
  int ldconfig_exit_ = 0;
};

TEST_F(HookTest, CreateSymlinksMakesTheSonameAndDevelopmentLinks) {
  ASSERT_EQ(Run({"create-symlinks", "--link",
                 "libcuda.so.570.86.15::/usr/lib/x86_64-linux-gnu/libcuda.so.1", "--link",
                 "libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so",
                 "--link=libnvidia-ml.so.570.86.15::/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
                 "--link", "libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so"}),
            0)
      << log_.str();
  const fs::path lib = root_ / "usr/lib/x86_64-linux-gnu";
  EXPECT_EQ(fs::read_symlink(lib / "libcuda.so.1"), "libcuda.so.570.86.15");
  EXPECT_EQ(fs::read_symlink(lib / "libcuda.so"), "libcuda.so.1");
  EXPECT_EQ(fs::read_symlink(lib / "libnvidia-ml.so.1"), "libnvidia-ml.so.570.86.15");
  // A second container start on the same root changes nothing and succeeds.
  EXPECT_EQ(Run({"create-symlinks", "--link",
                 "libcuda.so.570.86.15::/usr/lib/x86_64-linux-gnu/libcuda.so.1"}),
            0);
}

TEST_F(HookTest, CreateSymlinksThroughAHostileImageStaysInTheRoot) {
  const fs::path host = temp_.path() / "host-lib";
  fs::create_directories(host);
  fs::remove_all(root_ / "usr/lib/x86_64-linux-gnu");
  fs::create_symlink(host, root_ / "usr/lib/x86_64-linux-gnu");  // absolute, to a host path
  fs::create_symlink("../../../../../../../../host-lib", root_ / "usr/lib64");
  ASSERT_EQ(Run({"create-symlinks", "--link",
                 "libcuda.so.570.86.15::/usr/lib/x86_64-linux-gnu/libcuda.so.1", "--link",
                 "libcuda.so.1::/usr/lib64/libcuda.so", "--link", "x::/../../../host-lib/y"}),
            0)
      << log_.str();
  EXPECT_TRUE(fs::is_empty(host)) << "the hook wrote outside the container's root";
  EXPECT_EQ(fs::read_symlink(root_ / host.relative_path() / "libcuda.so.1"),
            "libcuda.so.570.86.15");
  EXPECT_EQ(fs::read_symlink(root_ / "host-lib/libcuda.so"), "libcuda.so.1");
  EXPECT_EQ(fs::read_symlink(root_ / "host-lib/y"), "x");
}

TEST_F(HookTest, BadArgumentsAndStatesAreReportedNotThrown) {
  EXPECT_EQ(Run({"create-symlinks", "--link", "no-separator"}), 2);
  EXPECT_THAT(log_.str(), HasSubstr("is not <target>::<absolute link path>"));
  EXPECT_EQ(Run({"create-symlinks", "--link", "a::b::/c"}), 2);
  EXPECT_EQ(Run({"create-symlinks", "--link", "a::relative"}), 2);
  EXPECT_EQ(Run({"create-symlinks", "--bogus", "x"}), 2);
  EXPECT_THAT(log_.str(), HasSubstr("unknown flag --bogus"));
  EXPECT_EQ(Run({"update-ldcache", "--folder", "lib"}), 2);
  EXPECT_EQ(Run({"frobnicate"}), 2);
  EXPECT_EQ(Run({}), 2);
  EXPECT_EQ(Run({"--help"}), 0);

  Write(bundle_ / "config.json", R"({"root": {"path": "/"}})");
  EXPECT_EQ(Run({"create-symlinks", "--link", "a::/b"}), 1);
  EXPECT_THAT(log_.str(), HasSubstr("refusing"));
  Write(bundle_ / "config.json", "not json");
  EXPECT_EQ(Run({"create-symlinks", "--link", "a::/b"}), 1);
  EXPECT_THAT(log_.str(), HasSubstr("is not valid JSON"));
}

TEST_F(HookTest, UpdateLdcacheWithoutLdconfigDoesNothing) {
  ASSERT_EQ(Run({"update-ldcache", "--folder", "/usr/lib/x86_64-linux-gnu"}), 0) << log_.str();
  EXPECT_THAT(runs_, IsEmpty());
  EXPECT_FALSE(fs::exists(root_ / "etc"));
}

TEST_F(HookTest, UpdateLdcacheOnADebianImageAddsOnlyWhatItLacks) {
  AddLdconfig(/*debian=*/true);
  ASSERT_EQ(Run({"update-ldcache", "--folder", "/usr/lib/x86_64-linux-gnu", "--folder",
                 "/usr/local/nvidia/lib64/", "--ldconfig-path", "/sbin/ldconfig"}),
            0)
      << log_.str();
  EXPECT_EQ(Read(root_ / "etc/ld.so.conf.d/00-gpuop-driver.conf"), "/usr/local/nvidia/lib64\n");
  ASSERT_EQ(runs_.size(), 1u);
  EXPECT_EQ(runs_[0].root, root_.string());
  EXPECT_THAT(runs_[0].argv, ElementsAre("/sbin/ldconfig"));
  // Nothing new: no entry, and an earlier one of ours is not counted as the image's.
  ASSERT_EQ(Run({"update-ldcache", "--folder", "/usr/lib/x86_64-linux-gnu"}), 0);
  EXPECT_FALSE(fs::exists(root_ / "etc/ld.so.conf.d/00-gpuop-driver.conf"));
  ASSERT_EQ(Run({"update-ldcache", "--folder", "/usr/local/nvidia/lib64"}), 0);
  EXPECT_EQ(Read(root_ / "etc/ld.so.conf.d/00-gpuop-driver.conf"), "/usr/local/nvidia/lib64\n");
}

TEST_F(HookTest, UpdateLdcacheOnAnotherDistributionNamesTheMultiarchDirectory) {
  AddLdconfig(/*debian=*/false);
  fs::remove(root_ / "etc/ld.so.conf");  // and creates the top-level file it lacks
  ASSERT_EQ(
      Run({"update-ldcache", "--folder", "/usr/lib/x86_64-linux-gnu", "--folder", "/usr/lib64"}), 0)
      << log_.str();
  EXPECT_EQ(Read(root_ / "etc/ld.so.conf"), "include /etc/ld.so.conf.d/*.conf\n");
  EXPECT_EQ(Read(root_ / "etc/ld.so.conf.d/00-gpuop-driver.conf"), "/usr/lib/x86_64-linux-gnu\n");
  ASSERT_EQ(runs_.size(), 1u);
}

TEST_F(HookTest, UpdateLdcacheReportsAFailingLdconfigWithoutFailingTheContainer) {
  AddLdconfig(/*debian=*/true);
  ldconfig_exit_ = 1;
  EXPECT_EQ(Run({"update-ldcache", "--folder", "/opt/nvidia/lib"}), 0);
  EXPECT_THAT(log_.str(), HasSubstr("exited with code 1"));
}

TEST_F(HookTest, EnableCudaCompatWhenTheImagesCompatLibrariesAreNewer) {
  AddLdconfig(/*debian=*/true);
  Write(root_ / "usr/local/cuda/compat/libcuda.so.580.65.06", "");
  fs::create_symlink("libcuda.so.580.65.06", root_ / "usr/local/cuda/compat/libcuda.so.1");
  const fs::path conf = root_ / "etc/ld.so.conf.d/00-compat-gpuop.conf";

  ASSERT_EQ(Run({"enable-cuda-compat", "--host-driver-version=570.86.15"}), 0) << log_.str();
  EXPECT_EQ(Read(conf), "/usr/local/cuda/compat\n");
  // The host's driver is as new: the compat libraries are not wanted, and a stale entry goes.
  ASSERT_EQ(Run({"enable-cuda-compat", "--host-driver-version", "580.65.06"}), 0);
  EXPECT_FALSE(fs::exists(conf));
  ASSERT_EQ(Run({"enable-cuda-compat", "--host-driver-version=590.10"}), 0);
  EXPECT_FALSE(fs::exists(conf));
}

TEST_F(HookTest, EnableCudaCompatIsANoOpWithoutCompatLibrariesOrLdCache) {
  ASSERT_EQ(Run({"enable-cuda-compat", "--host-driver-version=570.86.15"}), 0) << log_.str();
  EXPECT_FALSE(fs::exists(root_ / "etc"));
  Write(root_ / "usr/local/cuda/compat/libcuda.so.580.65.06", "");
  ASSERT_EQ(Run({"enable-cuda-compat", "--host-driver-version=570.86.15"}), 0);
  EXPECT_FALSE(fs::exists(root_ / "etc"));  // no ld.so.cache, no ld.so.conf.d: nothing to do
  ASSERT_EQ(Run({"enable-cuda-compat"}), 0);
  EXPECT_THAT(log_.str(), HasSubstr("no usable --host-driver-version"));
}

bool Privileged() {
  // RunConfined needs what a runtime's hook has: root with CAP_SYS_ADMIN (unshare, mount).
  if (geteuid() != 0) return false;
  const pid_t pid = fork();
  if (pid == 0) _exit(unshare(CLONE_NEWNS) == 0 ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The real confinement: the image's ldconfig runs with the container's root as "/", no host
// paths, no capabilities, and PATH as its only environment.
TEST_F(HookTest, UpdateLdcacheRunsTheImagesLdconfigConfined) {
  if (!Privileged()) GTEST_SKIP() << "needs root with CAP_SYS_ADMIN, as a runtime's hook has";
  ASSERT_FALSE(fs::exists(root_ / "usr/bin"));
  fs::create_directories(root_ / "etc/ld.so.conf.d");
  Write(root_ / "etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
  fs::create_directories(root_ / "sbin");
  fs::copy_file(GPUOP_FAKE_LDCONFIG, root_ / "sbin/ldconfig");
  fs::permissions(root_ / "sbin/ldconfig", fs::perms(0755));

  std::istringstream state(State());
  std::ostringstream log;
  const HookEnvironment env{.state = &state, .log = &log};
  ASSERT_EQ(RunHook({"update-ldcache", "--folder", "/usr/lib/x86_64-linux-gnu"}, env), 0)
      << log.str();
  EXPECT_EQ(log.str(), "");
  EXPECT_EQ(Read(root_ / "ldconfig-ran"),
            "argv\n"
            "env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
            "conf /usr/lib/x86_64-linux-gnu|\n"
            "caps 0000000000000000\n"
            "chroot refused\n"
            "host hidden\n");
}

TEST(ConfinedExecTest, AMissingProgramIsAnErrorNamingTheStep) {
  if (!Privileged()) GTEST_SKIP() << "needs root with CAP_SYS_ADMIN";
  fakes::TempDir root;
  StatusOr<int> code = RunConfined(root.string(), {"/sbin/ldconfig"}, 10);
  ASSERT_FALSE(code.ok());
  EXPECT_THAT(code.status().message(), HasSubstr("execute"));
  EXPECT_EQ(code.status().error_number(), ENOENT);
}

// The installed binary, as a runtime runs it: the state on stdin, exit code 0.
TEST_F(HookTest, TheStaticBinaryReadsTheStateFromStdin) {
  Write(temp_.path() / "state.json", State());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, (temp_.path() / "state.json").c_str(),
                                   O_RDONLY, 0);
  std::vector<std::string> args = {GPUOP_CDI_HOOK_BINARY, "create-symlinks", "--link",
                                   "libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(fs::read_symlink(root_ / "usr/lib/x86_64-linux-gnu/libcuda.so"), "libcuda.so.1");
}

}  // namespace
}  // namespace gpuop::agent::cdi::hook
