#ifndef GPUOP_AGENT_RUNTIME_HOST_FILES_H_
#define GPUOP_AGENT_RUNTIME_HOST_FILES_H_

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::agent::runtime {

// The host's configuration files, seen through the directory where the host's root is mounted
// ("/" on the host itself, "/host" in the agent's container, a temp dir in tests). Paths in and
// out are host paths ("/etc/containerd/config.toml"); error messages name them that way.
//
// Only regular files are read or written: a symbolic link is refused (FailedPrecondition), since
// an absolute link target would resolve outside the host root, and replacing a link with a file
// would silently detach whatever the link pointed to. Every write goes through
// common::WriteFileAtomically. Not thread-safe beyond what the filesystem gives.
class HostFiles {
 public:
  explicit HostFiles(std::filesystem::path root) : root_(std::move(root)) {}

  const std::filesystem::path& root() const { return root_; }

  // Where `host_path` (absolute) is in this process's view.
  std::filesystem::path Resolve(const std::filesystem::path& host_path) const;

  // The file's bytes, or nullopt when it does not exist.
  [[nodiscard]] absl::StatusOr<std::optional<std::string>> Read(
      const std::filesystem::path& host_path) const;

  // The file's permission bits, or nullopt when it does not exist.
  [[nodiscard]] absl::StatusOr<std::optional<std::filesystem::perms>> Permissions(
      const std::filesystem::path& host_path) const;

  // True when something (of any type) exists at `host_path`.
  bool Exists(const std::filesystem::path& host_path) const;

  // Atomically replaces the file with `content` and `mode`.
  [[nodiscard]] absl::Status Write(const std::filesystem::path& host_path,
                                   absl::string_view content, std::filesystem::perms mode) const;

  // Removes the file and makes the removal durable; OK when it does not exist.
  [[nodiscard]] absl::Status Remove(const std::filesystem::path& host_path) const;

  // The host paths matching `host_pattern` (glob(3) syntax, '*' does not cross '/'), sorted
  // bytewise as containerd sorts them. A pattern without wildcards yields itself when it exists.
  [[nodiscard]] absl::StatusOr<std::vector<std::filesystem::path>> Glob(
      absl::string_view host_pattern) const;

 private:
  absl::Status CheckRegular(const std::filesystem::path& host_path) const;

  std::filesystem::path root_;
};

}  // namespace gpuop::agent::runtime

#endif  // GPUOP_AGENT_RUNTIME_HOST_FILES_H_
