#ifndef GPUOP_AGENT_CDI_MIG_CAPS_H_
#define GPUOP_AGENT_CDI_MIG_CAPS_H_

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::agent::cdi {

// MIG access control: a process may use a MIG GPU instance (GI) and compute instance (CI) only if
// it can open their capability device nodes /dev/nvidia-caps/nvidia-cap<N>. The driver publishes
// N for each instance in two places, keyed by the parent GPU's *minor number* (the <M> of
// /dev/nvidia<M>, not its NVML index):
//
//   <proc>/driver/nvidia/capabilities/gpu<M>/mig/gi<G>/access
//   <proc>/driver/nvidia/capabilities/gpu<M>/mig/gi<G>/ci<C>/access
//       "Key: value" lines; the minor is DeviceFileMinor:
//         DeviceFileMinor: 21
//         DeviceFileMode: 292
//         DeviceFileModify: 1
//   <proc>/driver/nvidia-caps/mig-minors
//       one "<capability> <minor>" per line for every possible instance:
//         config 1
//         monitor 2
//         gpu0/gi1/access 12
//         gpu0/gi1/ci0/access 13
//
// The access file exists only while the instance does; mig-minors lists every possible one.
// The resolver reads the access file and falls back to mig-minors (as nvidia-container-toolkit
// does) when the access file is missing.

// The DeviceFileMinor of an access file's content. InvalidArgument naming `path` when the line
// is missing or not a number.
[[nodiscard]] absl::StatusOr<unsigned int> ParseDeviceFileMinor(absl::string_view content,
                                                                const std::string& path);

// The capability -> minor table of a mig-minors file. Lines that are not "<name> <number>" are
// skipped (the toolkit skips them too); the result may be empty.
std::map<std::string, unsigned int> ParseMigMinors(absl::string_view content);

// Resolves cap minors for one generation pass; it reads mig-minors at most once, so a new
// resolver sees a new layout. Not thread-safe.
class MigCapResolver {
 public:
  // `proc_dir`: the procfs directory as this process opens it ("/proc", "/host/proc").
  explicit MigCapResolver(std::filesystem::path proc_dir);

  // The nvidia-cap minor guarding GI `gi` of the GPU with minor number `gpu_minor`. NotFound
  // naming both places looked at when neither knows the instance; InvalidArgument naming the
  // file when its content is malformed; other read errors name the file.
  [[nodiscard]] absl::StatusOr<unsigned int> GpuInstance(unsigned int gpu_minor, unsigned int gi);
  // The same for CI `ci` inside GI `gi`.
  [[nodiscard]] absl::StatusOr<unsigned int> ComputeInstance(unsigned int gpu_minor,
                                                             unsigned int gi, unsigned int ci);

 private:
  // `capability` is "gpu0/gi1/access" or "gpu0/gi1/ci0/access"; `access_file` its proc file.
  absl::StatusOr<unsigned int> Resolve(const std::string& capability,
                                       const std::filesystem::path& access_file);

  const std::filesystem::path proc_dir_;
  // mig-minors, read on first need; nullopt when the file does not exist.
  std::optional<std::optional<std::map<std::string, unsigned int>>> mig_minors_;
};

}  // namespace gpuop::agent::cdi

#endif  // GPUOP_AGENT_CDI_MIG_CAPS_H_
