#ifndef GPUOP_AGENT_MPS_ROOT_H_
#define GPUOP_AGENT_MPS_ROOT_H_

#include <filesystem>
#include <map>
#include <string>

#include "absl/strings/string_view.h"

namespace gpuop::agent::mps {

// NVIDIA's layout under an MPS root (flags.mpsRoot on the host, /mps in the containers), shared
// by the MPS control daemons, the device plugin and the containers it hands MPS devices to:
//   <root>/<resource>/pipe      the daemon's control pipe (CUDA_MPS_PIPE_DIRECTORY)
//   <root>/<resource>/log       its logs (CUDA_MPS_LOG_DIRECTORY)
//   <root>/<resource>/.started  written once the daemon of the resource is configured
//   <root>/shm                  the shm every daemon and client shares (the clients' /dev/shm)
//   <root>/.ready               written once every daemon has started (see ReadyFile)
// <resource> is the full resource name, so "nvidia.com/gpu" is a directory "nvidia.com" with
// "gpu" in it, as NVIDIA's daemon makes it.
class Root {
 public:
  explicit Root(std::filesystem::path dir) : dir_(std::move(dir)) {}

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path ResourceDir(absl::string_view resource) const;
  std::filesystem::path PipeDir(absl::string_view resource) const;
  std::filesystem::path LogDir(absl::string_view resource) const;
  std::filesystem::path StartedFile(absl::string_view resource) const;
  std::filesystem::path ShmDir() const { return dir_ / "shm"; }
  std::filesystem::path ReadyFile() const { return dir_ / ".ready"; }

 private:
  std::filesystem::path dir_;
};

// Where containers see the MPS root, and where an MPS client's shm goes.
inline constexpr char kContainerRoot[] = "/mps";
inline constexpr char kClientShmDir[] = "/dev/shm";
// The variables an MPS client (and the control program) finds its daemon by.
inline constexpr char kPipeDirEnv[] = "CUDA_MPS_PIPE_DIRECTORY";
inline constexpr char kLogDirEnv[] = "CUDA_MPS_LOG_DIRECTORY";

// The ready file's content: for each resource with a running daemon, the GPUs it shares and
// their replicas. The device plugin serves an MPS resource only while the file lists it with
// the GPUs and replicas the plugin's own plan has, so a daemon started for an older
// configuration never stands in for the current one (NVIDIA's ready file holds its daemon's MPS
// configuration for the same check). One line per resource:
//   <resource> <gpu uuid>=<replicas>[,<gpu uuid>=<replicas>...]
// GPUs sorted by UUID.
using ReadyResources = std::map<std::string, std::map<std::string, int>>;
std::string FormatReady(const ReadyResources& resources);
// Lines that do not have the form above are skipped (the file is ours, but a torn or foreign
// file must never crash the plugin).
ReadyResources ParseReady(absl::string_view text);

}  // namespace gpuop::agent::mps

#endif  // GPUOP_AGENT_MPS_ROOT_H_
