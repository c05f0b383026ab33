#ifndef GPUOP_AGENT_CDI_HOOK_OCI_STATE_H_
#define GPUOP_AGENT_CDI_HOOK_OCI_STATE_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "agent/cdi/hook/status.h"

namespace gpuop::agent::cdi::hook {

// What a hook needs to know about the container it runs for.
struct ContainerState {
  std::string id;
  std::string bundle;  // absolute, on the host
  std::string root;    // the root file system, absolute, on the host
};

// Reads a file (at most `max_size` bytes); nullopt when it does not exist.
using ReadFileFn =
    std::function<StatusOr<std::optional<std::string>>(const std::string& path, size_t max_size)>;

// The largest state and config.json accepted.
inline constexpr size_t kMaxStateSize = 1 << 20;
inline constexpr size_t kMaxConfigSize = 16 << 20;

// Parses the OCI runtime-spec State a runtime writes to a hook's standard input ({"ociVersion",
// "id", "status", "pid", "bundle", "annotations"}), then reads <bundle>/config.json for
// root.path (relative to the bundle when not absolute). Both are untrusted text: a malformed
// document, a missing or non-string field, a relative bundle and a root that is the host's "/"
// (lexically, after joining) are errors naming the field. Never throws.
StatusOr<ContainerState> ParseContainerState(std::string_view state_json,
                                             const ReadFileFn& read_file);

// ReadFileFn on the host's files.
StatusOr<std::optional<std::string>> ReadHostFile(const std::string& path, size_t max_size);

}  // namespace gpuop::agent::cdi::hook

#endif  // GPUOP_AGENT_CDI_HOOK_OCI_STATE_H_
