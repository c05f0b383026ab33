#include "agent/cdi/inject/find_runc.h"

#include <cerrno>
#include <cstring>
#include <string_view>

#include <sys/stat.h>
#include <unistd.h>

namespace gpuop::agent::cdi::inject {
namespace {

// Why `candidate` cannot be the runtime; empty when it can.
std::string Unusable(const std::string& candidate, const FileId& self) {
  struct stat info {};
  if (::stat(candidate.c_str(), &info) != 0) return std::strerror(errno);
  if (!S_ISREG(info.st_mode)) return "not a regular file";
  if (::access(candidate.c_str(), X_OK) != 0) return std::strerror(errno);
  if (FileId{info.st_dev, info.st_ino} == self) return "it is gpuop-container-runtime itself";
  return "";
}

}  // namespace

StatusOr<FileId> SelfId() {
  struct stat info {};
  if (::stat("/proc/self/exe", &info) != 0) {
    return Status::Error(std::string("stat /proc/self/exe: ") + std::strerror(errno), errno);
  }
  return FileId{info.st_dev, info.st_ino};
}

StatusOr<std::string> FindRunc(const std::optional<std::string>& runc_override,
                               const std::optional<std::string>& path, const FileId& self) {
  if (runc_override) {
    const std::string& runc = *runc_override;
    if (runc.empty() || runc.front() != '/') {
      return Status::Error(std::string(kRuncEnv) + "=\"" + runc + "\" is not an absolute path");
    }
    if (const std::string why = Unusable(runc, self); !why.empty()) {
      return Status::Error(std::string(kRuncEnv) + "=" + runc + " cannot be run: " + why);
    }
    return runc;
  }
  const std::string searched(path ? *path : std::string(kDefaultPath));
  // runc anywhere on PATH first; crun, which takes runc's command line, where there is no runc
  // (a CRI-O node with crun alone).
  for (const char* name : {"runc", "crun"}) {
    std::string_view dirs = searched;
    while (true) {
      const size_t colon = dirs.find(':');
      const std::string_view dir = dirs.substr(0, colon);
      if (!dir.empty() && dir.front() == '/') {
        std::string candidate(dir);
        if (candidate.back() != '/') candidate += '/';
        candidate += name;
        if (Unusable(candidate, self).empty()) return candidate;
      }
      if (colon == std::string_view::npos) break;
      dirs.remove_prefix(colon + 1);
    }
  }
  return Status::Error("no runc or crun found in PATH=" + searched +
                       " (other than this program); set " + kRuncEnv + " to its absolute path");
}

}  // namespace gpuop::agent::cdi::inject
