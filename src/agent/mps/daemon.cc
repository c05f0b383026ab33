#include "agent/mps/daemon.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace gpuop::agent::mps {
namespace {

absl::Status InResource(const std::string& resource, absl::string_view step,
                        const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat("MPS daemon of ", resource, ": ", step, ": ", status.message()));
}

}  // namespace

Daemon::Daemon(std::string resource, std::vector<SharedGpu> gpus, Root root,
               hw::Accelerator& gpu_control, ControlProgram& control)
    : resource_(std::move(resource)),
      gpus_(std::move(gpus)),
      root_(std::move(root)),
      gpu_control_(gpu_control),
      control_(control) {}

ControlDirs Daemon::Dirs() const {
  return {.pipe_dir = root_.PipeDir(resource_), .log_dir = root_.LogDir(resource_)};
}

std::vector<std::string> Daemon::PinnedMemoryLimits() const {
  std::vector<std::string> out;
  for (const SharedGpu& gpu : gpus_) {
    if (gpu.memory_bytes == 0 || gpu.replicas < 1) continue;
    const uint64_t mib = gpu.memory_bytes / static_cast<uint64_t>(gpu.replicas) / (1024 * 1024);
    out.push_back(absl::StrCat(gpu.index, " ", mib, "M"));
  }
  return out;
}

int Daemon::ActiveThreadPercentage() const {
  int replicas = 1;
  for (const SharedGpu& gpu : gpus_) replicas = std::max(replicas, gpu.replicas);
  return 100 / replicas;
}

absl::Status Daemon::SetComputeModes(hw::ComputeMode mode) {
  for (const SharedGpu& gpu : gpus_) {
    GPUOP_RETURN_IF_ERROR(InResource(
        resource_,
        absl::StrCat("set GPU ", gpu.index, " to compute mode ", hw::ComputeModeName(mode)),
        gpu_control_.SetComputeMode(gpu.index, mode)));
  }
  return absl::OkStatus();
}

absl::Status Daemon::Start() {
  GPUOP_RETURN_IF_ERROR(SetComputeModes(hw::ComputeMode::kExclusiveProcess));
  const ControlDirs dirs = Dirs();
  for (const auto& dir : {dirs.pipe_dir, dirs.log_dir}) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return InResource(resource_, absl::StrCat("create ", dir.string()),
                        absl::UnavailableError(ec.message()));
    }
  }
  GPUOP_RETURN_IF_ERROR(InResource(resource_, "start", control_.StartDaemon(dirs)));
  for (const std::string& limit : PinnedMemoryLimits()) {
    const std::string command = absl::StrCat("set_default_device_pinned_mem_limit ", limit);
    GPUOP_RETURN_IF_ERROR(InResource(resource_, command, control_.Send(dirs, command).status()));
  }
  const std::string threads =
      absl::StrCat("set_default_active_thread_percentage ", ActiveThreadPercentage());
  GPUOP_RETURN_IF_ERROR(InResource(resource_, threads, control_.Send(dirs, threads).status()));
  return InResource(resource_, "write the started file",
                    common::WriteFileAtomically(root_.StartedFile(resource_), ""));
}

absl::Status Daemon::Stop() {
  absl::Status first = InResource(resource_, "quit", control_.Send(Dirs(), "quit").status());
  first.Update(SetComputeModes(hw::ComputeMode::kDefault));
  std::error_code ec;
  std::filesystem::remove(root_.StartedFile(resource_), ec);
  if (ec) {
    first.Update(
        InResource(resource_, "remove the started file", absl::UnavailableError(ec.message())));
  }
  std::filesystem::remove_all(root_.LogDir(resource_), ec);
  return first;
}

absl::Status Daemon::CheckHealthy() {
  return InResource(resource_, "health check",
                    control_.Send(Dirs(), "get_default_active_thread_percentage").status());
}

}  // namespace gpuop::agent::mps
