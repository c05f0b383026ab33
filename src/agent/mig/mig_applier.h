#ifndef GPUOP_AGENT_MIG_MIG_APPLIER_H_
#define GPUOP_AGENT_MIG_MIG_APPLIER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/mig/mig_planner.h"
#include "hw/accelerator.h"

namespace gpuop::agent::mig {

// How one GPU fared.
struct GpuOutcome {
  int gpu_index = 0;
  std::string gpu;  // "GPU 2 (NVIDIA A100-SXM4-40GB)"
  // OK when the GPU was verified, by re-discovery, to have the wanted layout. Otherwise the
  // reason, naming the GPU and, where one is involved, the profile.
  absl::Status status;
  bool changed = false;  // a hardware operation succeeded on it
  bool rebuilt = false;  // kept instances were in the way: it was rebuilt from scratch
  // The mode change was accepted but waits for a GPU reset (the driver found the GPU in use,
  // or the platform needs a reset or reboot to activate it); `status` says so.
  bool mode_pending = false;
  std::string layout;  // DescribeLayout of what it has afterwards
};

struct ApplyResult {
  std::vector<GpuOutcome> gpus;  // one per planned GPU, in plan order
  // OK when every GPU succeeded; otherwise the failures joined ("; "), with the first
  // failure's code.
  absl::Status status() const;
  // "GPU 0: 7x1g.5gb; GPU 4: MIG disabled".
  std::string Summary() const;
};

// Called before every hardware operation with what is about to happen ("destroying GPU
// instance 3 on GPU 2 (...)"); a non-OK status stops the apply at once and becomes the outcome
// of the GPUs not finished. Lets the caller enforce a deadline or a shutdown between the
// operations (a single NVML call cannot be interrupted).
using ApplyCheck = std::function<absl::Status(const std::string& step)>;

// Executes `plan` through `accelerator`, GPU by GPU; a GPU that fails does not stop the others.
// Per GPU: destroy the listed instances; change the MIG mode and re-discover (a change the
// driver defers to a GPU reset ends that GPU with `mode_pending`, for the caller to reset it);
// re-plan once the mode change made the profile table known; create the missing instances in
// order, and when the hardware finds no placement (ResourceExhausted), destroy everything on
// that GPU and create the whole layout larger-first once more; finally re-discover and verify
// that the GPU has exactly the wanted layout.
//
// Thread-compatible: callers serialize changes to one machine's MIG layout.
ApplyResult ApplyLayoutPlan(hw::Accelerator& accelerator, const LayoutPlan& plan,
                            const ApplyCheck& check = nullptr);

}  // namespace gpuop::agent::mig

#endif  // GPUOP_AGENT_MIG_MIG_APPLIER_H_
