#include "agent/mig/mig_applier.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace gpuop::agent::mig {
namespace {

absl::Status Annotate(const absl::Status& status, absl::string_view what) {
  return absl::Status(status.code(), absl::StrCat(what, ": ", status.message()));
}

class GpuApplier {
 public:
  GpuApplier(hw::Accelerator& accelerator, const ApplyCheck& check, GpuOutcome& outcome)
      : accelerator_(accelerator), check_(check), outcome_(outcome) {}

  absl::Status Apply(GpuPlan plan) {
    GPUOP_RETURN_IF_ERROR(Destroy(plan.destroy));
    if (plan.set_mig_mode.has_value()) {
      GPUOP_RETURN_IF_ERROR(SetMode(*plan.set_mig_mode));
      if (*plan.set_mig_mode) {
        // The profile table is known now: plan the instances for real (and check the fit).
        absl::StatusOr<hw::Gpu> gpu = Rediscover();
        if (!gpu.ok()) return gpu.status();
        absl::StatusOr<GpuPlan> replanned = PlanGpu(*gpu, plan.desired);
        if (!replanned.ok()) return replanned.status();
        GPUOP_RETURN_IF_ERROR(Destroy(replanned->destroy));
        plan.create = replanned->create;
      }
    }
    GPUOP_RETURN_IF_ERROR(Create(plan));
    return Verify(plan.desired);
  }

 private:
  absl::Status Check(const std::string& step) {
    return check_ ? check_(absl::StrCat(step, " on ", outcome_.gpu)) : absl::OkStatus();
  }

  absl::StatusOr<hw::Gpu> Rediscover() {
    absl::StatusOr<hw::Inventory> inventory = accelerator_.Discover();
    if (!inventory.ok()) return Annotate(inventory.status(), outcome_.gpu + ": re-discover");
    for (hw::Gpu& gpu : inventory->gpus) {
      if (gpu.index == outcome_.gpu_index) return std::move(gpu);
    }
    return absl::NotFoundError(absl::StrCat(outcome_.gpu, ": gone after re-discovery"));
  }

  absl::Status Destroy(const std::vector<unsigned int>& ids) {
    for (unsigned int id : ids) {
      GPUOP_RETURN_IF_ERROR(Check(absl::StrCat("destroying GPU instance ", id)));
      const absl::Status destroyed = accelerator_.DestroyMigDevice(outcome_.gpu_index, id);
      if (!destroyed.ok()) {
        return Annotate(destroyed, absl::StrCat(outcome_.gpu, ": destroy GPU instance ", id));
      }
      outcome_.changed = true;
    }
    return absl::OkStatus();
  }

  absl::Status SetMode(bool enabled) {
    const char* mode = enabled ? "enabled" : "disabled";
    GPUOP_RETURN_IF_ERROR(Check(absl::StrCat("setting MIG mode ", mode)));
    absl::StatusOr<bool> reset_needed = accelerator_.SetMigMode(outcome_.gpu_index, enabled);
    if (!reset_needed.ok()) {
      return Annotate(reset_needed.status(), absl::StrCat(outcome_.gpu, ": set MIG mode ", mode));
    }
    outcome_.changed = true;
    absl::StatusOr<hw::Gpu> gpu = Rediscover();
    if (!gpu.ok()) return gpu.status();
    if (gpu->mig_enabled == enabled && !gpu->mig_pending_change) return absl::OkStatus();
    outcome_.mode_pending = true;
    return absl::FailedPreconditionError(absl::StrCat(
        outcome_.gpu, ": MIG mode ", mode, " is pending a GPU reset",
        *reset_needed ? " (the driver reports the GPU in use or a reset required)" : ""));
  }

  absl::Status CreateAll(const std::vector<std::string>& profiles, const GpuLayout& desired,
                         bool* no_placement) {
    std::map<std::string, int> created;
    for (const std::string& profile : profiles) {
      GPUOP_RETURN_IF_ERROR(Check(absl::StrCat("creating a ", profile, " instance")));
      absl::StatusOr<hw::MigDevice> device =
          accelerator_.CreateMigDevice(outcome_.gpu_index, profile);
      if (!device.ok()) {
        *no_placement = device.status().code() == absl::StatusCode::kResourceExhausted;
        const GpuLayout so_far{.mig_enabled = true, .mig_devices = created};
        return Annotate(
            device.status(),
            absl::StrCat(
                outcome_.gpu, ": cannot create MIG profile ", profile,
                created.empty() ? "" : absl::StrCat(" after creating ", DescribeLayout(so_far)),
                " (wanted ", DescribeLayout(desired), ")"));
      }
      outcome_.changed = true;
      ++created[profile];
    }
    return absl::OkStatus();
  }

  absl::Status Create(const GpuPlan& plan) {
    bool no_placement = false;
    const absl::Status first = CreateAll(plan.create, plan.desired, &no_placement);
    if (first.ok() || !no_placement) return first;
    // Instances that were kept (or placed first) left no placement: start from an empty GPU.
    absl::StatusOr<hw::Gpu> gpu = Rediscover();
    if (!gpu.ok()) return gpu.status();
    absl::StatusOr<GpuPlan> rebuild = PlanGpu(*gpu, plan.desired, PlanStrategy::kRebuild);
    if (!rebuild.ok()) return rebuild.status();
    outcome_.rebuilt = true;
    GPUOP_RETURN_IF_ERROR(Destroy(rebuild->destroy));
    return CreateAll(rebuild->create, plan.desired, &no_placement);
  }

  absl::Status Verify(const GpuLayout& desired) {
    absl::StatusOr<hw::Gpu> gpu = Rediscover();
    if (!gpu.ok()) return gpu.status();
    outcome_.layout = DescribeLayout(CurrentLayout(*gpu));
    if (InPlace(*gpu, desired)) return absl::OkStatus();
    return absl::InternalError(absl::StrCat(outcome_.gpu, ": after the change the GPU has ",
                                            outcome_.layout, ", wanted ", DescribeLayout(desired)));
  }

  hw::Accelerator& accelerator_;
  const ApplyCheck& check_;
  GpuOutcome& outcome_;
};

}  // namespace

absl::Status ApplyResult::status() const {
  std::vector<std::string> failures;
  absl::StatusCode code = absl::StatusCode::kOk;
  for (const GpuOutcome& g : gpus) {
    if (g.status.ok()) continue;
    if (code == absl::StatusCode::kOk) code = g.status.code();
    if (std::find(failures.begin(), failures.end(), g.status.message()) == failures.end()) {
      failures.emplace_back(g.status.message());
    }
  }
  if (code == absl::StatusCode::kOk) return absl::OkStatus();
  return absl::Status(code, absl::StrJoin(failures, "; "));
}

std::string ApplyResult::Summary() const {
  return absl::StrJoin(gpus, "; ", [](std::string* out, const GpuOutcome& g) {
    absl::StrAppend(out, "GPU ", g.gpu_index, ": ", g.status.ok() ? g.layout : "failed");
  });
}

ApplyResult ApplyLayoutPlan(hw::Accelerator& accelerator, const LayoutPlan& plan,
                            const ApplyCheck& check) {
  ApplyResult result;
  absl::Status stopped;
  for (const GpuPlan& gpu_plan : plan.gpus) {
    GpuOutcome& outcome = result.gpus.emplace_back();
    outcome.gpu_index = gpu_plan.gpu_index;
    outcome.gpu = gpu_plan.gpu;
    outcome.layout = DescribeLayout(gpu_plan.desired);
    if (gpu_plan.in_place()) continue;
    if (!stopped.ok()) {
      outcome.status = stopped;
      continue;
    }
    GpuApplier applier(accelerator, check, outcome);
    outcome.status = applier.Apply(gpu_plan);
    // A refusal by `check` stops everything; it is not this GPU's failure alone.
    if (!outcome.status.ok() && check) {
      const absl::Status again = check("continuing with the next GPU");
      if (!again.ok()) stopped = again;
    }
  }
  return result;
}

}  // namespace gpuop::agent::mig
