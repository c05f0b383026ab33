#ifndef GPUOP_TEST_FAKES_DRIVER_DRIVER_ROOT_H_
#define GPUOP_TEST_FAKES_DRIVER_DRIVER_ROOT_H_

// The user-space half of the SIMULATED driver container: the libraries and nvidia-smi it
// "installs" into its own root file system, and the driver root it publishes for the rest of the
// node (/run/nvidia/driver), as NVIDIA's driver container does with nvidia-installer and
// `mount --rbind / /run/nvidia/driver`.

#include <functional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "test/fakes/driver/nodes.h"

namespace gpuop::fakedriver {

// Where the libraries go, relative to a root.
inline constexpr const char* kLibraryDir = "usr/lib/x86_64-linux-gnu";
// A driver root built as a directory tree (not a mount) carries this file, so that only such a
// tree is ever removed.
inline constexpr const char* kTreeMarker = ".gpuop-simulated-driver-root";

struct InstallSpec {
  std::string root;           // the container's root: "/"
  std::string lib_dir;        // the fakes: libnvidia-ml.so.1, libcuda.so.1
  std::string version;        // the scenario's driver version, "570.86.15"
  std::string scenario_yaml;  // embedded into libnvidia-ml.so.<version>
  std::string nvidia_smi;     // copied to <root>/usr/bin/nvidia-smi when that is missing
};

struct Installed {
  std::vector<std::string> libraries;  // the versioned files: libnvidia-ml.so.<v>, libcuda.so.<v>
};

// Writes <root>/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.<v> (the fake NVML with the scenario
// embedded), libcuda.so.<v> (the fake CUDA), the links libnvidia-ml.so.1, libcuda.so.1 and
// libcuda.so, and usr/bin/nvidia-smi, each atomically. Errors name the file.
absl::StatusOr<Installed> InstallUserspace(const InstallSpec& spec);

// Paths of the versioned libraries under `root` for `version`.
std::vector<std::string> VersionedLibraries(const std::string& root, const std::string& version);

enum class Publish { kAuto, kRbind, kTree };
enum class Published { kNone, kMount, kTree };

// How `driver_root` is published now: a mount point (/proc/self/mountinfo), a tree carrying
// kTreeMarker, or neither.
Published DriverRootState(const std::string& driver_root);

// Publishes `root` at `driver_root`. kRbind: mount(2) with MS_BIND|MS_REC, the real container's
// way (when `root` is "/", after making /sys's submounts unbindable and /sys private, as it
// does). kTree: a directory tree with the installed files from `root` copied in and `nodes`
// created under its dev/. kAuto: kRbind, falling back to kTree (with a log line) when the mount
// is not permitted. `log` receives progress lines.
absl::StatusOr<Published> PublishDriverRoot(const std::string& root, const std::string& version,
                                            const std::string& driver_root, Publish how,
                                            const std::vector<NodeSpec>& nodes,
                                            const std::function<void(const std::string&)>& log);

// Unmounts (lazily, with everything below it) or removes the tree at `driver_root`, leaving the
// empty directory, as `umount -l -R` leaves it. Nothing else is ever removed.
absl::Status UnpublishDriverRoot(const std::string& driver_root);

// Copies `from` to `to` through a temporary file in `to`'s directory and rename(2).
absl::Status CopyFileAtomically(const std::string& from, const std::string& to, mode_t mode);
// Points the symbolic link `link` at `target`, replacing what is there, atomically.
absl::Status LinkAtomically(const std::string& target, const std::string& link);
// mkdir -p.
absl::Status MakeDirectories(const std::string& path);

}  // namespace gpuop::fakedriver

#endif  // GPUOP_TEST_FAKES_DRIVER_DRIVER_ROOT_H_
