#ifndef GPUOP_AGENT_RUNTIME_DOCKER_H_
#define GPUOP_AGENT_RUNTIME_DOCKER_H_

// Docker's configuration: /etc/docker/daemon.json, edited as JSON (dockerd has no drop-ins).

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/runtime/host_files.h"
#include "agent/runtime/plan.h"
#include "agent/runtime/runtime.h"

namespace gpuop::agent::runtime {

inline constexpr char kDockerConfigPath[] = "/etc/docker/daemon.json";

// daemon.json with gpuop's keys: "features": {"cdi": true} (and "cdi-spec-dirs" when the
// directories differ from Docker's default) when enable_cdi; "runtimes": {"<runtime_name>":
// {"path": runtime_binary, "args": []}} when add_nvidia_runtime, unless an entry of that name is
// there already, which is kept as it is (and said in `notes` when its path is another);
// "runtimes": {"<gpuop_runtime_name>": {"path": gpuop_runtime_binary}} when add_gpuop_runtime,
// replacing an entry of that name that differs (gpuop owns the name; said in `notes`);
// "default-runtime" = runtime_name when set_as_default (gpuop's handler is never the default).
// Every other key, and the order of keys, is kept; the document is re-indented
// with the file's own indentation. When `current` already holds all of that, it is returned
// byte for byte. nullopt (no file) starts from {}. FailedPrecondition naming the file, line and
// problem for invalid JSON, a top level that is not an object, or a wrong type at a key gpuop
// touches.
[[nodiscard]] absl::StatusOr<std::string> EditDaemonJson(const std::optional<std::string>& current,
                                                         const Options& options,
                                                         std::vector<std::string>* notes = nullptr);

// daemon.json, bound to `files` (which must outlive the plan); notes as ContainerdPlan.
Plan DockerPlan(const HostFiles& files, const Options& options,
                std::vector<std::string>* notes = nullptr);

}  // namespace gpuop::agent::runtime

#endif  // GPUOP_AGENT_RUNTIME_DOCKER_H_
