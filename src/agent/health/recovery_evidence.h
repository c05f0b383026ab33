#ifndef GPUOP_AGENT_HEALTH_RECOVERY_EVIDENCE_H_
#define GPUOP_AGENT_HEALTH_RECOVERY_EVIDENCE_H_

#include <filesystem>
#include <string>

#include "absl/time/time.h"

namespace gpuop::agent {

// What the node shows of the recovery actions that have happened: the health tracker ends a
// GPU's ResetGpu, RebootNode or ContactSupport condition only on this evidence, never because
// time passed.
class RecoveryEvidence {
 public:
  virtual ~RecoveryEvidence() = default;
  // The kernel's boot ID: a different one means the node rebooted. Empty when unknown.
  virtual std::string BootId() const = 0;
  // When the GPU driver last finished loading (a reload resets every GPU); InfinitePast when
  // unknown, as with a driver installed on the host.
  virtual absl::Time DriverLoadedAt() const = 0;
  // When gpuop last reset the GPU `uuid`; InfinitePast when never.
  virtual absl::Time GpuResetAt(const std::string& uuid) const = 0;
};

// The evidence on a node:
//   boot ID         /proc/sys/kernel/random/boot_id
//   driver loaded   the modification time of the driver container's ready file, which its
//                   startup probe creates once the driver answers and its preStop hook removes
//                   (/run/nvidia/validations/.driver-ctr-ready, as NVIDIA's driver DaemonSet)
//   GPU reset       the modification time of <reset_dir>/<GPU UUID>, which the component that
//                   reset the GPU touches (RecordGpuReset)
struct NodeRecoveryEvidenceOptions {
  std::filesystem::path boot_id = "/proc/sys/kernel/random/boot_id";
  std::filesystem::path driver_ready = "/run/nvidia/validations/.driver-ctr-ready";
  std::filesystem::path reset_dir = "/run/gpuop/gpu-resets";
};

class NodeRecoveryEvidence : public RecoveryEvidence {
 public:
  explicit NodeRecoveryEvidence(NodeRecoveryEvidenceOptions options = {})
      : options_(std::move(options)) {}
  std::string BootId() const override;
  absl::Time DriverLoadedAt() const override;
  absl::Time GpuResetAt(const std::string& uuid) const override;

 private:
  const NodeRecoveryEvidenceOptions options_;
};

// Records that the GPU `uuid` was reset now (touches <reset_dir>/<uuid>).
[[nodiscard]] bool RecordGpuReset(const std::filesystem::path& reset_dir, const std::string& uuid);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_HEALTH_RECOVERY_EVIDENCE_H_
