#ifndef GPUOP_AGENT_CDI_INJECT_FIND_RUNC_H_
#define GPUOP_AGENT_CDI_INJECT_FIND_RUNC_H_

#include <optional>
#include <string>

#include <sys/types.h>

#include "agent/cdi/inject/status.h"

// Which runc gpuop-container-runtime hands each command to.
namespace gpuop::agent::cdi::inject {

// The environment variable naming the real runtime (an absolute path) instead of a PATH search.
inline constexpr char kRuncEnv[] = "GPUOP_RUNC";
// The search path when PATH is unset.
inline constexpr char kDefaultPath[] =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// A file's identity: the wrapper compares candidates with its own executable by identity, so a
// `runc` that is the wrapper itself (a copy's hard link, a symlink to it) is never chosen.
struct FileId {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const FileId&) const = default;
};

// The identity of the running executable (/proc/self/exe).
StatusOr<FileId> SelfId();

// The runtime to execute: `runc_override` (GPUOP_RUNC) when set, which must be an absolute path
// to an executable file that is not `self`; otherwise the first `runc` in `path` (PATH's value,
// kDefaultPath when unset) that is an executable regular file other than `self`, or, where `path`
// has no runc, the first such `crun` (crun takes runc's command line). Relative and
// empty PATH entries are skipped: the runtime must not depend on the current directory, which
// runc's callers set to the bundle. An error says what was searched.
StatusOr<std::string> FindRunc(const std::optional<std::string>& runc_override,
                               const std::optional<std::string>& path, const FileId& self);

}  // namespace gpuop::agent::cdi::inject

#endif  // GPUOP_AGENT_CDI_INJECT_FIND_RUNC_H_
