#include "common/file_watch.h"

#include <cerrno>

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace gpuop::common {

FileWatch::FileWatch() : fd_(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {}

FileWatch::~FileWatch() {
  if (fd_ >= 0) close(fd_);
}

absl::Status FileWatch::Add(const std::filesystem::path& dir, std::string name) {
  if (fd_ < 0) return absl::ErrnoToStatus(errno, "file watch: inotify_init1");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const int wd = inotify_add_watch(
      fd_, dir.c_str(),
      IN_CREATE | IN_DELETE | IN_MODIFY | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_ATTRIB);
  if (wd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("file watch: ", dir.string()));
  watches_.push_back({wd, std::move(name)});
  return absl::OkStatus();
}

bool FileWatch::Changed() {
  if (fd_ < 0) return false;
  bool matched = false;
  alignas(inotify_event) char buffer[4096];
  ssize_t len;
  while ((len = read(fd_, buffer, sizeof(buffer))) > 0) {
    for (char* p = buffer; p < buffer + len;) {
      const auto* event = reinterpret_cast<const inotify_event*>(p);
      for (const auto& w : watches_) {
        if (w.wd == event->wd && (w.name.empty() || (event->len > 0 && w.name == event->name))) {
          matched = true;
        }
      }
      p += sizeof(inotify_event) + event->len;
    }
  }
  return matched;
}

bool FileWatch::Wait(int timeout_ms) {
  if (fd_ < 0) {
    usleep(static_cast<useconds_t>(timeout_ms) * 1000);
    return false;
  }
  pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
  if (poll(&p, 1, timeout_ms) <= 0) return false;
  return Changed();
}

}  // namespace gpuop::common
