#include "agent/cdi/inject/files.h"

#include <cerrno>
#include <cstring>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/cdi/hook/root_dir.h"

namespace gpuop::agent::cdi::inject {
namespace {

using hook::Fd;

Status Errno(const std::string& what, int error_number) {
  return Status::Error(what + ": " + std::strerror(error_number), error_number);
}

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("write " + path, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

StatusOr<std::string> ReadFileLimited(const std::string& path, size_t max_size) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) return Errno("open " + path, errno);
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return Errno("stat " + path, errno);
  if (!S_ISREG(info.st_mode)) return Status::Error(path + " is not a regular file");
  std::string content;
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("read " + path, errno);
    }
    if (n == 0) break;
    if (content.size() + static_cast<size_t>(n) > max_size) {
      return Status::Error(path + " is larger than " + std::to_string(max_size) + " bytes");
    }
    content.append(buffer, static_cast<size_t>(n));
  }
  return content;
}

Status ReplaceFileAtomically(const std::string& path, const std::string& content) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return Errno("stat " + path, errno);
  std::string temp = path + ".gpuop-XXXXXX";
  Fd fd(::mkstemp(temp.data()));
  if (!fd.valid()) return Errno("create a temporary file beside " + path, errno);
  ::fcntl(fd.get(), F_SETFD, FD_CLOEXEC);
  Status status = WriteAll(fd.get(), content, temp);
  if (status.ok() && ::fchmod(fd.get(), info.st_mode & 07777) != 0) {
    status = Errno("chmod " + temp, errno);
  }
  // Keep the owner as well when this process may (as root, which the runtime runs as).
  if (status.ok() && (info.st_uid != ::geteuid() || info.st_gid != ::getegid())) {
    (void)::fchown(fd.get(), info.st_uid, info.st_gid);
  }
  if (status.ok() && ::fsync(fd.get()) != 0) status = Errno("fsync " + temp, errno);
  if (status.ok() && ::close(fd.release()) != 0) status = Errno("close " + temp, errno);
  if (status.ok() && ::rename(temp.c_str(), path.c_str()) != 0) {
    status = Errno("rename " + temp + " to " + path, errno);
  }
  if (!status.ok()) {
    ::unlink(temp.c_str());
    return status;
  }
  // The rename is durable once the directory is; a failure here leaves the new file in place.
  const std::string dir = DirectoryOf(path);
  Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.valid()) ::fsync(dir_fd.get());
  return Status::Ok();
}

}  // namespace gpuop::agent::cdi::inject
