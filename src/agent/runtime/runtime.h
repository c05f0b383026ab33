#ifndef GPUOP_AGENT_RUNTIME_RUNTIME_H_
#define GPUOP_AGENT_RUNTIME_RUNTIME_H_

// Types shared by the container runtime configuration: which runtime, what gpuop wants in its
// configuration, and the reports of configure, unconfigure and status.

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::agent::runtime {

enum class Runtime { kContainerd, kCrio, kDocker };

// "containerd", "cri-o", "docker".
std::string RuntimeName(Runtime runtime);

// Parses "containerd", "crio" / "cri-o" or "docker" (case-insensitive).
[[nodiscard]] absl::StatusOr<Runtime> ParseRuntime(absl::string_view name);

// Where the runtime component installs gpuop-container-runtime on the host, and what gpuop's
// handler names.
inline constexpr char kGpuopRuntimeBinary[] = "/var/lib/gpuop/bin/gpuop-container-runtime";

// What gpuop wants in the runtime's configuration.
struct Options {
  // Turn CDI on and set its spec directories. When false, gpuop leaves the CDI settings as the
  // node has them (it never turns CDI off).
  bool enable_cdi = true;
  // Later directories take precedence (containerd, CRI-O). Docker gets them only when they
  // differ from its built-in default, which is this same list.
  std::vector<std::string> cdi_spec_dirs = {"/etc/cdi", "/var/run/cdi"};
  // Define a runtime handler `runtime_name` that runs `runtime_binary` (the NVIDIA container
  // runtime, a runc wrapper). Kubernetes selects it through a RuntimeClass with that handler.
  // On a host (Configurator) the handler is added only when the binary exists there, and a
  // handler of that name the node already defines is kept as it is, never replaced.
  bool add_nvidia_runtime = false;
  std::string runtime_name = "nvidia";
  // As the host sees it. Empty: the first of kNvidiaRuntimeBinaries that exists on the host
  // (the Configurator fills it in; the renderers need it set).
  std::string runtime_binary;
  // Make `runtime_name` the runtime's default handler. Requires add_nvidia_runtime; on a host,
  // only when the handler is there (added, or the node's own).
  bool set_as_default = false;
  // Define gpuop's own runtime handler `gpuop_runtime_name`, which runs runc through
  // `gpuop_runtime_binary` (gpuop-container-runtime, a runc wrapper that applies the CDI devices
  // named in the container's environment): gpuop's node components get their GPU devices through
  // a RuntimeClass with this handler instead of running privileged. gpuop owns the name: an entry
  // of that name that differs is brought to what gpuop wants. Never the default handler. On a
  // host (Configurator) the handler is added only when the binary exists there
  // (InstallGpuopRuntime puts it there).
  bool add_gpuop_runtime = false;
  std::string gpuop_runtime_name = "gpuop";
  // As the host sees it.
  std::string gpuop_runtime_binary = kGpuopRuntimeBinary;
  // The major version of the containerd that reads the files (containerd_version.h asks the
  // daemon), 0 when unknown. The files alone do not tell: containerd 2.x merges imports key by
  // key (so a drop-in can hold only gpuop's changes) and ignores the CRI settings of a file
  // without `version`, which containerd 1.x reads as version 1 and whose CRI table it replaces
  // per file. Unknown, gpuop writes what both read, and refuses a file without `version`.
  int containerd_major = 0;
};

// Where the NVIDIA Container Toolkit puts nvidia-container-runtime: its packages, NVIDIA's GPU
// operator's toolkit container, a manual install. Searched in this order.
inline constexpr const char* kNvidiaRuntimeBinaries[] = {
    "/usr/bin/nvidia-container-runtime",
    "/usr/local/nvidia/toolkit/nvidia-container-runtime",
    "/usr/local/bin/nvidia-container-runtime",
};

// OK when `options` can be applied; otherwise InvalidArgument naming the field and the reason.
[[nodiscard]] absl::Status ValidateOptions(const Options& options);

// One file's state as `status` sees it.
enum class FileState {
  kConfigured,     // holds what gpuop wants
  kDrifted,        // gpuop configured it, but it no longer holds what gpuop wants
  kNotConfigured,  // gpuop has not configured it
};

std::string FileStateName(FileState state);  // "configured", "drifted", "not configured"

struct FileStatus {
  std::filesystem::path path;  // as seen on the host, e.g. /etc/containerd/config.toml
  FileState state = FileState::kNotConfigured;
  std::string detail;  // why, in words
};

struct StatusReport {
  Runtime runtime = Runtime::kContainerd;
  std::vector<FileStatus> files;
  // A configuration change was written but the runtime has not been restarted since (the restart
  // failed); the next configure or unconfigure retries it.
  bool restart_pending = false;
  // As ChangeReport::notes.
  std::vector<std::string> notes;

  // True when every file is configured and no restart is pending.
  bool Configured() const;
  // One line per file: "containerd: /etc/containerd/config.toml: configured (imports ...)".
  std::string Summary() const;
};

// What configure or unconfigure did.
struct ChangeReport {
  Runtime runtime = Runtime::kContainerd;
  // File changes in the order made: "wrote /etc/containerd/conf.d/99-gpuop.toml".
  std::vector<std::string> actions;
  // What the restart did ("restarted containerd (systemctl)"); empty when there was none.
  std::string restart;
  // Decisions worth telling ("nvidia runtime handler not added: ..."), in order, no repeats.
  std::vector<std::string> notes;

  bool Changed() const { return !actions.empty(); }
  // "containerd: wrote A, added imports to B; restarted containerd (systemctl)", or
  // "containerd: unchanged; no restart"; then one line per note ("containerd: note: ...").
  std::string Summary() const;
};

}  // namespace gpuop::agent::runtime

#endif  // GPUOP_AGENT_RUNTIME_RUNTIME_H_
