#ifndef GPUOP_HW_NVML_DRIVER_LIBRARY_H_
#define GPUOP_HW_NVML_DRIVER_LIBRARY_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

// Where a gpuop component finds the NVIDIA driver's user-space libraries (libnvidia-ml,
// libcuda) when no container runtime put them in its container: gpuop's components run with
// plain runc and see the host through a hostPath mount, so they look for the library themselves,
// in the same order everywhere.
namespace gpuop::hw {

inline constexpr char kNvmlSoname[] = "libnvidia-ml.so.1";
inline constexpr char kCudaSoname[] = "libcuda.so.1";
// The value of a library flag that asks for ResolveDriverLibrary.
inline constexpr char kAutoLibrary[] = "auto";

struct DriverLibrarySearch {
  // Searched in order, as this process sees them: the root gpuop's driver container exposes
  // (on the host /run/nvidia/driver; in a component, under its host mount), then the host's own
  // root ("/" on the host, "/host" in a component). Empty entries are skipped.
  std::vector<std::string> roots;
  // Relative to each root, in order: Debian/Ubuntu multiarch, RHEL/SUSE lib64, then the rest.
  std::vector<std::string> library_dirs = {
      "usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "usr/lib64", "usr/lib",
      "lib/x86_64-linux-gnu",     "lib/aarch64-linux-gnu",     "lib64",     "lib"};
};

// The path to dlopen for `soname` ("libnvidia-ml.so.1"): <root>/<dir>/<soname> for the first
// root and directory where it resolves to a regular file, or `soname` itself when none does, so
// the dynamic loader searches its own path (a runtime that mounted the driver, LD_LIBRARY_PATH).
//
// Links are followed inside their root, as the host would follow them: an absolute target
// ("/usr/lib64/libnvidia-ml.so.570.86.15", or a directory link lib64 -> /usr/lib64) is taken
// relative to the root, never to this process's own file system, and the path returned has
// every link resolved, so that dlopen loads the host's file; `..` stops at the root, as in a
// chroot. More than 40 links, a dangling link or anything unreadable make that candidate not
// found. Never fails; reads only; thread-safe.
std::string ResolveDriverLibrary(absl::string_view soname, const DriverLibrarySearch& search);

// Libraries of the driver that libcuda opens by soname while it runs (the PTX JIT compiler and
// what it needs), which the loader would look for in this process's own library path, not in the
// driver's directory. Without them a PTX module fails with CUDA_ERROR_JIT_COMPILER_NOT_FOUND.
// "*" stands for the driver version, taken from the library's own file name.
inline constexpr const char* kCudaCompanions[] = {
    "libnvidia-gpucomp.so.*", "libnvidia-ptxjitcompiler.so.1", "libnvidia-nvvm.so.4"};

// Loads each of `companions` that exists beside `library` (a path ResolveDriverLibrary returned,
// such as /host/usr/lib64/libcuda.so.570.86.15) with RTLD_GLOBAL, so that the driver's later
// dlopen of the soname finds the copy already loaded. Best effort: a companion that is absent or
// does not load is skipped; nothing for a bare soname. Returns the paths loaded, which stay
// loaded for the life of the process.
std::vector<std::string> PreloadCompanions(const std::string& library,
                                           const std::vector<std::string>& companions);

// `path` resolved inside `root` as described above; empty when it does not lead to a regular
// file. `path` is relative to the root (a leading '/' is ignored).
std::string ResolveInRoot(absl::string_view root, absl::string_view path);

}  // namespace gpuop::hw

#endif  // GPUOP_HW_NVML_DRIVER_LIBRARY_H_
