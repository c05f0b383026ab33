#ifndef GPUOP_AGENT_CDI_HOOK_HOOK_H_
#define GPUOP_AGENT_CDI_HOOK_HOOK_H_

#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "agent/cdi/hook/confined_exec.h"
#include "agent/cdi/hook/oci_state.h"

// gpuop-cdi-hook: the OCI createContainer hook gpuop's CDI spec runs, so that containers load the
// driver's libraries by SONAME without NVIDIA's container toolkit. Subcommands and flags are those
// of NVIDIA's nvidia-cdi-hook, so a spec written for either binary works with the other:
//
//   create-symlinks --link <target>::<link> ...
//       Creates each <link> (an absolute path in the container) as a symlink to <target>
//       (written as given, normally a file name beside it), like `chroot <root> ln -sf`.
//   enable-cuda-compat --host-driver-version=<version>
//       When the image has CUDA forward-compatibility libraries (/usr/local/cuda/compat/
//       libcuda.so.<version>) newer (by major version) than the host's driver, writes
//       /etc/ld.so.conf.d/00-compat-gpuop.conf naming that directory, so the next ldconfig
//       (update-ldcache) puts them before the driver's. Without compat libraries, an
//       /etc/ld.so.cache or an /etc/ld.so.conf.d directory in the image it does nothing, as
//       nvidia-cdi-hook does. Run it before update-ldcache.
//   update-ldcache --folder <dir> ...
//       Writes /etc/ld.so.conf.d/00-gpuop-driver.conf naming the folders that neither the
//       image's /etc/ld.so.conf (with its includes) nor the loader's built-in directories cover
//       (listing those again would move them ahead of the image's own; /etc/debian_version picks
//       the multiarch or the lib64 list, as nvidia-cdi-hook does), creating /etc/ld.so.conf with
//       the usual include line when the image has none, then runs the image's own ldconfig
//       (never the host's),
//       confined to the container's root (RunConfined). An image without ldconfig
//       (/sbin/ldconfig.real, /sbin/ldconfig, /usr/sbin/ldconfig.real, /usr/sbin/ldconfig) is
//       left alone: the SONAME links are what its loader can use. ldconfig failing is reported
//       on stderr, not fatal: the links already let the loader find the libraries.
//       --ldconfig-path (a host path in nvidia-cdi-hook) is accepted and ignored.
//
// The container comes from the OCI state on standard input (see ParseContainerState). Every
// path in the container is resolved inside its root (RootDir), so a hostile image cannot make
// the hook write outside it. Exit codes: 0 done (or nothing to do), 1 failed, 2 bad usage.
namespace gpuop::agent::cdi::hook {

inline constexpr char kCompatConfFile[] = "/etc/ld.so.conf.d/00-compat-gpuop.conf";
inline constexpr char kDriverConfFile[] = "/etc/ld.so.conf.d/00-gpuop-driver.conf";
inline constexpr char kCudaCompatDir[] = "/usr/local/cuda/compat";

struct HookEnvironment {
  std::istream* state = nullptr;  // the OCI state
  std::ostream* log = nullptr;    // diagnostics (the runtime shows them when the hook fails)
  ReadFileFn read_file = ReadHostFile;
  // Runs the image's ldconfig; RunConfined with a 60 s limit by default.
  ConfinedRunner run = [](const std::string& root, const std::vector<std::string>& argv) {
    return RunConfined(root, argv, 60);
  };
};

// Runs the hook: `args` are the arguments after argv[0] (the subcommand first). Returns the exit
// code. Never throws.
int RunHook(const std::vector<std::string>& args, const HookEnvironment& env);

}  // namespace gpuop::agent::cdi::hook

#endif  // GPUOP_AGENT_CDI_HOOK_HOOK_H_
