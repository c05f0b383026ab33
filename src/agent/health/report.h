#ifndef GPUOP_AGENT_HEALTH_REPORT_H_
#define GPUOP_AGENT_HEALTH_REPORT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "agent/health/tracker.h"
#include "hw/model.h"
#include "kube/types/object_meta.h"

namespace gpuop::agent {

// The health of one device: a whole GPU, or one MIG instance of a healthy GPU.
struct DeviceHealth {
  int gpu_index = 0;
  std::string gpu_uuid;    // the GPU's UUID (its PCI address for AMD)
  std::string pci_bus_id;  // "0000:17:00.0"
  std::string product;
  std::optional<unsigned int> gpu_instance_id;  // set for a MIG instance
  std::string mig_uuid;                         // set for a MIG instance
  std::optional<Unhealthy> problem;             // nullopt: healthy

  // "GPU 3 (GPU-8f1c..., 0000:17:00.0)" or "MIG instance 2 of GPU 3 (...)".
  std::string Describe() const;
  friend bool operator==(const DeviceHealth&, const DeviceHealth&);
};

// Every device's health at one moment.
struct HealthReport {
  absl::Time time;
  std::vector<DeviceHealth> devices;

  int unhealthy_count() const;
  bool healthy() const { return unhealthy_count() == 0; }
};

// The report for the GPUs in `inventories` as `tracker` sees them now. A MIG instance appears on
// its own only when its GPU is healthy and an XID attributed to it is not.
HealthReport BuildReport(const HealthTracker& tracker,
                         const std::vector<hw::Inventory>& inventories, absl::Time now);

// What changed from `before` to `after`, device by device: newly unhealthy (or unhealthy for a
// different reason) and recovered.
struct HealthTransition {
  DeviceHealth device;  // as it is after the change
  bool recovered = false;
  std::optional<Unhealthy> previous;  // the problem it had before, if any
  absl::Time time;                    // when it happened (the condition's onset for a problem)
};
std::vector<HealthTransition> Diff(const HealthReport& before, const HealthReport& after);

// The Node condition this report amounts to:
//   GPUHealthy=True,  reason AllGPUsHealthy, "8 GPUs healthy"
//   GPUHealthy=False, reason the problem's code when every unhealthy device shares it (XidError)
//                     or MultipleProblems, and a message naming each unhealthy device and why.
// last_transition_time is left unset; the publisher keeps it.
inline constexpr absl::string_view kGpuHealthyCondition = "GPUHealthy";
kube::Condition NodeCondition(const HealthReport& report);

// What the node must do for its GPUs to be healthy again: the largest action of the unhealthy
// devices; nullopt when none waits for one.
std::optional<XidAction> RequiredAction(const HealthReport& report);

// The Node condition saying it, for the operator's remediation and for people:
//   GPURecoveryAction=True,  reason ResetGpu | RebootNode | ContactSupport, a message naming the
//                            devices that need it and why
//   GPURecoveryAction=False, reason None
inline constexpr absl::string_view kGpuRecoveryActionCondition = "GPURecoveryAction";
kube::Condition RecoveryActionCondition(const HealthReport& report);

// The health file the device plugin reads (/run/gpuop/gpu-health.json):
//   {"updated": RFC 3339, "expires": RFC 3339,
//    "gpus": [{"uuid", "index", "pciBusId", "healthy", "code", "reason", "since", "action",
//              "migInstances": [{"gpuInstanceId", "uuid", "code", "reason", "since"}]}]}
// A reader ignores the verdicts once `expires` has passed: a monitor that stopped must not
// hold devices unhealthy forever.
std::string HealthFileJson(const HealthReport& report, absl::Time expires);

// The unhealthy whole GPUs in a health file, by GPU UUID, as of `now`: empty once the file has
// expired. InvalidArgument naming the field when the file is malformed.
[[nodiscard]] absl::StatusOr<std::map<std::string, Unhealthy>> ParseHealthFile(
    absl::string_view json, absl::Time now);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_HEALTH_REPORT_H_
