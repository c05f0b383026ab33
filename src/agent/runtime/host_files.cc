#include "agent/runtime/host_files.h"

#include <algorithm>
#include <cerrno>

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace gpuop::agent::runtime {
namespace {

namespace fs = std::filesystem;

absl::Status Errno(int err, absl::string_view what, const fs::path& host_path) {
  return absl::ErrnoToStatus(err, absl::StrCat(what, " ", host_path.string()));
}

// Escapes glob metacharacters so that the host root is matched literally.
std::string GlobEscape(absl::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

fs::path HostFiles::Resolve(const fs::path& host_path) const {
  return root_ / host_path.relative_path();
}

absl::Status HostFiles::CheckRegular(const fs::path& host_path) const {
  struct stat st;
  if (lstat(Resolve(host_path).c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return Errno(errno, "stat", host_path);
  }
  if (S_ISLNK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(host_path.string(),
                     " is a symbolic link; gpuop edits only regular files (replace the link with "
                     "the file it points to, or configure the runtime by hand)"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(host_path.string(), " exists but is not a regular file"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> HostFiles::Read(const fs::path& host_path) const {
  GPUOP_RETURN_IF_ERROR(CheckRegular(host_path));
  absl::StatusOr<std::optional<std::string>> content = common::ReadFileIfExists(Resolve(host_path));
  if (!content.ok()) {
    return absl::Status(content.status().code(), absl::StrCat("read ", host_path.string(), ": ",
                                                              content.status().message()));
  }
  return content;
}

absl::StatusOr<std::optional<fs::perms>> HostFiles::Permissions(const fs::path& host_path) const {
  struct stat st;
  if (lstat(Resolve(host_path).c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    return Errno(errno, "stat", host_path);
  }
  return static_cast<fs::perms>(st.st_mode & 07777);
}

bool HostFiles::Exists(const fs::path& host_path) const {
  struct stat st;
  return lstat(Resolve(host_path).c_str(), &st) == 0;
}

absl::Status HostFiles::Write(const fs::path& host_path, absl::string_view content,
                              fs::perms mode) const {
  GPUOP_RETURN_IF_ERROR(CheckRegular(host_path));
  absl::Status status = common::WriteFileAtomically(Resolve(host_path), content, mode);
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat("write ", host_path.string(), ": ", status.message()));
  }
  return absl::OkStatus();
}

absl::Status HostFiles::Remove(const fs::path& host_path) const {
  GPUOP_RETURN_IF_ERROR(CheckRegular(host_path));
  const fs::path path = Resolve(host_path);
  if (unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return Errno(errno, "remove", host_path);
  }
  const int dir = open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return Errno(errno, "open directory of", host_path);
  const int rc = fsync(dir);
  const int err = errno;
  close(dir);
  if (rc != 0) return Errno(err, "fsync directory of", host_path);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<fs::path>> HostFiles::Glob(absl::string_view host_pattern) const {
  const std::string root = root_.string();
  std::string prefix = root;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  const std::string pattern =
      absl::StrCat(GlobEscape(prefix),
                   host_pattern.empty() || host_pattern.front() != '/' ? "/" : "", host_pattern);
  glob_t matches{};
  const int rc = glob(pattern.c_str(), GLOB_NOSORT, nullptr, &matches);
  std::vector<fs::path> out;
  if (rc == 0) {
    for (size_t i = 0; i < matches.gl_pathc; ++i) {
      const std::string match = matches.gl_pathv[i];
      out.emplace_back(match.substr(prefix.size()));
    }
  }
  globfree(&matches);
  if (rc != 0 && rc != GLOB_NOMATCH) {
    return absl::InternalError(absl::StrCat("expand ", host_pattern, ": glob failed (", rc, ")"));
  }
  std::sort(out.begin(), out.end(),
            [](const fs::path& a, const fs::path& b) { return a.string() < b.string(); });
  return out;
}

}  // namespace gpuop::agent::runtime
