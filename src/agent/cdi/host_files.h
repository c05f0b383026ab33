#ifndef GPUOP_AGENT_CDI_HOST_FILES_H_
#define GPUOP_AGENT_CDI_HOST_FILES_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/cdi/spec.h"

namespace gpuop::agent::cdi {

// How the generators look at the host's files. Every path in a spec is a host path as the
// container runtime sees it ("/dev/nvidia0", "/run/nvidia/driver/usr/bin/nvidia-smi"); the agent
// may see the host's root elsewhere (a container mounting it at "/host", a temp tree in tests),
// so it opens `sysroot` + host path. Nothing under `sysroot` ever appears in a spec.

// The kind and numbers of a device node.
struct DeviceNumbers {
  std::string type;  // "c" or "b"
  int64_t major = 0;
  int64_t minor = 0;

  friend bool operator==(const DeviceNumbers&, const DeviceNumbers&) = default;
};

// Looks at the node at `path` (as this process opens it): NotFound when nothing is there; nullopt
// when it exists but is not a character or block device; other errors name the path.
using DeviceStatFn =
    std::function<absl::StatusOr<std::optional<DeviceNumbers>>(const std::filesystem::path& path)>;

// The real DeviceStatFn: stat(2), following symlinks like the runtime does.
[[nodiscard]] absl::StatusOr<std::optional<DeviceNumbers>> StatDeviceNode(
    const std::filesystem::path& path);

struct HostFiles {
  std::string sysroot;  // "" = this process sees the host's root as "/"
  // Called from Generate, possibly from several threads at once when Generate is.
  DeviceStatFn stat = StatDeviceNode;
  // Write type/major/minor of real device nodes into the spec. When false (the default, or when
  // the node is not a device), the runtime fills them in from hostPath at container creation
  // (the CDI library stats it), which also follows a node whose major changed since generation:
  // nvidia-uvm's and nvidia-caps' majors are allocated when the module loads.
  bool record_device_numbers = false;

  // `host_path` as this process opens it.
  std::filesystem::path Open(absl::string_view host_path) const;

  // The edit for a device node the container sees at `container_path` and the host has at
  // `host_path`. hostPath is set only when the two differ. NotFound naming the path when the
  // host has no such node.
  [[nodiscard]] absl::StatusOr<DeviceNode> Node(const std::string& container_path,
                                                const std::string& host_path) const;
};

// "/run/nvidia/driver" + "usr/lib64" = "/run/nvidia/driver/usr/lib64"; "/" + "usr" = "/usr".
std::string JoinPath(absl::string_view base, absl::string_view relative);

// Resolves `relative` (a path inside `root_on_disk`, the directory this process opens as that
// root) component by component the way a chroot at that root would: absolute symlink targets
// and ".." stay inside the root. Returns the resolved path relative to the root, nullopt when
// some component does not exist or symlinks loop, and an error for other failures (EACCES).
[[nodiscard]] absl::StatusOr<std::optional<std::filesystem::path>> ResolveInRoot(
    const std::filesystem::path& root_on_disk, const std::filesystem::path& relative);

}  // namespace gpuop::agent::cdi

#endif  // GPUOP_AGENT_CDI_HOST_FILES_H_
