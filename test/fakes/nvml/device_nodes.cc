#include "test/fakes/nvml/device_nodes.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "test/fakes/nvml/mig_cap_minors.h"

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

std::string Prefix(const std::string& dir) {
  absl::string_view base = dir;
  while (base.size() > 1 && absl::ConsumeSuffix(&base, "/")) {
  }
  return base == "/" ? "/" : absl::StrCat(base, "/");
}

// Whether `path` opens for reading (a character device where `need_device`).
bool Readable(const std::string& path, bool need_device) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return false;
  struct stat info {};
  const bool ok = !need_device || (fstat(fd, &info) == 0 && S_ISCHR(info.st_mode));
  close(fd);
  return ok;
}

// Creates in `prefix` the nodes `module` has (nvidiactl, nvidia<minor> for `gpus`, nvidia-uvm,
// the MIG capabilities) and `prefix` lacks, keeping only those this process can open.
void CreateMissingNodes(const std::string& prefix, const std::string& module,
                        const std::vector<GpuSpec>& gpus) {
  std::vector<std::string> names = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools",
                                    "nvidia-caps/nvidia-cap1", "nvidia-caps/nvidia-cap2"};
  for (const GpuSpec& gpu : gpus) names.push_back(absl::StrCat("nvidia", gpu.minor_number));
  for (const std::string& name : names) {
    struct stat source {};
    const std::string target = prefix + name;
    if (stat((module + name).c_str(), &source) != 0 || !S_ISCHR(source.st_mode)) continue;
    struct stat existing {};
    if (lstat(target.c_str(), &existing) == 0) continue;
    // The GPUs' nodes are 0666; the capabilities keep the module's modes (config is root's).
    const bool capability = absl::StartsWith(name, "nvidia-caps/");
    const mode_t mode = capability ? (source.st_mode & 0777) : 0666;
    if (capability) mkdir((prefix + "nvidia-caps").c_str(), 0755);
    if (mknod(target.c_str(), S_IFCHR | mode, source.st_rdev) != 0) continue;
    chmod(target.c_str(), mode);
    const int fd = open(target.c_str(), (capability ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
      unlink(target.c_str());
      continue;
    }
    close(fd);
  }
}

}  // namespace

absl::StatusOr<OpenedNodes> OpenDeviceNodes(const std::string& dir,
                                            const std::vector<GpuSpec>& gpus,
                                            const std::string& module_dir) {
  const std::string prefix = Prefix(dir);
  const bool need_device = prefix == "/dev/";
  if (!module_dir.empty() && geteuid() == 0) {
    const std::string module = Prefix(module_dir);
    struct stat control {};
    if (module != prefix && stat((module + "nvidiactl").c_str(), &control) == 0) {
      CreateMissingNodes(prefix, module, gpus);
    }
  }
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
  nodes.mig_config = Readable(prefix + "nvidia-caps/nvidia-cap1", need_device);
  nodes.mig_monitor = Readable(prefix + "nvidia-caps/nvidia-cap2", need_device);
  return nodes;
}

void CreateInstanceCapNodes(const std::string& dir, const std::vector<InstanceCaps>& instances) {
  if (geteuid() != 0 || instances.empty()) return;
  const std::string caps = Prefix(dir) + "nvidia-caps/";
  struct stat monitor {};
  if (stat((caps + "nvidia-cap2").c_str(), &monitor) != 0 || !S_ISCHR(monitor.st_mode)) return;
  auto create = [&](unsigned int minor) {
    const std::string node = absl::StrCat(caps, "nvidia-cap", minor);
    struct stat existing {};
    if (lstat(node.c_str(), &existing) == 0) return true;
    if (mknod(node.c_str(), S_IFCHR | 0444, monitor.st_rdev) != 0) return false;
    chmod(node.c_str(), 0444);
    return true;
  };
  for (const InstanceCaps& i : instances) {
    if (!create(MigCapabilityMinor(i.gpu_minor, i.gpu_instance)) ||
        !create(MigCapabilityMinor(i.gpu_minor, i.gpu_instance,
                                   static_cast<int>(i.compute_instance)))) {
      return;  // not permitted here: the next ones would fail alike
    }
  }
}

bool HoldsInstanceCaps(const std::string& dir, const InstanceCaps& instance) {
  const std::string caps = Prefix(dir) + "nvidia-caps/nvidia-cap";
  const bool need_device = Prefix(dir) == "/dev/";
  return Readable(absl::StrCat(caps, MigCapabilityMinor(instance.gpu_minor, instance.gpu_instance)),
                  need_device) &&
         Readable(
             absl::StrCat(caps, MigCapabilityMinor(instance.gpu_minor, instance.gpu_instance,
                                                   static_cast<int>(instance.compute_instance))),
             need_device);
}

void CloseDeviceNodes(std::vector<int>& fds) {
  for (const int fd : fds) close(fd);
  fds.clear();
}

}  // namespace gpuop::fakenvml
