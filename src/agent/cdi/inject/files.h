#ifndef GPUOP_AGENT_CDI_INJECT_FILES_H_
#define GPUOP_AGENT_CDI_INJECT_FILES_H_

#include <cstddef>
#include <string>

#include "agent/cdi/inject/status.h"

// File reading and replacing for the runtime wrapper.
namespace gpuop::agent::cdi::inject {

// The largest CDI spec and config.json read.
inline constexpr size_t kMaxFileSize = 16 << 20;

// The content of the regular file at `path` (symlinks followed), at most `max_size` bytes. Errors
// name the path and keep the errno (ENOENT when it does not exist).
StatusOr<std::string> ReadFileLimited(const std::string& path, size_t max_size = kMaxFileSize);

// Replaces the file at `path` with `content` so that a reader sees either the old or the new
// file, never a part: writes a temporary file in the same directory with `path`'s permission
// bits, fsyncs it, renames it over `path` and fsyncs the directory. The temporary file is removed
// on failure. `path` must exist.
Status ReplaceFileAtomically(const std::string& path, const std::string& content);

}  // namespace gpuop::agent::cdi::inject

#endif  // GPUOP_AGENT_CDI_INJECT_FILES_H_
