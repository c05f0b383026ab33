#ifndef GPUOP_COMMON_FILE_WATCH_H_
#define GPUOP_COMMON_FILE_WATCH_H_

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace gpuop::common {

// Notices changes to files with inotify, without polling. Watches whole directories: the kubelet
// updates ConfigMap volumes by swapping a symlink, and atomic writes rename a new file into
// place, both of which a watch on the file itself would miss.
//
// Not thread-safe: one owner adds watches and drains.
class FileWatch {
 public:
  FileWatch();
  ~FileWatch();
  FileWatch(const FileWatch&) = delete;
  FileWatch& operator=(const FileWatch&) = delete;

  // Watches `dir` for any change, or only for changes to the entry `name` in it when given.
  // The directory is created when missing, so a file that appears later is seen.
  [[nodiscard]] absl::Status Add(const std::filesystem::path& dir, std::string name = "");

  // Readable when something changed (for poll()); -1 if inotify is unavailable.
  int fd() const { return fd_; }
  // Drains pending notifications; true when one of them matched a watch.
  bool Changed();
  // Waits up to `timeout_ms` for a change (or returns at once if one is pending).
  bool Wait(int timeout_ms);

 private:
  struct Watch {
    int wd;
    std::string name;
  };
  int fd_ = -1;
  std::vector<Watch> watches_;
};

}  // namespace gpuop::common

#endif  // GPUOP_COMMON_FILE_WATCH_H_
