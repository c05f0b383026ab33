#include "common/files.h"

#include <cerrno>
#include <cstdlib>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace gpuop::common {
namespace {

namespace fs = std::filesystem;

absl::Status Errno(int err, absl::string_view what, const fs::path& path) {
  return absl::ErrnoToStatus(err, absl::StrCat(what, " ", path.string()));
}

// Writes all of `data` to `fd`, retrying short writes and interrupts.
bool WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno(errno, "read", path);
  std::string content;
  char buffer[65536];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return Errno(err, "read", path);
    }
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return content;
}

absl::StatusOr<std::optional<std::string>> ReadFileIfExists(const fs::path& path) {
  absl::StatusOr<std::string> content = ReadFile(path);
  if (content.ok()) return std::optional<std::string>(*std::move(content));
  if (content.status().code() == absl::StatusCode::kNotFound) return std::nullopt;
  return content.status();
}

absl::Status WriteFileAtomically(const fs::path& path, absl::string_view content, fs::perms mode) {
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("create ", dir.string(), ": ", ec.message()));

  std::string templ = (dir / absl::StrCat(".", path.filename().string(), ".tmp-XXXXXX")).string();
  const int fd = mkostemp(templ.data(), O_CLOEXEC);
  if (fd < 0) return Errno(errno, "create temporary file for", path);
  const fs::path tmp = templ;
  auto fail = [&](absl::string_view what) {
    const int err = errno;
    close(fd);
    unlink(tmp.c_str());
    return Errno(err, what, path);
  };
  if (fchmod(fd, static_cast<mode_t>(mode)) != 0) return fail("chmod");
  if (!WriteAll(fd, content)) return fail("write");
  if (fsync(fd) != 0) return fail("fsync");
  if (close(fd) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return Errno(err, "close", path);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return Errno(err, "rename into place", path);
  }
  // The rename is durable only once the directory entry is on disk.
  const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    fsync(dir_fd);
    close(dir_fd);
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> InstallExecutable(const fs::path& source, const fs::path& destination,
                                       absl::string_view what) {
  absl::StatusOr<std::string> binary = ReadFile(source);
  if (!binary.ok()) {
    return absl::Status(binary.status().code(),
                        absl::StrCat("install ", what, ": ", binary.status().message()));
  }
  if (binary->empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("install ", what, ": ", source.string(), " is empty"));
  }
  constexpr fs::perms kMode = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec;
  absl::StatusOr<std::optional<std::string>> current = ReadFileIfExists(destination);
  std::error_code ec;
  const fs::file_status status = fs::status(destination, ec);
  if (current.ok() && current->has_value() && **current == *binary && !ec &&
      fs::is_regular_file(status) && (status.permissions() & fs::perms::mask) == kMode) {
    return false;
  }
  if (absl::Status written = WriteFileAtomically(destination, *binary, kMode); !written.ok()) {
    return absl::Status(written.code(), absl::StrCat("install ", what, " at ", destination.string(),
                                                     ": ", written.message()));
  }
  return true;
}

fs::path BesideSelf(absl::string_view name) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return fs::path("/usr/local/bin") / std::string(name);
  return self.parent_path() / std::string(name);
}

}  // namespace gpuop::common
