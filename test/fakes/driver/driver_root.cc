#include "test/fakes/driver/driver_root.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/mountinfo.h"
#include "test/fakes/nvml/embedded.h"

namespace gpuop::fakedriver {
namespace {

std::string Errno() { return std::strerror(errno); }

bool Exists(const std::string& path) {
  struct stat info {};
  return lstat(path.c_str(), &info) == 0;
}

std::string Join(const std::string& root, absl::string_view relative) {
  if (root.empty() || root == "/") return absl::StrCat("/", relative);
  return absl::StrCat(root, root.back() == '/' ? "" : "/", relative);
}

bool IsMountPoint(const std::string& path) {
  char* resolved = realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return false;
  const std::string canonical = resolved;
  std::free(resolved);
  return common::MountedOn("/proc/self/mountinfo", canonical).value_or(false);
}

// Removes everything below `dir`, not `dir` itself.
absl::Status RemoveChildren(const std::string& dir) {
  DIR* handle = opendir(dir.c_str());
  if (handle == nullptr) return absl::OkStatus();
  std::vector<std::string> names;
  while (const dirent* entry = readdir(handle)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(handle);
  for (const std::string& name : names) {
    const std::string path = absl::StrCat(dir, "/", name);
    struct stat info {};
    if (lstat(path.c_str(), &info) != 0) continue;
    if (S_ISDIR(info.st_mode)) {
      if (IsMountPoint(path)) {
        return absl::FailedPreconditionError(
            absl::StrCat("remove the driver root tree: ", path, " is a mount point"));
      }
      if (absl::Status status = RemoveChildren(path); !status.ok()) return status;
      if (rmdir(path.c_str()) != 0) {
        return absl::UnavailableError(absl::StrCat("remove ", path, ": ", Errno()));
      }
    } else if (unlink(path.c_str()) != 0) {
      return absl::UnavailableError(absl::StrCat("remove ", path, ": ", Errno()));
    }
  }
  return absl::OkStatus();
}

absl::Status BuildTree(const std::string& root, const std::string& version,
                       const std::string& driver_root, const std::vector<NodeSpec>& nodes) {
  const std::string libraries = Join(driver_root, kLibraryDir);
  if (absl::Status status = MakeDirectories(libraries); !status.ok()) return status;
  if (absl::Status status = MakeDirectories(Join(driver_root, "usr/bin")); !status.ok()) {
    return status;
  }
  if (absl::Status status = MakeDirectories(Join(driver_root, "dev")); !status.ok()) return status;
  for (const std::string& file :
       {absl::StrCat("libnvidia-ml.so.", version), absl::StrCat("libcuda.so.", version)}) {
    absl::Status status = CopyFileAtomically(Join(root, absl::StrCat(kLibraryDir, "/", file)),
                                             absl::StrCat(libraries, "/", file), 0755);
    if (!status.ok()) return status;
  }
  const std::pair<std::string, std::string> links[] = {
      {absl::StrCat("libnvidia-ml.so.", version), "libnvidia-ml.so.1"},
      {absl::StrCat("libcuda.so.", version), "libcuda.so.1"},
      {"libcuda.so.1", "libcuda.so"}};
  for (const auto& [target, link] : links) {
    if (absl::Status status = LinkAtomically(target, absl::StrCat(libraries, "/", link));
        !status.ok()) {
      return status;
    }
  }
  absl::Status status = CopyFileAtomically(Join(root, "usr/bin/nvidia-smi"),
                                           Join(driver_root, "usr/bin/nvidia-smi"), 0755);
  if (!status.ok()) return status;
  // The MPS control program, where the image has it (the driver's user space includes it).
  if (Exists(Join(root, "usr/bin/nvidia-cuda-mps-control"))) {
    status = CopyFileAtomically(Join(root, "usr/bin/nvidia-cuda-mps-control"),
                                Join(driver_root, "usr/bin/nvidia-cuda-mps-control"), 0755);
    if (!status.ok()) return status;
  }
  if (status = CreateNodes(Join(driver_root, "dev"), nodes); !status.ok()) return status;
  std::ofstream marker(Join(driver_root, kTreeMarker));
  marker << "SIMULATED: a driver root built by gpuop's simulated nvidia-driver (test/fakes/driver)"
            " because mount --rbind was not permitted; nvidia-driver uninit removes it.\n";
  if (!marker) {
    return absl::UnavailableError(absl::StrCat("write ", Join(driver_root, kTreeMarker)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MakeDirectories(const std::string& path) {
  std::string prefix;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    absl::StrAppend(&prefix, "/", part);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::UnavailableError(absl::StrCat("mkdir ", prefix, ": ", Errno()));
    }
  }
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("mkdir ", path, ": not an absolute path"));
  }
  return absl::OkStatus();
}

absl::Status CopyFileAtomically(const std::string& from, const std::string& to, mode_t mode) {
  std::ifstream in(from, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("read ", from, ": ", Errno()));
  const std::string contents((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError(absl::StrCat("read ", from, ": ", Errno()));
  std::string temporary = to + ".tmp-XXXXXX";
  const int fd = mkostemp(temporary.data(), O_CLOEXEC);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("create beside ", to, ": ", Errno()));
  std::string failed;
  size_t done = 0;
  while (done < contents.size() && failed.empty()) {
    const ssize_t wrote = write(fd, contents.data() + done, contents.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) failed = absl::StrCat("write ", temporary, ": ", Errno());
    if (wrote > 0) done += static_cast<size_t>(wrote);
  }
  if (failed.empty() && fchmod(fd, mode) != 0)
    failed = absl::StrCat("chmod ", temporary, ": ", Errno());
  if (failed.empty() && fsync(fd) != 0) failed = absl::StrCat("fsync ", temporary, ": ", Errno());
  close(fd);
  if (failed.empty() && rename(temporary.c_str(), to.c_str()) != 0) {
    failed = absl::StrCat("rename ", temporary, " to ", to, ": ", Errno());
  }
  if (!failed.empty()) {
    unlink(temporary.c_str());
    return absl::UnavailableError(failed);
  }
  return absl::OkStatus();
}

absl::Status LinkAtomically(const std::string& target, const std::string& link) {
  const std::string temporary = absl::StrCat(link, ".tmp-", getpid());
  unlink(temporary.c_str());
  if (symlink(target.c_str(), temporary.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("symlink ", link, " -> ", target, ": ", Errno()));
  }
  if (rename(temporary.c_str(), link.c_str()) != 0) {
    const std::string why = Errno();
    unlink(temporary.c_str());
    return absl::UnavailableError(absl::StrCat("rename ", temporary, " to ", link, ": ", why));
  }
  return absl::OkStatus();
}

std::vector<std::string> VersionedLibraries(const std::string& root, const std::string& version) {
  return {Join(root, absl::StrCat(kLibraryDir, "/libnvidia-ml.so.", version)),
          Join(root, absl::StrCat(kLibraryDir, "/libcuda.so.", version))};
}

absl::StatusOr<Installed> InstallUserspace(const InstallSpec& spec) {
  const std::string libraries = Join(spec.root, kLibraryDir);
  if (absl::Status status = MakeDirectories(libraries); !status.ok()) return status;
  if (absl::Status status = MakeDirectories(Join(spec.root, "usr/bin")); !status.ok()) {
    return status;
  }
  Installed installed;
  installed.libraries = VersionedLibraries(spec.root, spec.version);
  absl::Status status = fakenvml::WriteLibraryWithScenario(
      absl::StrCat(spec.lib_dir, "/libnvidia-ml.so.1"), spec.scenario_yaml, installed.libraries[0]);
  if (!status.ok()) return status;
  status =
      CopyFileAtomically(absl::StrCat(spec.lib_dir, "/libcuda.so.1"), installed.libraries[1], 0755);
  if (!status.ok()) return status;
  const std::pair<std::string, std::string> links[] = {
      {absl::StrCat("libnvidia-ml.so.", spec.version), "libnvidia-ml.so.1"},
      {absl::StrCat("libcuda.so.", spec.version), "libcuda.so.1"},
      {"libcuda.so.1", "libcuda.so"}};
  for (const auto& [target, link] : links) {
    if (status = LinkAtomically(target, absl::StrCat(libraries, "/", link)); !status.ok()) {
      return status;
    }
  }
  const std::string smi = Join(spec.root, "usr/bin/nvidia-smi");
  if (!Exists(smi)) {
    if (status = CopyFileAtomically(spec.nvidia_smi, smi, 0755); !status.ok()) return status;
  }
  return installed;
}

Published DriverRootState(const std::string& driver_root) {
  if (IsMountPoint(driver_root)) return Published::kMount;
  if (Exists(Join(driver_root, kTreeMarker))) return Published::kTree;
  return Published::kNone;
}

absl::StatusOr<Published> PublishDriverRoot(const std::string& root, const std::string& version,
                                            const std::string& driver_root, Publish how,
                                            const std::vector<NodeSpec>& nodes,
                                            const std::function<void(const std::string&)>& log) {
  if (absl::Status status = MakeDirectories(driver_root); !status.ok()) return status;
  if (how != Publish::kTree) {
    if (root == "/" && IsMountPoint("/sys")) {
      // As the real container does, so that the bind does not carry /sys's submounts.
      if (mount(nullptr, "/sys", nullptr, MS_REC | MS_UNBINDABLE, nullptr) != 0 ||
          mount(nullptr, "/sys", nullptr, MS_PRIVATE, nullptr) != 0) {
        log(absl::StrCat("Could not make /sys unbindable and private: ", Errno()));
      }
    }
    if (mount(root.c_str(), driver_root.c_str(), nullptr, MS_BIND | MS_REC, nullptr) == 0) {
      return Published::kMount;
    }
    const std::string why = absl::StrCat("mount --rbind ", root, " ", driver_root, ": ", Errno());
    if (how == Publish::kRbind) return absl::UnavailableError(why);
    log(absl::StrCat(why, "; SIMULATED fallback: building the driver root at ", driver_root,
                     " as a directory tree instead"));
  }
  if (absl::Status status = BuildTree(root, version, driver_root, nodes); !status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat("build the driver root tree: ", status.message()));
  }
  return Published::kTree;
}

absl::Status UnpublishDriverRoot(const std::string& driver_root) {
  for (int i = 0; i < 16 && IsMountPoint(driver_root); ++i) {
    if (umount2(driver_root.c_str(), MNT_DETACH) != 0) {
      return absl::UnavailableError(absl::StrCat("umount -l ", driver_root, ": ", Errno()));
    }
  }
  if (IsMountPoint(driver_root)) {
    return absl::UnavailableError(absl::StrCat("umount -l ", driver_root, ": still mounted"));
  }
  if (Exists(Join(driver_root, kTreeMarker))) return RemoveChildren(driver_root);
  return absl::OkStatus();
}

}  // namespace gpuop::fakedriver
