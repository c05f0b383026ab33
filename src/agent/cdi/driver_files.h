#ifndef GPUOP_AGENT_CDI_DRIVER_FILES_H_
#define GPUOP_AGENT_CDI_DRIVER_FILES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/cdi/host_files.h"

namespace gpuop::agent::cdi {

// The NVIDIA user-space driver files a container needs, found on disk under a driver root.

struct DriverFilesOptions {
  // The driver's root as the host sees it: "/" for a driver installed on the host, or where a
  // driver container exposes its root ("/run/nvidia/driver"). Absolute.
  std::string driver_root = "/";
  // The installed driver, "570.86.15": libraries are the files named lib*.so.<driver_version>.
  std::string driver_version;
  // Searched in order, relative to the driver root, not recursively. A directory reached twice
  // (lib64 -> usr/lib64) is searched once.
  std::vector<std::string> library_dirs = {"usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu",
                                           "usr/lib64", "usr/lib", "lib64"};
  std::vector<std::string> binary_dirs = {"usr/bin", "usr/sbin", "bin", "sbin"};
  std::vector<std::string> binaries = {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced",
                                       "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"};
  // Searched in order for firmware/nvidia/<driver_version>; the first directory found is used.
  std::vector<std::string> firmware_dirs = {"lib/firmware", "usr/lib/firmware"};
  // The IPC endpoints nvidia-ctk mounts when they exist (internal/discover/ipc.go): the
  // persistence daemon's and the fabric manager's sockets and the MPS pipe directory. Looked up
  // inside the driver root.
  std::vector<std::string> ipc_paths = {"/var/run/nvidia-persistenced/socket",
                                        "/var/run/nvidia-fabricmanager/socket", "/tmp/nvidia-mps"};
};

// A file to bind-mount: where the host has it and where the container gets it. The container
// path is the path inside the driver root, so a containerised driver's files land where a host
// install would put them.
struct DriverFile {
  std::string host_path;
  std::string container_path;

  friend bool operator==(const DriverFile&, const DriverFile&) = default;
};

struct DriverFiles {
  // Regular files named lib*.so.<driver_version>, by directory (search order) then name.
  std::vector<DriverFile> libraries;
  // The container directories holding `libraries`, in search order (for update-ldcache).
  std::vector<std::string> library_dirs;
  // The links a container needs beside the libraries, as create-symlinks arguments
  // "<target>::<container link path>", sorted by link path, one per link path. In order of
  // precedence when two rules give the same link:
  //   1. the SONAME link of every library whose DT_SONAME (ReadElfSoname) differs from its file
  //      name: "libcuda.so.570.86.15::/usr/lib/x86_64-linux-gnu/libcuda.so.1" (what ldconfig
  //      would create; dlopen("libcuda.so.1") needs it);
  //   2. symlinks on disk beside the libraries that resolve to one of them, target as written;
  //   3. the development links nvidia-ctk adds because applications dlopen them:
  //      "libcuda.so.1::<dir>/libcuda.so", "libnvidia-opticalflow.so.1::<dir>/
  //      libnvidia-opticalflow.so", "libGLX_nvidia.so.<version>::<dir>/libGLX_indirect.so.0",
  //      each when its library is present.
  // A link at the path of a mounted library is left out.
  std::vector<std::string> links;
  // The first of `binaries` found in each name's binary directories; symlinks are resolved
  // inside the root and the target is mounted at the name's path.
  std::vector<DriverFile> binaries;
  // firmware/nvidia/<driver_version>, when present.
  std::optional<DriverFile> firmware;
  // The `ipc_paths` that exist, resolved inside the root; the container gets each at its
  // resolved path ("/run/nvidia-persistenced/socket" where /var/run links to /run).
  std::vector<DriverFile> ipc;
};

// Looks the driver files up under `files.Open(options.driver_root)`. What is missing is left out
// (DriverFiles says what was found); InvalidArgument when the driver root is not absolute or the
// version is empty; other errors (a directory that exists but cannot be read) name the path.
[[nodiscard]] absl::StatusOr<DriverFiles> FindDriverFiles(const HostFiles& files,
                                                          const DriverFilesOptions& options);

}  // namespace gpuop::agent::cdi

#endif  // GPUOP_AGENT_CDI_DRIVER_FILES_H_
