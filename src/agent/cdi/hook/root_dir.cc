#include "agent/cdi/hook/root_dir.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

namespace gpuop::agent::cdi::hook {
namespace {

// Linux's limit on symlinks followed while resolving one path.
constexpr int kMaxSymlinks = 40;

std::deque<std::string> Components(std::string_view path) {
  std::deque<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) out.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// A name beside `name` in the same directory for a file about to be renamed over it.
std::string TempName(const std::string& name) {
  static int counter = 0;
  return ".gpuop-" + std::to_string(getpid()) + "-" + std::to_string(++counter) + "-" + name;
}

}  // namespace

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) close(fd_);
}

int Fd::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

StatusOr<RootDir> RootDir::Open(const std::string& path) {
  const int fd = open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return Status::Error("open container root " + path + ": " + std::strerror(err), err);
  }
  return RootDir(path, Fd(fd));
}

Status RootDir::Error(std::string_view what, std::string_view path, int err) const {
  return Status::Error(std::string(what) + " " + std::string(path) + " in container root " + path_ +
                           ": " + std::strerror(err),
                       err);
}

StatusOr<RootDir::Location> RootDir::Locate(std::string_view path, bool create_parents,
                                            bool follow_last) const {
  std::vector<Fd> stack;
  stack.emplace_back(fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0));
  if (!stack.back().valid()) return Error("resolve", path, errno);
  std::deque<std::string> pending = Components(path);
  int symlinks = 0;
  while (!pending.empty()) {
    std::string component = std::move(pending.front());
    pending.pop_front();
    if (component == ".") continue;
    if (component == "..") {
      if (stack.size() > 1) stack.pop_back();  // ".." at the root stays at the root
      continue;
    }
    const bool last = pending.empty();
    const int dir = stack.back().get();
    if (last && !follow_last) return Location{std::move(stack.back()), std::move(component)};
    struct stat st {};
    if (fstatat(dir, component.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) return Error("stat", path, errno);
      if (last) return Location{std::move(stack.back()), std::move(component)};
      if (!create_parents) return Error("resolve", path, ENOENT);
      if (mkdirat(dir, component.c_str(), 0755) != 0 && errno != EEXIST) {
        return Error("create directories for", path, errno);
      }
      pending.push_front(std::move(component));  // look at what is there now
      continue;
    }
    if (S_ISLNK(st.st_mode)) {
      if (++symlinks > kMaxSymlinks) return Error("resolve", path, ELOOP);
      std::string target(PATH_MAX, '\0');
      const ssize_t n = readlinkat(dir, component.c_str(), target.data(), target.size());
      if (n < 0) return Error("read link in", path, errno);
      target.resize(static_cast<size_t>(n));
      if (!target.empty() && target.front() == '/') stack.resize(1);
      std::deque<std::string> more = Components(target);
      pending.insert(pending.begin(), more.begin(), more.end());
      continue;
    }
    if (last) return Location{std::move(stack.back()), std::move(component)};
    if (!S_ISDIR(st.st_mode)) return Error("resolve", path, ENOTDIR);
    Fd next(openat(dir, component.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid()) return Error("open directory in", path, errno);
    stack.push_back(std::move(next));
  }
  return Location{std::move(stack.back()), ""};
}

StatusOr<Fd> RootDir::OpenDirectory(std::string_view path, bool create) const {
  StatusOr<Location> location = Locate(path, create, /*follow_last=*/true);
  if (!location.ok()) {
    if (!create && location.status().error_number() == ENOENT) {
      return Fd();
    }
    return location.status();
  }
  if (location->name.empty()) return std::move(location->dir);
  const int dir = location->dir.get();
  const char* name = location->name.c_str();
  Fd fd(openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid() && errno == ENOENT && create) {
    if (mkdirat(dir, name, 0755) != 0 && errno != EEXIST) return Error("create", path, errno);
    fd = Fd(openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  if (!fd.valid()) {
    if (errno == ENOENT) return Fd();
    return Error("open directory", path, errno);
  }
  return fd;
}

StatusOr<std::optional<struct stat>> RootDir::Stat(std::string_view path, bool follow) const {
  StatusOr<Location> location = Locate(path, false, follow);
  if (!location.ok()) {
    if (location.status().error_number() == ENOENT || location.status().error_number() == ENOTDIR) {
      return std::optional<struct stat>();
    }
    return location.status();
  }
  struct stat st {};
  const int rc = location->name.empty() ? fstat(location->dir.get(), &st)
                                        : fstatat(location->dir.get(), location->name.c_str(), &st,
                                                  AT_SYMLINK_NOFOLLOW);
  if (rc != 0) {
    if (errno == ENOENT) return std::optional<struct stat>();
    return Error("stat", path, errno);
  }
  return std::optional<struct stat>(st);
}

StatusOr<std::optional<std::string>> RootDir::ReadLink(std::string_view path) const {
  StatusOr<std::optional<struct stat>> st = Stat(path, /*follow=*/false);
  if (!st.ok()) return st.status();
  if (!st->has_value() || !S_ISLNK((*st)->st_mode)) return std::optional<std::string>();
  StatusOr<Location> location = Locate(path, false, false);
  if (!location.ok()) return location.status();
  std::string target(PATH_MAX, '\0');
  const ssize_t n =
      readlinkat(location->dir.get(), location->name.c_str(), target.data(), target.size());
  if (n < 0) return Error("read link", path, errno);
  target.resize(static_cast<size_t>(n));
  return std::optional<std::string>(std::move(target));
}

StatusOr<std::optional<std::string>> RootDir::ReadFile(std::string_view path,
                                                       size_t max_size) const {
  StatusOr<Location> location = Locate(path, false, true);
  if (!location.ok()) {
    if (location.status().error_number() == ENOENT) {
      return std::optional<std::string>();
    }
    return location.status();
  }
  if (location->name.empty()) return Error("read", path, EISDIR);
  Fd fd(openat(location->dir.get(), location->name.c_str(),
               O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ENOENT) return std::optional<std::string>();
    return Error("open", path, errno);
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return Error("stat", path, errno);
  if (!S_ISREG(st.st_mode)) return Error("read", path, EINVAL);
  std::string content;
  char buffer[8192];
  while (true) {
    const ssize_t n = read(fd.get(), buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error("read", path, errno);
    }
    if (n == 0) break;
    if (content.size() + static_cast<size_t>(n) > max_size) return Error("read", path, EFBIG);
    content.append(buffer, static_cast<size_t>(n));
  }
  return std::optional<std::string>(std::move(content));
}

StatusOr<std::vector<std::string>> RootDir::List(std::string_view path) const {
  StatusOr<Fd> dir = OpenDirectory(path, false);
  if (!dir.ok()) return dir.status();
  std::vector<std::string> names;
  if (!dir->valid()) return names;
  const int fd = openat(dir->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Error("list", path, errno);
  DIR* stream = fdopendir(fd);
  if (stream == nullptr) {
    const int err = errno;
    close(fd);
    return Error("list", path, err);
  }
  while (const dirent* entry = readdir(stream)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(stream);
  std::sort(names.begin(), names.end());
  return names;
}

Status RootDir::MakeDirectories(std::string_view path) const {
  StatusOr<Fd> dir = OpenDirectory(path, true);
  return dir.ok() ? Status::Ok() : dir.status();
}

StatusOr<bool> RootDir::Symlink(const std::string& target, std::string_view link) const {
  StatusOr<Location> location = Locate(link, /*create_parents=*/true, /*follow_last=*/false);
  if (!location.ok()) return location.status();
  if (location->name.empty()) return Error("create link", link, EISDIR);
  const int dir = location->dir.get();
  const std::string& name = location->name;
  struct stat st {};
  if (fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode)) return Error("create link", link, EISDIR);
    if (S_ISLNK(st.st_mode)) {
      std::string current(PATH_MAX, '\0');
      const ssize_t n = readlinkat(dir, name.c_str(), current.data(), current.size());
      if (n >= 0 && std::string_view(current.data(), static_cast<size_t>(n)) == target) {
        return false;
      }
    }
  } else if (errno != ENOENT) {
    return Error("stat", link, errno);
  }
  const std::string temp = TempName(name);
  if (symlinkat(target.c_str(), dir, temp.c_str()) != 0) return Error("create link", link, errno);
  if (renameat(dir, temp.c_str(), dir, name.c_str()) != 0) {
    const int err = errno;
    unlinkat(dir, temp.c_str(), 0);
    return Error("create link", link, err);
  }
  return true;
}

Status RootDir::WriteFile(std::string_view path, std::string_view content, mode_t mode) const {
  StatusOr<Location> location = Locate(path, /*create_parents=*/true, /*follow_last=*/false);
  if (!location.ok()) return location.status();
  if (location->name.empty()) return Error("write", path, EISDIR);
  const int dir = location->dir.get();
  const std::string temp = TempName(location->name);
  Fd fd(openat(dir, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.valid()) return Error("write", path, errno);
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      unlinkat(dir, temp.c_str(), 0);
      return Error("write", path, err);
    }
    done += static_cast<size_t>(n);
  }
  // The umask must not narrow the mode: the container may run as another user.
  if (fchmod(fd.get(), mode) != 0 ||
      renameat(dir, temp.c_str(), dir, location->name.c_str()) != 0) {
    const int err = errno;
    unlinkat(dir, temp.c_str(), 0);
    return Error("write", path, err);
  }
  return Status::Ok();
}

StatusOr<bool> RootDir::Remove(std::string_view path) const {
  StatusOr<Location> location = Locate(path, false, false);
  if (!location.ok()) {
    if (location.status().error_number() == ENOENT) {
      return false;
    }
    return location.status();
  }
  if (location->name.empty()) return Error("remove", path, EISDIR);
  if (unlinkat(location->dir.get(), location->name.c_str(), 0) != 0) {
    if (errno == ENOENT) return false;
    return Error("remove", path, errno);
  }
  return true;
}

}  // namespace gpuop::agent::cdi::hook
