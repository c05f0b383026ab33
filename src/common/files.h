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

}  // namespace gpuop::common

#endif  // GPUOP_COMMON_FILES_H_
