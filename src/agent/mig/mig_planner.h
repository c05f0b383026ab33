#ifndef GPUOP_AGENT_MIG_MIG_PLANNER_H_
#define GPUOP_AGENT_MIG_MIG_PLANNER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/mig/mig_config.h"
#include "hw/model.h"

namespace gpuop::agent::mig {

// Pure planning: from the GPUs as discovered and the layout wanted, the hardware operations
// that get there. No I/O; every function here is deterministic.

// What to do to one GPU, in execution order: destroy, then change the mode, then create.
struct GpuPlan {
  int gpu_index = 0;
  std::string gpu;  // "GPU 2 (NVIDIA A100-SXM4-40GB)", for messages
  GpuLayout desired;
  // GPU instances to destroy (their ids); every instance when MIG is being turned off.
  std::vector<unsigned int> destroy;
  // Set when the MIG mode must change.
  std::optional<bool> set_mig_mode;
  // Profiles to create, in this order (larger profiles first, so they find a placement).
  std::vector<std::string> create;
  // MIG is off now, so the GPU's profile table is unknown (NVML reports it only with MIG on):
  // `create` is provisional, and the applier re-plans and checks the fit once the mode took
  // effect.
  bool replan_after_mode_change = false;

  bool in_place() const { return destroy.empty() && !set_mig_mode.has_value() && create.empty(); }
};

struct LayoutPlan {
  std::vector<GpuPlan> gpus;  // by GPU index; only GPUs the layout selects

  bool in_place() const;
  // Indexes of the GPUs whose plan is not in place.
  std::vector<int> changing_gpus() const;
};

enum class PlanStrategy {
  // Keep GPU instances that the layout still wants, so their MIG devices (and UUIDs) survive.
  kKeepMatching,
  // Destroy every instance and create the layout from scratch, larger profiles first: the
  // fallback when kept instances leave no placement for the new ones.
  kRebuild,
};

// "GPU 2 (NVIDIA A100-SXM4-40GB)".
std::string DescribeGpu(const hw::Gpu& gpu);

// The layout a GPU has now: its mode and its GPU instances by profile. A GPU instance counts
// once however many compute instances it has.
GpuLayout CurrentLayout(const hw::Gpu& gpu);

// Whether `gpu` already has `desired`: the mode matches with no change pending, and MIG is off,
// or its GPU instances match the counts exactly, each with one compute instance: filling it for
// a profile "3g.20gb", of c slices for "<c>c.3g.20gb" (hw/mig_profile.h).
bool InPlace(const hw::Gpu& gpu, const GpuLayout& desired);

// Checks that `counts` fits an empty GPU with the profiles `gpu` offers: every profile offered,
// no more instances of a profile than fit, and the sum of slices and of memory within the whole
// GPU's. InvalidArgument names the GPU and the profile:
// "GPU 3 (NVIDIA A100-SXM4-40GB): 2x4g.20gb does not fit: at most 1 fit".
[[nodiscard]] absl::Status CheckFits(const hw::Gpu& gpu, const std::map<std::string, int>& counts);

// The creation order of `counts` on `gpu`: larger profiles first (slices, then memory), then by
// name; each profile repeated by its count. Profiles the GPU does not offer sort by the slice
// count their name states.
std::vector<std::string> CreationOrder(const hw::Gpu& gpu,
                                       const std::map<std::string, int>& counts);

// Plans one GPU. Profiles are mig-parted's: "3g.20gb" is a GPU instance with one compute
// instance filling it, "1c.3g.20gb" one with a compute instance of one slice ("<c>c." naming the
// whole GPU instance is the same as none). InvalidArgument (naming the GPU and profile) when the
// layout cannot be had:
// MIG wanted on a GPU that is not MIG-capable, a profile not offered, or a layout that does not
// fit. A MIG-capable GPU with MIG off gets a provisional plan (see replan_after_mode_change).
[[nodiscard]] absl::StatusOr<GpuPlan> PlanGpu(const hw::Gpu& gpu, const GpuLayout& desired,
                                              PlanStrategy strategy = PlanStrategy::kKeepMatching);

// Plans every GPU `desired` names. Errors of all GPUs are joined into one InvalidArgument.
// NotFound when `desired` names a GPU the inventory lacks.
[[nodiscard]] absl::StatusOr<LayoutPlan> PlanLayout(const hw::Inventory& inventory,
                                                    const DesiredLayout& desired);

}  // namespace gpuop::agent::mig

#endif  // GPUOP_AGENT_MIG_MIG_PLANNER_H_
