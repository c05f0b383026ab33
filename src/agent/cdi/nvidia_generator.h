#ifndef GPUOP_AGENT_CDI_NVIDIA_GENERATOR_H_
#define GPUOP_AGENT_CDI_NVIDIA_GENERATOR_H_

#include <string>
#include <vector>

#include "agent/cdi/driver_files.h"
#include "agent/cdi/generator.h"
#include "agent/cdi/host_files.h"
#include "agent/cdi/kinds.h"

namespace gpuop::agent::cdi {

struct NvidiaCdiOptions {
  // gpuop's own kind (kinds.h says why it is not nvidia.com/gpu).
  std::string vendor = kNvidiaCdiVendor;
  std::string device_class = kNvidiaCdiClass;
  // Where the user-space driver is, as the host sees it: "/" or a driver container's root such
  // as "/run/nvidia/driver". Libraries, binaries and firmware are looked up under it; the
  // container gets each at its path inside the root (DriverFilesOptions has the search lists).
  // driver.driver_version is ignored: the inventory's driver version is used.
  DriverFilesOptions driver;
  // The host's device directory: nodes are looked up here, and containers get them under /dev.
  std::string dev_root = "/dev";
  // The host's procfs, for the MIG capability files.
  std::string proc_root = "/proc";
  // The OCI hook on the host, as the runtime runs it: gpuop-cdi-hook as the CDI component installs
  // it (kHookHostPath in hook_install.h), or nvidia-cdi-hook, which takes the same subcommands.
  // Empty: no hooks; the image must then bring its own library links and ld cache entries.
  std::string hook_path;
  // Spec-wide environment. NVIDIA_VISIBLE_DEVICES=void stops a legacy NVIDIA runtime hook in the
  // same container from injecting devices a second time.
  std::vector<std::string> env = {"NVIDIA_VISIBLE_DEVICES=void"};
  // Emit the "all" device (every device's edits together).
  bool all_device = true;
  // The agent's view of the host's files (sysroot, stat, whether to record device numbers).
  HostFiles files;
};

// Builds the NVIDIA spec, following the naming of nvidia-ctk (NVIDIA container toolkit):
//
// Devices, GPU by GPU in inventory order, then "all":
//   "<index>" and "<uuid>" ("0", "GPU-8f6b...") for every GPU, MIG-enabled or not:
//       /dev/nvidia<minor number>
//   "<gpu index>:<mig index>" and "<mig uuid>" ("0:1", "MIG-7d1e...") for every MIG device,
//   where the MIG index is its position in Gpu::mig_devices:
//       /dev/nvidia<parent minor>, /dev/nvidia-caps/nvidia-cap<GI cap>,
//       /dev/nvidia-caps/nvidia-cap<CI cap>   (see mig_caps.h for how caps are resolved)
//   "all": the union of the above, in order.
// Spec-wide edits:
//   env (options.env);
//   device nodes /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools, /dev/nvidia-modeset,
//       each only when present;
//   read-only bind mounts ("ro", "nosuid", "nodev", "rbind", "rprivate") of the driver's
//       libraries, binaries, firmware directory and the IPC sockets and MPS pipe directory that
//       exist (FindDriverFiles);
//   with a hook path, createContainer hooks as nvidia-ctk writes them, in this order:
//       "<hook> create-symlinks --link <target>::<link>..." for the SONAME and development links
//           (DriverFiles::links);
//       "<hook> enable-cuda-compat --host-driver-version=<driver version>";
//       "<hook> update-ldcache --folder <dir>..." for the library directories;
//   where <hook> is the hook path's file name (argv[0]).
//
// Device nodes are named by path only (unless options.files.record_device_numbers): the runtime
// stats the host's node when it creates the container, so a node whose major number changed since
// generation (nvidia-uvm's is allocated at module load) is still right. They get
// hostPath = <dev_root>/... when dev_root is not "/dev".
//
// A UUID that is not a valid CDI device name (pre-R470 MIG UUIDs contain '/') is skipped with
// a warning, and the device keeps its index name.
// A GPU without a minor number or whose /dev/nvidia<minor> is missing, and a MIG device whose
// node or capabilities cannot be resolved, is left out with a warning; so are the names that
// would have pointed at it. Missing nvidiactl or nvidia-uvm, or no libraries found, are
// warnings. The spec's cdiVersion is MinimumCdiVersion of the result ("0.5.0" for index names).
class NvidiaCdiGenerator final : public CdiGenerator {
 public:
  explicit NvidiaCdiGenerator(NvidiaCdiOptions options);

  // Takes the NVIDIA backend's inventory (every GPU's vendor kNvidia; driver_version set).
  [[nodiscard]] absl::StatusOr<GeneratedSpec> Generate(
      const hw::Inventory& inventory) const override;

 private:
  const NvidiaCdiOptions options_;
};

}  // namespace gpuop::agent::cdi

#endif  // GPUOP_AGENT_CDI_NVIDIA_GENERATOR_H_
