#ifndef GPUOP_COMMON_FILES_H_
#define GPUOP_COMMON_FILES_H_

#include <filesystem>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::common {

// Reads a whole file. NotFound when it does not exist; other errors carry errno and the path.
[[nodiscard]] absl::StatusOr<std::string> ReadFile(const std::filesystem::path& path);

// ReadFile, but a missing file is nullopt rather than an error.
[[nodiscard]] absl::StatusOr<std::optional<std::string>> ReadFileIfExists(
    const std::filesystem::path& path);

// Replaces `path` with `content` so that readers see either the old file or the new one, never a
// mix, and a crash leaves one of the two: writes a temporary file in the same directory, fsyncs
// it, renames it over `path` and fsyncs the directory. The file gets `mode`; missing parent
// directories are created. On any failure the original is untouched and the temporary removed.
[[nodiscard]] absl::Status WriteFileAtomically(
    const std::filesystem::path& path, absl::string_view content,
    std::filesystem::perms mode = std::filesystem::perms::owner_read |
                                  std::filesystem::perms::owner_write |
                                  std::filesystem::perms::group_read |
                                  std::filesystem::perms::others_read);

// Installs the program `source` (as this process opens it, e.g. in gpuop's image) at
// `destination` with mode 0755, unless it already holds the same bytes with that mode. The copy is
// WriteFileAtomically's, so something running the program meanwhile runs the old one or the new
// one, never a partial file; missing directories are created. Returns true when it wrote. Errors
// start with "install <what>" and name the file: NotFound for a missing source,
// FailedPrecondition for an empty one.
[[nodiscard]] absl::StatusOr<bool> InstallExecutable(const std::filesystem::path& source,
                                                     const std::filesystem::path& destination,
                                                     absl::string_view what);

// `name` in the directory of the running executable ("/usr/local/bin/<name>" for
// /usr/local/bin/gpuop-agent): where gpuop's image puts the programs it ships together. Falls back
// to /usr/local/bin when /proc/self/exe cannot be read.
std::filesystem::path BesideSelf(absl::string_view name);

}  // namespace gpuop::common

#endif  // GPUOP_COMMON_FILES_H_
