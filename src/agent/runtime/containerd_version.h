#ifndef GPUOP_AGENT_RUNTIME_CONTAINERD_VERSION_H_
#define GPUOP_AGENT_RUNTIME_CONTAINERD_VERSION_H_

// Which containerd reads the configuration: its Version service over its socket (what
// `ctr version` asks). The configuration alone does not tell: a file without `version` means
// different things to containerd 1.x and 2.x (runtime.h, Options::containerd_major).

#include <filesystem>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gpuop::agent::runtime {

// Where containerd serves its API on a host, in the order tried (as the host sees them).
inline constexpr const char* kContainerdSockets[] = {"/run/containerd/containerd.sock",
                                                     "/var/run/containerd/containerd.sock"};

// The major version in a containerd version string: 2 for "v2.2.9", "2.1.0-rc.1" or
// "1.7.27+unknown" gives 1. InvalidArgument naming the text otherwise.
[[nodiscard]] absl::StatusOr<int> ParseContainerdMajor(absl::string_view version);

// Asks the containerd listening on the unix socket `socket` for its version and returns the
// major. Unavailable when nothing answers within `timeout`; InvalidArgument for a version it
// cannot read.
[[nodiscard]] absl::StatusOr<int> AskContainerdMajor(const std::filesystem::path& socket,
                                                     absl::Duration timeout = absl::Seconds(5));

// AskContainerdMajor on each of kContainerdSockets under `host_root` in turn; the first answer,
// or the last error.
[[nodiscard]] absl::StatusOr<int> HostContainerdMajor(const std::filesystem::path& host_root);

}  // namespace gpuop::agent::runtime

#endif  // GPUOP_AGENT_RUNTIME_CONTAINERD_VERSION_H_
