// The simulated driver container's programs, run as processes against a temporary tree: the
// device root, the container root, /run/nvidia and the driver root all live under one temporary
// directory (--dev-root, --root, --run-dir, --driver-root).

#include "test/fakes/driver/nvidia_driver.h"

#include <chrono>
#include <csignal>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "test/fakes/driver/driver_root.h"
#include "test/fakes/driver/nodes.h"
#include "test/fakes/driver/test_children.h"
#include "test/fakes/nvml/embedded.h"
#include "test/fakes/nvml/scenario.h"

namespace gpuop::fakedriver {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr auto kDeadline = std::chrono::seconds(30);

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool Exists(const std::string& path) {
  struct stat info {};
  return lstat(path.c_str(), &info) == 0;
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* handle = opendir(dir.c_str())) {
    while (const dirent* entry = readdir(handle)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(handle);
  }
  return names;
}

struct Result {
  int code = -1;  // the exit code; -signal when killed
  std::string out;
  std::string err;
};

class NvidiaDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "nvidia_driver_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    root_ = dir_ + "/root";
    dev_ = dir_ + "/dev";
    run_ = dir_ + "/run/nvidia";
    driver_root_ = run_ + "/driver";
    for (const std::string& path : {root_, dev_}) ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
    const std::string probe = dir_ + "/probe";
    if (mknod(probe.c_str(), S_IFCHR | 0666, makedev(kNodeMajor, kNodeMinor)) != 0) {
      skip_ = "mknod is not permitted here";
    }
    unlink(probe.c_str());
  }
  void TearDown() override {
    for (const pid_t pid : children_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    // Leave nothing behind, whatever the test did.
    std::vector<std::string> args = Flags();
    args.insert(args.begin(), "uninit");
    Run(GPUOP_FAKE_NVIDIA_DRIVER, args, Env());
  }

  std::vector<std::string> Flags() const {
    return {"--root",     root_,       "--dev-root", dev_,        "--driver-root",
            driver_root_, "--run-dir", run_,         "--lib-dir", GPUOP_FAKE_DRIVER_LIB_DIR,
            "--publish",  "tree"};
  }
  std::vector<std::string> Env(const std::string& scenario = "h100-8x-nvswitch") const {
    return {"PATH=/usr/bin:/bin", "NODE_NAME=node-a",
            absl::StrCat("GPUOP_SIMULATED_DRIVER_SCENARIO=", scenario)};
  }

  // Starts `program` with `args` and exactly `env`; its output goes to files in the test's
  // directory. `private_mounts`: in a mount namespace of its own (exit 77 when not permitted).
  pid_t Start(const std::string& program, const std::vector<std::string>& args,
              const std::vector<std::string>& env, bool private_mounts = false) {
    const int n = runs_++;
    out_ = absl::StrCat(dir_, "/out-", n);
    err_ = absl::StrCat(dir_, "/err-", n);
    std::vector<std::string> argv_strings = {program};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& arg : argv_strings) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings = env;
    std::vector<char*> envp;
    for (std::string& entry : env_strings) envp.push_back(entry.data());
    envp.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      const int out = open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(126);
      if (private_mounts && (unshare(CLONE_NEWNS) != 0 ||
                             mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)) {
        _exit(77);
      }
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      execve(program.c_str(), argv.data(), envp.data());
      _exit(127);
    }
    if (pid > 0) {
      children_.push_back(pid);
      outputs_[pid] = {out_, err_};
    }
    return pid;
  }
  // Waits for `pid` (up to the deadline, then kills it) and collects its output.
  Result Wait(pid_t pid) {
    Result result;
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::erase(children_, pid);
    result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    result.out = Read(outputs_[pid].first);
    result.err = Read(outputs_[pid].second);
    return result;
  }
  Result Run(const std::string& program, const std::vector<std::string>& args,
             const std::vector<std::string>& env) {
    return Wait(Start(program, args, env));
  }
  // Starts `nvidia-driver init` and waits until it says it is waiting for a signal; 0 when it
  // exited instead (its output is then in last_).
  pid_t StartInit(const std::vector<std::string>& env, bool private_mounts = false,
                  const std::string& publish = "tree") {
    std::vector<std::string> args = Flags();
    args.back() = publish;
    args.insert(args.begin(), "init");
    const pid_t pid = Start(GPUOP_FAKE_NVIDIA_DRIVER, args, env, private_mounts);
    const std::string out = out_;
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Read(out).find("Done, now waiting for signal") != std::string::npos) return pid;
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        std::erase(children_, pid);
        last_ = {WIFEXITED(status) ? WEXITSTATUS(status) : -1, Read(out), Read(err_)};
        return 0;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return pid;
  }
  // A child that signals once `body` returns true, then waits to be killed.
  template <typename Fn>
  pid_t Holder(Fn body) {
    return ForkHolder(body, children_);
  }
  void Kill(pid_t pid) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    std::erase(children_, pid);
  }
  std::string Library() const { return absl::StrCat(driver_root_, "/", kLibraryDir); }
  std::string Preset(const std::string& name) const {
    return absl::StrCat(GPUOP_FAKE_DRIVER_LIB_DIR, "/scenarios/", name, ".yaml");
  }

  std::string dir_, root_, dev_, run_, driver_root_;
  std::string skip_;
  std::string out_, err_;
  Result last_;
  int runs_ = 0;
  std::vector<pid_t> children_;
  std::map<pid_t, std::pair<std::string, std::string>> outputs_;  // stdout and stderr files
};

TEST_F(NvidiaDriverTest, InitPublishesTheDriverAndSigtermTearsItDown) {
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  const pid_t init = StartInit(Env());
  ASSERT_GT(init, 0) << last_.out << last_.err;
  EXPECT_EQ(Read(run_ + "/nvidia-driver.pid"), absl::StrCat(init, "\n"));
  EXPECT_THAT(Read(out_), HasSubstr("SIMULATED"));

  std::vector<std::pair<std::string, mode_t>> nodes = {{"nvidiactl", 0666},
                                                       {"nvidia-uvm", 0666},
                                                       {"nvidia-uvm-tools", 0666},
                                                       {"nvidia-modeset", 0666},
                                                       {"nvidia-caps/nvidia-cap1", 0400},
                                                       {"nvidia-caps/nvidia-cap2", 0444}};
  for (int i = 0; i < 8; ++i) nodes.emplace_back(absl::StrCat("nvidia", i), 0666);
  for (const auto& [name, mode] : nodes) {
    struct stat info {};
    ASSERT_EQ(lstat((dev_ + "/" + name).c_str(), &info), 0) << name;
    EXPECT_TRUE(S_ISCHR(info.st_mode)) << name;
    EXPECT_EQ(info.st_rdev, makedev(1, 7)) << name;
    EXPECT_EQ(info.st_mode & 07777, mode) << name;
  }

  // The driver root: the libraries, with the node's scenario in the NVML one, and nvidia-smi.
  EXPECT_TRUE(Exists(absl::StrCat(driver_root_, "/", kTreeMarker)));
  EXPECT_TRUE(Exists(driver_root_ + "/usr/bin/nvidia-smi"));
  for (const char* name :
       {"libnvidia-ml.so.1", "libcuda.so.570.86.15", "libcuda.so.1", "libcuda.so"}) {
    EXPECT_TRUE(Exists(Library() + "/" + name)) << name;
  }
  absl::StatusOr<std::optional<std::string>> embedded =
      fakenvml::ReadEmbeddedScenario(Library() + "/libnvidia-ml.so.570.86.15");
  ASSERT_TRUE(embedded.ok() && embedded->has_value()) << embedded.status();
  EXPECT_THAT(**embedded, HasSubstr("uuid_seed: h100-8x-nvswitch/node/node-a"));
  EXPECT_THAT(**embedded, HasSubstr("device_nodes: " + dev_));

  // Any process that finds the library sees the node's GPUs, with no environment at all.
  absl::StatusOr<fakenvml::Scenario> expected = fakenvml::ParseScenario(
      Read(Preset("h100-8x-nvswitch")), Preset("h100-8x-nvswitch"), "node-a");
  ASSERT_TRUE(expected.ok()) << expected.status();
  const Result smi =
      Run(GPUOP_FAKE_NVIDIA_SMI, {"-L"}, {absl::StrCat("LD_LIBRARY_PATH=", Library())});
  EXPECT_EQ(smi.code, 0) << smi.out << smi.err;
  const std::vector<std::string> lines = absl::StrSplit(smi.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 8u) << smi.out;
  EXPECT_EQ(lines[0],
            absl::StrCat("GPU 0: NVIDIA H100 80GB HBM3 (UUID: ", expected->gpus[0].uuid, ")"));

  kill(init, SIGTERM);
  const Result stopped = Wait(init);
  EXPECT_EQ(stopped.code, 0) << stopped.out << stopped.err;
  EXPECT_THAT(stopped.out, HasSubstr("Caught signal"));
  EXPECT_THAT(Entries(dev_), IsEmpty());
  EXPECT_THAT(Entries(driver_root_), IsEmpty());
  EXPECT_FALSE(Exists(run_ + "/nvidia-driver.pid"));
}

TEST_F(NvidiaDriverTest, SigtermLeavesEverythingWhileAProcessHoldsANode) {
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  const pid_t init = StartInit(Env());
  ASSERT_GT(init, 0) << last_.out << last_.err;
  const std::string node = dev_ + "/nvidia3";
  const pid_t holder = Holder([&] { return open(node.c_str(), O_RDWR) >= 0; });
  ASSERT_GT(holder, 0);

  kill(init, SIGTERM);
  const Result refused = Wait(init);
  EXPECT_EQ(refused.code, kExitFailed);
  EXPECT_THAT(refused.err, HasSubstr(kInUseMessage));
  EXPECT_THAT(refused.err, HasSubstr(absl::StrCat("pid ", holder, " (")));
  EXPECT_THAT(refused.err, HasSubstr(node));
  EXPECT_TRUE(Exists(node));
  EXPECT_TRUE(Exists(dev_ + "/nvidiactl"));
  EXPECT_TRUE(Exists(Library() + "/libnvidia-ml.so.570.86.15"));

  std::vector<std::string> uninit = Flags();
  uninit.insert(uninit.begin(), "uninit");
  EXPECT_EQ(Run(GPUOP_FAKE_NVIDIA_DRIVER, uninit, Env()).code, kExitFailed);
  Kill(holder);
  const Result done = Run(GPUOP_FAKE_NVIDIA_DRIVER, uninit, Env());
  EXPECT_EQ(done.code, 0) << done.out << done.err;
  EXPECT_THAT(Entries(dev_), IsEmpty());
  EXPECT_THAT(Entries(driver_root_), IsEmpty());
  EXPECT_FALSE(Exists(run_ + "/nvidia-driver.pid"));
}

TEST_F(NvidiaDriverTest, UninitRefusesWhileTheLibraryIsMappedThenStopsInit) {
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  const pid_t init = StartInit(Env());
  ASSERT_GT(init, 0) << last_.out << last_.err;
  const std::string library = Library() + "/libnvidia-ml.so.570.86.15";
  const pid_t holder = Holder([&] { return dlopen(library.c_str(), RTLD_NOW) != nullptr; });
  ASSERT_GT(holder, 0);

  std::vector<std::string> uninit = Flags();
  uninit.insert(uninit.begin(), "uninit");
  const Result refused = Run(GPUOP_FAKE_NVIDIA_DRIVER, uninit, Env());
  EXPECT_EQ(refused.code, kExitFailed);
  EXPECT_THAT(refused.err, HasSubstr(kInUseMessage));
  EXPECT_THAT(refused.err, HasSubstr(library + " (mapped)"));
  EXPECT_TRUE(Exists(dev_ + "/nvidia0"));

  Kill(holder);
  const Result done = Run(GPUOP_FAKE_NVIDIA_DRIVER, uninit, Env());
  EXPECT_EQ(done.code, 0) << done.out << done.err;
  EXPECT_THAT(done.out, HasSubstr(absl::StrCat("pid ", init)));
  EXPECT_EQ(Wait(init).code, 0);  // uninit stopped it
  EXPECT_THAT(Entries(dev_), IsEmpty());
}

TEST_F(NvidiaDriverTest, ASecondInitRefusesToRun) {
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  const pid_t init = StartInit(Env());
  ASSERT_GT(init, 0) << last_.out << last_.err;
  EXPECT_EQ(StartInit(Env()), 0);
  EXPECT_EQ(last_.code, kExitFailed);
  EXPECT_THAT(last_.err, HasSubstr(kAlreadyRunningMessage));
  kill(init, SIGTERM);
  EXPECT_EQ(Wait(init).code, 0);
}

TEST_F(NvidiaDriverTest, ABadScenarioFailsNamingIt) {
  const pid_t init = StartInit(Env("dgx-b300"));
  ASSERT_EQ(init, 0);
  EXPECT_EQ(last_.code, kExitFailed);
  EXPECT_THAT(last_.err, HasSubstr("no preset \"dgx-b300\""));
  EXPECT_THAT(Entries(dev_), IsEmpty());
}

TEST_F(NvidiaDriverTest, PublishesTheDriverRootWithRbindLikeTheRealContainer) {
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  // In a mount namespace of its own, so that its bind mount cannot outlive the test.
  const pid_t init = StartInit(Env(), /*private_mounts=*/true, "rbind");
  if (init == 0 && last_.code == 77) GTEST_SKIP() << "cannot make a mount namespace here";
  ASSERT_GT(init, 0) << last_.out << last_.err;
  const std::string seen = absl::StrCat("/proc/", init, "/root");
  EXPECT_TRUE(Exists(seen + Library() + "/libnvidia-ml.so.570.86.15"));
  EXPECT_TRUE(Exists(seen + driver_root_ + "/usr/bin/nvidia-smi"));
  EXPECT_THAT(Read(absl::StrCat("/proc/", init, "/mountinfo")),
              HasSubstr(absl::StrCat(" ", driver_root_, " ")));
  EXPECT_THAT(Read(out_), Not(HasSubstr("fallback")));
  EXPECT_THAT(Entries(driver_root_), IsEmpty());  // not in this namespace
  kill(init, SIGTERM);
  const Result stopped = Wait(init);
  EXPECT_EQ(stopped.code, 0) << stopped.out << stopped.err;
  EXPECT_THAT(stopped.out, HasSubstr("Unmounting NVIDIA driver rootfs..."));
}

TEST_F(NvidiaDriverTest, NvidiaSmiAnswersLikeTheRealOne) {
  if (void* real = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD); real != nullptr) {
    GTEST_SKIP() << "an NVML library is loaded in this process";
  }
  const std::string lib = dir_ + "/lib";
  ASSERT_EQ(mkdir(lib.c_str(), 0755), 0);
  const Result none = Run(GPUOP_FAKE_NVIDIA_SMI, {}, {absl::StrCat("LD_LIBRARY_PATH=", lib)});
  if (none.code != 12) GTEST_SKIP() << "this machine has an NVML library: " << none.out;
  EXPECT_THAT(none.out, HasSubstr("couldn't find libnvidia-ml.so"));

  // The tool the driver uses: a library carrying the scenario, looking for nodes in dev_.
  const Result embedded = Run(
      GPUOP_FAKE_NVIDIA_DRIVER,
      {"embed-scenario", "--library", absl::StrCat(GPUOP_FAKE_DRIVER_LIB_DIR, "/libnvidia-ml.so.1"),
       "--scenario", "l4-4x-pcie", "--out", lib + "/libnvidia-ml.so.1", "--node", "node-b",
       "--device-nodes", dev_},
      {});
  ASSERT_EQ(embedded.code, 0) << embedded.out << embedded.err;
  const std::vector<std::string> env = {absl::StrCat("LD_LIBRARY_PATH=", lib)};

  const Result unloaded = Run(GPUOP_FAKE_NVIDIA_SMI, {}, env);
  EXPECT_EQ(unloaded.code, 9);
  EXPECT_THAT(unloaded.out,
              HasSubstr("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                        "driver. Make sure that the latest NVIDIA driver is installed and "
                        "running."));

  std::ofstream(dev_ + "/nvidiactl").flush();  // outside /dev any file will do
  const Result empty = Run(GPUOP_FAKE_NVIDIA_SMI, {"-L"}, env);
  EXPECT_EQ(empty.code, 6);
  EXPECT_THAT(empty.out, HasSubstr("No devices were found"));

  std::ofstream(dev_ + "/nvidia1").flush();
  const Result one = Run(GPUOP_FAKE_NVIDIA_SMI, {}, env);
  EXPECT_EQ(one.code, 0) << one.out;
  EXPECT_THAT(one.out, HasSubstr("SIMULATED"));
  EXPECT_THAT(one.out, HasSubstr("GPU 0: NVIDIA L4 (UUID: GPU-"));
  EXPECT_EQ(Run(GPUOP_FAKE_NVIDIA_SMI, {"-q"}, env).code, 2);
}

// nvidia-smi -r: each GPU named by index, PCI bus id (either spelling) or UUID is reset through
// the simulated NVML, unless another process uses it; the reset is the node's (the state file
// beside the installed library), and a driver reload starts the node's MIG state again.
TEST_F(NvidiaDriverTest, NvidiaSmisTheGpusNoOtherProcessUses) {
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  pid_t init = StartInit(Env("a100-8x-mig"));
  ASSERT_GT(init, 0) << last_.out << last_.err;
  absl::StatusOr<fakenvml::Scenario> scenario =
      fakenvml::ParseScenario(Read(Preset("a100-8x-mig")), Preset("a100-8x-mig"), "node-a");
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  const std::vector<std::string> env = {absl::StrCat("LD_LIBRARY_PATH=", Library())};
  auto mig_lines = [&] {
    const Result listed = Run(GPUOP_FAKE_NVIDIA_SMI, {"-L"}, env);
    EXPECT_EQ(listed.code, 0) << listed.out;
    const std::vector<std::string> lines = absl::StrSplit(listed.out, '\n', absl::SkipEmpty());
    return lines.size() - 8;
  };
  EXPECT_EQ(mig_lines(), 7u + 2 + 4) << "GPUs 0, 1 and 2 are partitioned";

  const Result some = Run(
      GPUOP_FAKE_NVIDIA_SMI,
      {"-r", "-i", absl::StrCat("0,00000000:0F:00.0,", scenario->gpus[2].uuid, ",0000:4e:00.0")},
      env);
  EXPECT_EQ(some.code, 0) << some.out << some.err;
  EXPECT_EQ(some.out,
            "GPU 00000000:07:00.0 was successfully reset.\n"
            "GPU 00000000:0F:00.0 was successfully reset.\n"
            "GPU 00000000:47:00.0 was successfully reset.\n"
            "GPU 00000000:4E:00.0 was successfully reset.\n"
            "All done.\n");
  EXPECT_EQ(mig_lines(), 0u) << "a reset destroys the GPU's instances, for every process";

  const std::string node = dev_ + "/nvidia3";
  const pid_t holder = Holder([&] { return open(node.c_str(), O_RDWR) >= 0; });
  ASSERT_GT(holder, 0);
  const Result busy = Run(GPUOP_FAKE_NVIDIA_SMI, {"--gpu-reset", "--id=3"}, env);
  EXPECT_EQ(busy.code, 255) << busy.out;
  EXPECT_THAT(busy.out, HasSubstr("GPU 00000000:4E:00.0 was not reset: another process is using "
                                  "it. Stop every process that uses the GPU"));
  EXPECT_THAT(busy.out, Not(HasSubstr("All done.")));
  const Result every = Run(GPUOP_FAKE_NVIDIA_SMI, {"-r"}, env);
  EXPECT_EQ(every.code, 255) << every.out;
  EXPECT_THAT(every.out, HasSubstr("GPU 00000000:BD:00.0 was successfully reset."));
  Kill(holder);
  const Result all = Run(GPUOP_FAKE_NVIDIA_SMI, {"-r"}, env);
  EXPECT_EQ(all.code, 0) << all.out;
  EXPECT_THAT(all.out, HasSubstr("GPU 00000000:4E:00.0 was successfully reset.\nGPU "));
  EXPECT_THAT(all.out, HasSubstr("All done.\n"));

  for (const char* id : {"8", "GPU-00000000-0000-0000-0000-000000000000", "0000:99:00.0", "x"}) {
    const Result unknown = Run(GPUOP_FAKE_NVIDIA_SMI, {"-r", "-i", id}, env);
    EXPECT_EQ(unknown.code, 6) << id << ": " << unknown.out;
    EXPECT_THAT(unknown.out, HasSubstr("No devices were found")) << id;
  }
  EXPECT_EQ(Run(GPUOP_FAKE_NVIDIA_SMI, {"-r", "-L"}, env).code, 2);
  EXPECT_EQ(Run(GPUOP_FAKE_NVIDIA_SMI, {"-i", "0"}, env).code, 2);

  // A reload resets every GPU: the scenario's layout again.
  kill(init, SIGTERM);
  ASSERT_EQ(Wait(init).code, 0);
  init = StartInit(Env("a100-8x-mig"));
  ASSERT_GT(init, 0) << last_.out << last_.err;
  EXPECT_EQ(mig_lines(), 13u);
  kill(init, SIGTERM);
  EXPECT_EQ(Wait(init).code, 0);
}

TEST_F(NvidiaDriverTest, NvidiaSmiNeedsTheSimulatedNvml) {
  // A real NVML has every nvml* entry point and no simulated reset: the fake with its reset's
  // name changed in the file stands in for one.
  std::string image = Read(absl::StrCat(GPUOP_FAKE_DRIVER_LIB_DIR, "/libnvidia-ml.so.1"));
  const std::string name = "gpuop_fake_nvml_reset_gpu";
  ASSERT_NE(image.find(name), std::string::npos);
  for (size_t at = image.find(name); at != std::string::npos; at = image.find(name, at)) {
    image.replace(at, name.size(), "gpuop_fake_nvml_reset_off");
  }
  const std::string lib = dir_ + "/lib";
  ASSERT_EQ(mkdir(lib.c_str(), 0755), 0);
  std::ofstream(lib + "/libnvidia-ml.so.1", std::ios::binary) << image;
  const Result result = Run(GPUOP_FAKE_NVIDIA_SMI, {"-r"},
                            {absl::StrCat("LD_LIBRARY_PATH=", lib),
                             absl::StrCat("GPUOP_FAKE_NVML_SCENARIO=", Preset("l4-4x-pcie"))});
  EXPECT_EQ(result.code, 3) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("only that one can reset a simulated GPU"));
  const Result listed = Run(GPUOP_FAKE_NVIDIA_SMI, {"-L"},
                            {absl::StrCat("LD_LIBRARY_PATH=", lib),
                             absl::StrCat("GPUOP_FAKE_NVML_SCENARIO=", Preset("l4-4x-pcie"))});
  EXPECT_EQ(listed.code, 0) << "the rest still loads: " << listed.out << listed.err;
}

}  // namespace
}  // namespace gpuop::fakedriver
