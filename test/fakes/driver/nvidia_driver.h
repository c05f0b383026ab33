#ifndef GPUOP_TEST_FAKES_DRIVER_NVIDIA_DRIVER_H_
#define GPUOP_TEST_FAKES_DRIVER_NVIDIA_DRIVER_H_

// SIMULATED: the contract of NVIDIA's driver container (the `nvidia-driver` entry point of its
// gpu-driver-container images) as the GPU operator's driver DaemonSet uses it, without kernel
// modules or GPUs. README.md describes the contract; main.cc parses the command line.

#include <string>
#include <vector>

#include "test/fakes/driver/driver_root.h"

namespace gpuop::fakedriver {

inline constexpr const char* kDefaultScenario = "h100-8x-nvswitch";
inline constexpr const char* kInUseMessage =
    "Could not unload NVIDIA driver kernel modules, driver is in use";
inline constexpr const char* kAlreadyRunningMessage =
    "An instance of the NVIDIA driver is already running, aborting";

struct Options {
  std::string root = "/";         // --root: where the user-space driver is installed
  std::string dev_root = "/dev";  // --dev-root: where the device nodes are created
  std::string driver_root = "/run/nvidia/driver";  // --driver-root: published for the node
  std::string run_dir = "/run/nvidia";             // --run-dir: nvidia-driver.pid, validations/
  std::string lib_dir = "/usr/share/gpuop-simulated/lib";  // --lib-dir: the fakes and presets
  std::string proc = "/proc";                              // --proc: where to look for holders
  // --proc-driver or GPUOP_SIMULATED_PROC_DRIVER: where to write the kernel module's MIG
  // capability files (proc_entries.h); empty: none.
  std::string proc_driver;
  Publish publish = Publish::kAuto;  // --publish auto|rbind|tree
  std::string scenario;              // GPUOP_SIMULATED_DRIVER_SCENARIO; empty: the default
  std::string node_name;             // NODE_NAME
};

// Exit codes.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // in use, already running, a bad scenario, a failed step
inline constexpr int kExitUsage = 2;

// `nvidia-driver init`: sets everything up, waits for SIGTERM/SIGINT/SIGHUP/SIGQUIT, then
// unloads (RunUninit's rules). Returns the exit code.
int RunInit(const Options& options);

// `nvidia-driver uninit`: unloads unless the driver is in use, then stops a running init.
int RunUninit(const Options& options);

// The scenario file `value` names: a path (contains '/' or ends in .yaml/.yml) or a preset in
// <lib_dir>/scenarios/; empty: the default preset. Errors name what was looked for.
absl::StatusOr<std::string> ResolveScenario(const std::string& value, const std::string& lib_dir);

}  // namespace gpuop::fakedriver

#endif  // GPUOP_TEST_FAKES_DRIVER_NVIDIA_DRIVER_H_
