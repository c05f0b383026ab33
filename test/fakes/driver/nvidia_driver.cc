#include "test/fakes/driver/nvidia_driver.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "test/fakes/driver/holders.h"
#include "test/fakes/driver/nodes.h"
#include "test/fakes/driver/proc_entries.h"
#include "test/fakes/nvml/embedded_scenario.h"
#include "test/fakes/nvml/node_control.h"
#include "test/fakes/nvml/scenario.h"

namespace gpuop::fakedriver {
namespace {

std::string Errno() { return std::strerror(errno); }

void Say(const std::string& line) { std::printf("%s\n", line.c_str()); }
void Complain(const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }

std::string PidFile(const Options& options) { return options.run_dir + "/nvidia-driver.pid"; }
std::string ReadyFile(const Options& options) {
  return options.run_dir + "/validations/.driver-ctr-ready";
}

std::string KernelRelease() {
  utsname name{};
  return uname(&name) == 0 ? name.release : "unknown";
}

// The versioned libraries under <dir>/usr/lib/x86_64-linux-gnu, whatever their version.
void AddLibraries(const std::string& dir, std::vector<FileId>& out) {
  const std::string libraries = absl::StrCat(dir == "/" ? "" : dir, "/", kLibraryDir);
  DIR* handle = opendir(libraries.c_str());
  if (handle == nullptr) return;
  while (const dirent* entry = readdir(handle)) {
    const std::string name = entry->d_name;
    if (!absl::StartsWith(name, "libnvidia-ml.so.") && !absl::StartsWith(name, "libcuda.so.")) {
      continue;
    }
    FileId id;
    if (IdentifyFile(absl::StrCat(libraries, "/", name), &id)) out.push_back(id);
  }
  closedir(handle);
}

// Unloads the simulated driver unless a process holds it: removes the device nodes, the
// published driver root and the readiness file. False (after printing the holders and the real
// container's message) when it is in use.
absl::StatusOr<bool> Unload(const Options& options) {
  HolderQuery query;
  query.proc = options.proc;
  query.dev_root = options.dev_root;
  AddLibraries(options.root, query.libraries);
  AddLibraries(options.driver_root, query.libraries);
  const std::vector<Holder> holders = FindHolders(query);
  if (!holders.empty()) {
    Complain(absl::StrCat("SIMULATED: ", holders.size(),
                          holders.size() == 1 ? " process holds" : " processes hold",
                          " the NVIDIA driver (its device nodes or libraries):"));
    std::fputs(DescribeHolders(holders).c_str(), stderr);
    Complain(kInUseMessage);
    return false;
  }
  Say("Unloading NVIDIA driver kernel modules... (SIMULATED: removing the device nodes)");
  const std::vector<NodeSpec> nodes = WithExistingGpuNodes(options.dev_root, DriverNodes({}));
  if (absl::Status status = RemoveNodes(options.dev_root, nodes); !status.ok()) return status;
  if (!options.proc_driver.empty()) {
    if (absl::Status status = RemoveProcEntries(options.proc_driver); !status.ok()) return status;
  }
  if (DriverRootState(options.driver_root) != Published::kNone) {
    Say("Unmounting NVIDIA driver rootfs...");
    if (absl::Status status = UnpublishDriverRoot(options.driver_root); !status.ok()) {
      return status;
    }
  }
  if (unlink(ReadyFile(options).c_str()) != 0 && errno != ENOENT) {
    return absl::UnavailableError(absl::StrCat("remove ", ReadyFile(options), ": ", Errno()));
  }
  return true;
}

bool Leftovers(const Options& options) {
  return AnyNodeExists(options.dev_root, WithExistingGpuNodes(options.dev_root, DriverNodes({}))) ||
         DriverRootState(options.driver_root) != Published::kNone;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("read ", path, ": ", Errno()));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The nvidia-smi to install when the root has none: the one beside this program.
std::string NvidiaSmiSource() {
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length > 0) {
    std::string path(self, static_cast<size_t>(length));
    const size_t slash = path.rfind('/');
    if (slash != std::string::npos) {
      const std::string beside = path.substr(0, slash + 1) + "nvidia-smi";
      if (access(beside.c_str(), X_OK) == 0) return beside;
    }
  }
  return "/usr/bin/nvidia-smi";
}

class PidFileLock {
 public:
  ~PidFileLock() {
    if (fd_ >= 0) close(fd_);
  }
  // False with `why` set when another instance holds the file or it cannot be written.
  bool Acquire(const std::string& path, std::string* why) {
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      *why = absl::StrCat("open ", path, ": ", Errno());
      return false;
    }
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      *why = kAlreadyRunningMessage;
      return false;
    }
    const std::string pid = absl::StrCat(getpid(), "\n");
    if (ftruncate(fd_, 0) != 0 ||
        pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
      *why = absl::StrCat("write ", path, ": ", Errno());
      return false;
    }
    return true;
  }

 private:
  int fd_ = -1;
};

// The pid of a running init, from its locked pid file; 0 when none runs.
pid_t RunningInstance(const Options& options) {
  const int fd = open(PidFile(options).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  pid_t pid = 0;
  if (flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    char text[32] = {};
    const ssize_t got = pread(fd, text, sizeof(text) - 1, 0);
    int value = 0;
    if (got > 0 && absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &value)) pid = value;
  }
  close(fd);
  return pid == getpid() ? 0 : pid;
}

int Fail(const absl::Status& status) {
  Complain(absl::StrCat("nvidia-driver: ", status.message()));
  return kExitFailed;
}

}  // namespace

absl::StatusOr<std::string> ResolveScenario(const std::string& value, const std::string& lib_dir) {
  const std::string name = value.empty() ? kDefaultScenario : value;
  if (absl::StrContains(name, '/') || absl::EndsWith(name, ".yaml") ||
      absl::EndsWith(name, ".yml")) {
    return name;
  }
  const std::string preset = absl::StrCat(lib_dir, "/scenarios/", name, ".yaml");
  if (access(preset.c_str(), R_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("GPUOP_SIMULATED_DRIVER_SCENARIO: no preset \"", name,
                                            "\" (looked for ", preset, ")"));
  }
  return preset;
}

int RunInit(const Options& options) {
  // Signals wait until the set-up is done, and are then taken by sigwait.
  sigset_t signals;
  sigemptyset(&signals);
  for (const int signal : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&signals, signal);
  sigset_t blocked = signals;
  sigaddset(&blocked, SIGPIPE);
  sigprocmask(SIG_BLOCK, &blocked, nullptr);

  absl::StatusOr<std::string> path = ResolveScenario(options.scenario, options.lib_dir);
  if (!path.ok()) return Fail(path.status());
  absl::StatusOr<std::string> text = ReadFile(*path);
  if (!text.ok()) return Fail(text.status());
  absl::StatusOr<fakenvml::Scenario> scenario =
      fakenvml::ParseScenario(*text, *path, options.node_name);
  if (!scenario.ok()) {
    return Fail(absl::Status(scenario.status().code(),
                             absl::StrCat("scenario ", *path, ": ", scenario.status().message())));
  }
  // The nodes this init creates stand for the kernel module's; the library finds them relative
  // to itself, wherever the driver root is mounted (README.md, "Device nodes").
  const std::string module_nodes =
      std::filesystem::path(options.dev_root)
          .lexically_relative(std::filesystem::path(options.root) / kLibraryDir)
          .string();
  absl::StatusOr<std::string> embedded = fakenvml::MakeEmbeddedScenario(
      *text, *path, options.node_name, options.dev_root, module_nodes);
  if (!embedded.ok()) return Fail(embedded.status());
  const std::string& version = scenario->driver_version;

  Say("\n========== NVIDIA Software Installer (SIMULATED) ==========\n");
  Say(absl::StrCat(
      "SIMULATED: gpuop's stand-in for NVIDIA's driver container: no kernel module is built or "
      "loaded and there is no GPU. The device nodes are character devices 1:7 and the libraries "
      "are gpuop's fake NVML and CUDA, playing scenario ",
      *path, options.node_name.empty() ? "" : absl::StrCat(" for node ", options.node_name), " (",
      scenario->gpus.size(), " GPUs)."));
  Say(absl::StrCat("Starting installation of NVIDIA driver version ", version,
                   " for Linux kernel version ", KernelRelease(), "\n"));

  if (absl::Status status = MakeDirectories(options.run_dir); !status.ok()) return Fail(status);
  PidFileLock lock;
  std::string why;
  if (!lock.Acquire(PidFile(options), &why)) {
    Complain(why);
    return kExitFailed;
  }
  unlink(ReadyFile(options).c_str());  // not ready until the startup probe says so again

  if (Leftovers(options)) {
    Say("Found the driver of a previous instance; unloading it first...");
    absl::StatusOr<bool> unloaded = Unload(options);
    if (!unloaded.ok()) return Fail(unloaded.status());
    if (!*unloaded) return kExitFailed;
  }

  Say("Installing NVIDIA driver kernel modules... (SIMULATED: none)");
  Say("Loading NVIDIA driver kernel modules... (SIMULATED: none)");
  std::vector<unsigned int> minors;
  for (const fakenvml::GpuSpec& gpu : scenario->gpus) minors.push_back(gpu.minor_number);
  const std::vector<NodeSpec> nodes = DriverNodes(minors);
  Say(absl::StrCat("Creating the NVIDIA device nodes in ", options.dev_root,
                   " (SIMULATED: character devices ", kNodeMajor, ":", kNodeMinor, ")"));
  if (absl::Status status = MakeDirectories(options.dev_root); !status.ok()) return Fail(status);
  if (absl::Status status = CreateNodes(options.dev_root, nodes); !status.ok()) {
    return Fail(status);
  }
  if (!options.proc_driver.empty()) {
    Say(absl::StrCat("Publishing the MIG capability files in ", options.proc_driver,
                     " (SIMULATED: the node mounts it over /proc/driver)"));
    if (absl::Status status = WriteProcEntries(options.proc_driver, minors); !status.ok()) {
      return Fail(status);
    }
  }

  Say(absl::StrCat("Installing the NVIDIA user-space driver in ", options.root,
                   " (SIMULATED: the fake libnvidia-ml.so.", version, " and libcuda.so.", version,
                   ")"));
  absl::StatusOr<Installed> installed = InstallUserspace({.root = options.root,
                                                          .lib_dir = options.lib_dir,
                                                          .version = version,
                                                          .scenario_yaml = *embedded,
                                                          .nvidia_smi = NvidiaSmiSource()});
  if (!installed.ok()) return Fail(installed.status());
  // The node's control file for the fake NVML (test/fakes/nvml/README.md): empty after a load,
  // as a reload resets every GPU (a GPU off the bus answers again). Likewise the node's MIG state
  // goes: every GPU starts again from the scenario's MIG mode and instances. (A published tree
  // copies the library, so its directory is another; the tree is new at each load.)
  {
    const std::filesystem::path libraries = std::filesystem::path(options.root) / kLibraryDir;
    const std::string control = (libraries / fakenvml::kNodeControlFile).string();
    std::ofstream(control, std::ios::trunc).flush();
    chmod(control.c_str(), 0644);
    for (const std::filesystem::path& dir :
         {libraries, std::filesystem::path(options.driver_root) / kLibraryDir}) {
      const std::string state = (dir / fakenvml::kNodeStateFile).string();
      if (unlink(state.c_str()) != 0 && errno != ENOENT && errno != ENOTDIR) {
        return Fail(absl::UnavailableError(absl::StrCat("remove ", state, ": ", Errno())));
      }
    }
  }

  Say("Mounting NVIDIA driver rootfs...");
  absl::StatusOr<Published> published =
      PublishDriverRoot(options.root, version, options.driver_root, options.publish, nodes, Say);
  if (!published.ok()) return Fail(published.status());

  Say("Done, now waiting for signal");
  while (true) {
    int signal = 0;
    if (sigwait(&signals, &signal) != 0) continue;
    Say("Caught signal");
    absl::StatusOr<bool> unloaded = Unload(options);
    if (!unloaded.ok()) return Fail(unloaded.status());
    if (!*unloaded) return kExitFailed;
    unlink(PidFile(options).c_str());
    return kExitOk;
  }
}

int RunUninit(const Options& options) {
  const pid_t instance = RunningInstance(options);
  absl::StatusOr<bool> unloaded = Unload(options);
  if (!unloaded.ok()) return Fail(unloaded.status());
  if (!*unloaded) return kExitFailed;
  if (instance > 0) {
    Say(absl::StrCat("Stopping the running nvidia-driver init (pid ", instance, ")"));
    if (kill(instance, SIGTERM) != 0 && errno != ESRCH) {
      return Fail(absl::UnavailableError(absl::StrCat("kill ", instance, ": ", Errno())));
    }
  } else {
    unlink(PidFile(options).c_str());
  }
  return kExitOk;
}

}  // namespace gpuop::fakedriver
