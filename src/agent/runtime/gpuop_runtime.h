#ifndef GPUOP_AGENT_RUNTIME_GPUOP_RUNTIME_H_
#define GPUOP_AGENT_RUNTIME_GPUOP_RUNTIME_H_

// gpuop-container-runtime, the program gpuop's own runtime handler runs
// (Options::add_gpuop_runtime): a runc wrapper that ships in gpuop's image beside gpuop-agent.
// The runtime runs it in the host's mount namespace, so it must be a host file: it is installed
// on the host before the handler is configured and removed after the handler is taken out.

#include <filesystem>

#include "absl/status/statusor.h"
#include "agent/runtime/host_files.h"
#include "agent/runtime/runtime.h"

namespace gpuop::agent::runtime {

// The program's file name, in gpuop's image and on the host.
inline constexpr char kGpuopRuntimeProgram[] = "gpuop-container-runtime";

// Copies `source` (as this process opens it) to options.gpuop_runtime_binary on the host behind
// `files`, unless it already holds the same bytes with mode 0755: common::InstallExecutable,
// atomic, so a container starting meanwhile runs the old program or the new one. Returns true
// when it wrote. InvalidArgument for options ValidateOptions refuses (as if add_gpuop_runtime
// were set); NotFound naming `source` when it is missing; other errors name the file.
[[nodiscard]] absl::StatusOr<bool> InstallGpuopRuntime(const HostFiles& files,
                                                       const std::filesystem::path& source,
                                                       const Options& options);

// Removes options.gpuop_runtime_binary from the host behind `files`: that file only, not its
// directory, which gpuop's other components share. Returns true when there was one. Call it only
// after Configurator::Unconfigure has taken the handler out, so that no configuration is left
// naming a missing program. InvalidArgument as InstallGpuopRuntime; FailedPrecondition when
// something other than a regular file is there.
[[nodiscard]] absl::StatusOr<bool> RemoveGpuopRuntime(const HostFiles& files,
                                                      const Options& options);

}  // namespace gpuop::agent::runtime

#endif  // GPUOP_AGENT_RUNTIME_GPUOP_RUNTIME_H_
