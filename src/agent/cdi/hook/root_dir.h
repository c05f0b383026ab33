#ifndef GPUOP_AGENT_CDI_HOOK_ROOT_DIR_H_
#define GPUOP_AGENT_CDI_HOOK_ROOT_DIR_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/stat.h>

#include "agent/cdi/hook/status.h"

namespace gpuop::agent::cdi::hook {

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();

 private:
  int fd_ = -1;
};

// A container's root file system as the hook sees it before pivot_root, with every path resolved
// inside it the way the kernel resolves paths for a process chrooted there: an absolute symlink
// restarts at the root, ".." never climbs above it, at most 40 symlinks per path. The image is
// untrusted, so a link such as /usr/lib/x86_64-linux-gnu -> /../../etc can never make the hook
// touch a file outside the root. Resolution walks directory file descriptors (O_PATH,
// O_NOFOLLOW) one component at a time and every change is made with the *at() calls relative to
// the resolved directory, so no path is ever handed to the kernel to resolve from the host's root.
//
// Paths given to the methods are absolute inside the root ("/etc/ld.so.conf"). Errors name the
// path inside the root and the root.
class RootDir {
 public:
  // Opens `path` (a directory on the host) as the root.
  static StatusOr<RootDir> Open(const std::string& path);

  const std::string& path() const { return path_; }

  // The entry `path` names, the final symlink followed when `follow` (not when the final
  // component is a symlink to be replaced): nullopt when it does not exist.
  StatusOr<std::optional<struct stat>> Stat(std::string_view path, bool follow = true) const;

  // The target of the symlink at `path` (final component not followed); nullopt when `path` is
  // missing or is not a symlink.
  StatusOr<std::optional<std::string>> ReadLink(std::string_view path) const;

  // What `path` holds, at most `max_size` bytes (an error when larger); nullopt when missing.
  StatusOr<std::optional<std::string>> ReadFile(std::string_view path, size_t max_size) const;

  // The names in directory `path` (not "." or ".."), sorted; empty when it does not exist.
  StatusOr<std::vector<std::string>> List(std::string_view path) const;

  // Makes `path` a directory, creating missing parents, each with mode 0755.
  Status MakeDirectories(std::string_view path) const;

  // Makes `link` a symlink to `target` (written as given), as `ln -sf` in a chroot would:
  // missing parent directories are created; a symlink with the same target is left alone (returns
  // false); another symlink or a file there is replaced atomically (rename over it); a directory
  // there is an error. Returns true when the link was created or replaced.
  StatusOr<bool> Symlink(const std::string& target, std::string_view link) const;

  // Replaces `path` with a regular file holding `content` (mode `mode`, written beside it and
  // renamed over it, so a reader sees the old or the new file), creating missing parents. A
  // symlink at `path` is replaced, not written through.
  Status WriteFile(std::string_view path, std::string_view content, mode_t mode = 0644) const;

  // Removes the file or symlink `path`; returns false when there was none.
  StatusOr<bool> Remove(std::string_view path) const;

 private:
  // Where a path leads: the directory holding its final entry and that entry's name ("" when the
  // path resolves to a directory through "." or ".." or is the root itself).
  struct Location {
    Fd dir;
    std::string name;
  };

  RootDir(std::string path, Fd fd) : path_(std::move(path)), fd_(std::move(fd)) {}

  // Resolves `path`. Intermediate components must be directories; missing ones are created when
  // `create_parents`. The final component is followed when it is a symlink and `follow_last`.
  StatusOr<Location> Locate(std::string_view path, bool create_parents, bool follow_last) const;
  // An O_PATH descriptor of the directory `path`, created with its parents when `create`;
  // an invalid Fd when it does not exist and `create` is false.
  StatusOr<Fd> OpenDirectory(std::string_view path, bool create) const;
  Status Error(std::string_view what, std::string_view path, int err) const;

  std::string path_;
  Fd fd_;
};

}  // namespace gpuop::agent::cdi::hook

#endif  // GPUOP_AGENT_CDI_HOOK_ROOT_DIR_H_
