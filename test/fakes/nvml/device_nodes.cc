#include "test/fakes/nvml/device_nodes.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace gpuop::fakenvml {
namespace {

// Opens `path` read-write; -1 with errno set when it does not open or, with `need_device`, is
// not a character device (ENODEV).
int OpenNode(const std::string& path, bool need_device) {
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOCTTY);
  if (fd < 0 || !need_device) return fd;
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISCHR(info.st_mode)) {
    close(fd);
    errno = ENODEV;
    return -1;
  }
  return fd;
}

}  // namespace

absl::StatusOr<OpenedNodes> OpenDeviceNodes(const std::string& dir,
                                            const std::vector<GpuSpec>& gpus) {
  absl::string_view base = dir;
  while (base.size() > 1 && absl::ConsumeSuffix(&base, "/")) {
  }
  const bool need_device = base == "/dev";
  const std::string prefix = base == "/" ? "/" : absl::StrCat(base, "/");
  OpenedNodes nodes;
  const std::string control = prefix + "nvidiactl";
  const int control_fd = OpenNode(control, need_device);
  if (control_fd < 0) {
    const int error = errno;
    const std::string why =
        absl::StrCat("device_nodes ", dir, ": ", control, ": ",
                     error == ENODEV ? "not a character device" : std::strerror(error));
    if (error == EACCES || error == EPERM) {
      return absl::PermissionDeniedError(absl::StrCat(why, " (NVML_ERROR_NO_PERMISSION)"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat(why, " (the driver is not loaded: NVML_ERROR_DRIVER_NOT_LOADED)"));
  }
  nodes.fds.push_back(control_fd);
  for (const GpuSpec& gpu : gpus) {
    const int fd = OpenNode(absl::StrCat(prefix, "nvidia", gpu.minor_number), need_device);
    nodes.visible.push_back(fd >= 0);
    if (fd >= 0) nodes.fds.push_back(fd);
  }
  return nodes;
}

void CloseDeviceNodes(std::vector<int>& fds) {
  for (const int fd : fds) close(fd);
  fds.clear();
}

}  // namespace gpuop::fakenvml
