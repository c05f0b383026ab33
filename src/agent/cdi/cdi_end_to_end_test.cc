// gpuop's CDI spec and gpuop-cdi-hook together, with the container runtime's part emulated as
// the CDI specification and the OCI runtime spec describe it: a container whose root is an
// overlay of this (Debian) machine's root, the spec's mounts bind-mounted read-only into it,
// its createContainer hooks run with the OCI state on stdin, then a program in the container
// dlopens the driver's libraries by SONAME, as CUDA applications do. The driver is a driver
// container's tree with real ELF libraries and no links (InstallDriverContainer).
//
// Needs root with CAP_SYS_ADMIN (a mount namespace, overlay and bind mounts, as a runtime has);
// skips otherwise. Everything happens in a child in its own mount namespace.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/cdi/fake_driver_root.h"
#include "agent/cdi/hook_install.h"
#include "agent/cdi/nvidia_generator.h"
#include "agent/cdi/spec_file.h"
#include "common/files.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi {
namespace {

namespace fs = std::filesystem;

constexpr int kSkip = 77;

// Runs `argv` (argv[0] a path) with `input` on stdin, optionally chrooted to `root`; returns the
// exit code, or -1.
int Run(const std::vector<std::string>& argv, const std::string& input, const std::string& root,
        const fs::path& output) {
  int in[2];
  if (pipe(in) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], STDIN_FILENO);
    close(in[0]);
    close(in[1]);
    if (!output.empty()) {
      const int out = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(out, STDOUT_FILENO);
    }
    if (!root.empty() && (chroot(root.c_str()) != 0 || chdir("/") != 0)) _exit(126);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  (void)!write(in[1], input.data(), input.size());
  close(in[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The runtime's part, in a child with its own mount namespace. Exit codes: 0 done, kSkip when
// the kernel refuses the mounts, 10+ for a step that failed.
[[noreturn]] void Container(const fs::path& sysroot, const Spec& spec, const fs::path& work) {
  if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr)) {
    _exit(kSkip);
  }
  const fs::path bundle = work / "bundle", root = bundle / "rootfs";
  const std::string options =
      "lowerdir=/,upperdir=" + (work / "upper").string() + ",workdir=" + (work / "work").string();
  if (mount("overlay", root.c_str(), "overlay", 0, options.c_str()) != 0) _exit(kSkip);
  for (const Mount& m : spec.container_edits.mounts) {
    const fs::path host = sysroot / fs::path(m.host_path).relative_path();
    const fs::path target = root / fs::path(m.container_path).relative_path();
    std::error_code ec;
    fs::create_directories(fs::is_directory(host) ? target : target.parent_path(), ec);
    if (!fs::is_directory(host)) std::ofstream(target).flush();
    if (mount(host.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
        mount(nullptr, target.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) != 0) {
      _exit(10);
    }
  }
  std::ofstream(bundle / "config.json") << R"({"ociVersion": "1.2.0", "root": {"path": "rootfs"}})";
  const std::string state = R"({"ociVersion": "1.2.0", "id": "e2e", "status": "creating", )"
                            R"("pid": 1, "bundle": ")" +
                            bundle.string() + "\"}";
  for (const Hook& hook : spec.container_edits.hooks) {
    if (hook.hook_name != "createContainer") _exit(11);
    std::vector<std::string> argv = hook.args;
    argv[0] = (sysroot / fs::path(hook.path).relative_path()).string();
    if (Run(argv, state, "", "") != 0) _exit(12);
  }
  std::error_code ec;
  fs::create_directories(root / "usr/local/bin", ec);
  fs::copy_file(GPUOP_DLOPEN_PROBE, root / "usr/local/bin/gpuop-dlopen-probe",
                fs::copy_options::overwrite_existing, ec);
  if (ec) _exit(13);
  const int probe =
      Run({"/usr/local/bin/gpuop-dlopen-probe"}, "", root.string(), work / "probe.out");
  _exit(probe == 0 ? 0 : 14);
}

TEST(CdiEndToEndTest, DriverLibrariesLoadBySonameInAContainer) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root with CAP_SYS_ADMIN, as a container runtime";
#if defined(__SANITIZE_ADDRESS__)
  // The fake driver libraries are sanitized too, and the container's unsanitized program cannot
  // load them; the other builds run this test.
  GTEST_SKIP() << "the fake driver libraries are built with the sanitizers";
#endif
  fakes::TempDir temp;
  const fs::path sysroot = temp.path() / "host";
  testing::InstallDriverContainer(sysroot, "/run/nvidia/driver");
  testing::FakeDevices devices(sysroot);
  testing::AddNvidiaDeviceNodes(devices, "/dev", {0, 1});
  absl::StatusOr<bool> installed =
      InstallHook(GPUOP_CDI_HOOK_BINARY, sysroot / fs::path(kHookHostPath).relative_path());
  ASSERT_TRUE(installed.ok()) << installed.status();

  NvidiaCdiOptions options{.hook_path = kHookHostPath, .files = devices.files()};
  options.driver.driver_root = "/run/nvidia/driver";
  absl::StatusOr<GeneratedSpec> generated =
      NvidiaCdiGenerator(options).Generate(testing::NvidiaInventory(2));
  ASSERT_TRUE(generated.ok()) << generated.status();
  // What the runtime reads: the file as written.
  const SpecFile file{.dir = temp.path() / "cdi", .name = kNvidiaSpecFileName};
  ASSERT_TRUE(WriteSpec(generated->spec, file).ok());
  absl::StatusOr<std::string> text = common::ReadFile(file.path());
  ASSERT_TRUE(text.ok());
  absl::StatusOr<Spec> spec = SpecFromJson(*text);
  ASSERT_TRUE(spec.ok()) << spec.status();

  const fs::path work = temp.path() / "container";
  for (const char* dir : {"bundle/rootfs", "upper", "work"}) fs::create_directories(work / dir);
  const pid_t pid = fork();
  if (pid == 0) Container(sysroot, *spec, work);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == kSkip) GTEST_SKIP() << "the kernel refused the container's mounts";
  absl::StatusOr<std::string> probe = common::ReadFile(work / "probe.out");
  ASSERT_EQ(WEXITSTATUS(status), 0) << (probe.ok() ? *probe : "no probe output");
  ASSERT_TRUE(probe.ok());
  EXPECT_EQ(*probe, "libcuda.so.1 loaded\nlibnvidia-ml.so.1 loaded\nlibcuda.so loaded\n");

  // The links and the loader cache are the container's (its overlay's upper layer), never the
  // host's.
  const fs::path lib = work / "upper/usr/lib/x86_64-linux-gnu";
  EXPECT_EQ(fs::read_symlink(lib / "libcuda.so.1"), "libcuda.so.570.86.15");
  EXPECT_EQ(fs::read_symlink(lib / "libnvidia-ml.so.1"), "libnvidia-ml.so.570.86.15");
  EXPECT_EQ(fs::read_symlink(lib / "libcuda.so"), "libcuda.so.1");
  absl::StatusOr<std::string> cache = common::ReadFile(work / "upper/etc/ld.so.cache");
  ASSERT_TRUE(cache.ok()) << "the container's ldconfig did not run: " << cache.status();
  EXPECT_NE(cache->find("libcuda.so.1"), std::string::npos);
  EXPECT_NE(cache->find("libnvidia-ml.so.1"), std::string::npos);
}

}  // namespace
}  // namespace gpuop::agent::cdi
