#include "agent/cdi/host_files.h"

#include <cerrno>
#include <deque>
#include <system_error>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace gpuop::agent::cdi {
namespace {

namespace fs = std::filesystem;

// Linux's limit on symlinks followed while resolving one path.
constexpr int kMaxSymlinks = 40;

}  // namespace

absl::StatusOr<std::optional<DeviceNumbers>> StatDeviceNode(const fs::path& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("stat device node ", path.string()));
  }
  if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) return std::nullopt;
  return DeviceNumbers{.type = S_ISCHR(st.st_mode) ? "c" : "b",
                       .major = static_cast<int64_t>(major(st.st_rdev)),
                       .minor = static_cast<int64_t>(minor(st.st_rdev))};
}

fs::path HostFiles::Open(absl::string_view host_path) const {
  if (sysroot.empty()) return fs::path(std::string(host_path));
  return fs::path(sysroot) / fs::path(std::string(host_path)).relative_path();
}

absl::StatusOr<DeviceNode> HostFiles::Node(const std::string& container_path,
                                           const std::string& host_path) const {
  absl::StatusOr<std::optional<DeviceNumbers>> numbers = stat(Open(host_path));
  if (!numbers.ok()) {
    if (absl::IsNotFound(numbers.status())) {
      return absl::NotFoundError(absl::StrCat("device node ", host_path, " does not exist"));
    }
    return numbers.status();
  }
  DeviceNode node{.path = container_path};
  if (host_path != container_path) node.host_path = host_path;
  if (record_device_numbers && numbers->has_value()) {
    node.type = (*numbers)->type;
    node.major = (*numbers)->major;
    node.minor = (*numbers)->minor;
  }
  return node;
}

std::string JoinPath(absl::string_view base, absl::string_view relative) {
  absl::string_view rel = relative;
  while (absl::ConsumePrefix(&rel, "/")) {
  }
  std::string out(base);
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  if (rel.empty()) return out.empty() ? "/" : out;
  if (out.empty() || out.back() != '/') out.push_back('/');
  return absl::StrCat(out, rel);
}

absl::StatusOr<std::optional<fs::path>> ResolveInRoot(const fs::path& root_on_disk,
                                                      const fs::path& relative) {
  const fs::path start = relative.relative_path();
  std::deque<fs::path> pending(start.begin(), start.end());
  fs::path resolved;  // relative to the root, normal
  int symlinks = 0;
  while (!pending.empty()) {
    const fs::path component = pending.front();
    pending.pop_front();
    if (component.empty() || component == ".") continue;
    if (component == "..") {
      resolved = resolved.parent_path();  // ".." at the root stays at the root
      continue;
    }
    const fs::path candidate = resolved / component;
    const fs::path on_disk = root_on_disk / candidate;
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(on_disk, ec);
    // libstdc++ reports a missing path (ENOENT, ENOTDIR) both as not_found and in `ec`.
    if (status.type() == fs::file_type::not_found) return std::nullopt;
    if (ec) return absl::InternalError(absl::StrCat("stat ", on_disk.string(), ": ", ec.message()));
    if (status.type() != fs::file_type::symlink) {
      resolved = candidate;
      continue;
    }
    if (++symlinks > kMaxSymlinks) return std::nullopt;
    const fs::path target = fs::read_symlink(on_disk, ec);
    if (ec) {
      return absl::InternalError(absl::StrCat("read link ", on_disk.string(), ": ", ec.message()));
    }
    if (target.is_absolute()) resolved.clear();
    const fs::path target_rel = target.relative_path();
    pending.insert(pending.begin(), target_rel.begin(), target_rel.end());
  }
  return resolved;
}

}  // namespace gpuop::agent::cdi
