// MigManager: one change of the layout, from `pending` to `success` or `failed`.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/mig/internal/change.h"
#include "agent/mig/layout_file.h"
#include "agent/mig/mig_manager.h"
#include "common/status_macros.h"
#include "kube/events/event.h"
#include "kube/types/object_meta.h"

namespace gpuop::agent::mig {
namespace {

// Annotations are small; a reason longer than this is cut.
constexpr size_t kMaxReasonBytes = 2048;

std::optional<std::string> Lookup(const std::map<std::string, std::string>& map,
                                  const std::string& key) {
  const auto it = map.find(key);
  return it == map.end() ? std::nullopt : std::optional<std::string>(it->second);
}

std::string ChangingGpus(const LayoutPlan& plan) {
  std::vector<std::string> parts;
  for (const GpuPlan& p : plan.gpus) {
    if (!p.in_place())
      parts.push_back(absl::StrCat("GPU ", p.gpu_index, " -> ", DescribeLayout(p.desired)));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace

absl::Status MigManager::Write(const NodeWrite& write) {
  if (write.empty()) return absl::OkStatus();
  GPUOP_RETURN_IF_ERROR(node_.Patch(write.labels, write.annotations));
  ApplyWrite(write, meta_);
  return absl::OkStatus();
}

absl::Status MigManager::WriteState(const char* state, const std::string& reason) {
  NodeWrite write;
  for (const char* label : {kStateLabel, kGpuopStateLabel}) {
    if (Lookup(meta_.labels, label) != state) write.labels[label] = state;
  }
  const std::string cut = kube::Truncate(reason, kMaxReasonBytes);
  if (Lookup(meta_.annotations, kReasonAnnotation) != cut) {
    write.annotations[kReasonAnnotation] = cut;
  }
  return Write(write);
}

absl::Status MigManager::Restore() {
  return Write(RestoreWrite(meta_, options_.components, options_.restore_fallback));
}

absl::Status MigManager::CheckProcesses(const LayoutPlan& plan) {
  if (options_.force) return absl::OkStatus();
  std::map<int, std::string> changing;
  for (const GpuPlan& p : plan.gpus) {
    if (!p.in_place()) changing[p.gpu_index] = p.gpu;
  }
  if (changing.empty()) return absl::OkStatus();
  absl::StatusOr<hw::Sample> sample = accelerator_.TakeSample();
  if (!sample.ok()) {
    return absl::UnavailableError(absl::StrCat("cannot check the GPUs for processes (",
                                               sample.status().message(),
                                               "); set force to apply anyway"));
  }
  std::vector<std::string> busy;
  for (const hw::GpuSample& gpu : sample->gpus) {
    const auto it = changing.find(gpu.index);
    if (it == changing.end() || gpu.processes.empty()) continue;
    std::set<unsigned int> pids;
    for (const hw::ProcessUsage& p : gpu.processes) pids.insert(p.pid);
    busy.push_back(
        absl::StrCat(it->second, ": PID", pids.size() > 1 ? "s " : " ", absl::StrJoin(pids, ", ")));
  }
  if (busy.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("processes run on GPUs the layout changes: ", absl::StrJoin(busy, "; "),
                   "; stop them (or set force to apply anyway)"));
}

absl::Status MigManager::WaitForClients(Change& change) {
  const absl::Time pod_deadline =
      std::min(change.deadline, clock_.Now() + options_.pod_stop_timeout);
  while (true) {
    std::vector<std::string> remaining;
    for (const PausedComponent& c : options_.components) {
      if (c.pod_selector.empty()) continue;
      absl::StatusOr<std::vector<std::string>> pods = node_.ActivePods(c.pod_selector);
      if (!pods.ok()) {
        remaining.push_back(absl::StrCat("(", c.label, ": ", pods.status().message(), ")"));
        continue;
      }
      remaining.insert(remaining.end(), pods->begin(), pods->end());
    }
    if (remaining.empty()) return absl::OkStatus();
    GPUOP_RETURN_IF_ERROR(Proceed(change, absl::StrCat("waiting for GPU clients to stop (still on "
                                                       "the node: ",
                                                       absl::StrJoin(remaining, ", "), ")")));
    const absl::Time now = clock_.Now();
    if (now >= pod_deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("timed out while waiting for GPU clients to stop (pod stop timeout ",
                       absl::FormatDuration(options_.pod_stop_timeout),
                       "); still on the node: ", absl::StrJoin(remaining, ", ")));
    }
    if (!WaitUntil(std::min(pod_deadline, now + options_.poll_interval))) {
      return absl::CancelledError(
          "interrupted by agent shutdown while waiting for GPU clients to stop");
    }
  }
}

absl::Status MigManager::HardwareIdle() const {
  absl::MutexLock lock(&mu_);
  if (hardware_ == nullptr || hardware_->done) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "a MIG operation begun at ", absl::FormatTime(hardware_->started), " (", hardware_->step,
      ") has not returned; the GPU driver may be hung: reset the GPU or reboot the "
      "node"));
}

absl::Status MigManager::ApplyOnHelper(Change& change, const LayoutPlan& plan,
                                       ApplyResult& result) {
  return RunOnHelper(
      change,
      [this, plan](const ApplyCheck& check) { return ApplyLayoutPlan(accelerator_, plan, check); },
      result);
}

absl::Status MigManager::ResetAndApply(Change& change, std::vector<int> pending,
                                       ApplyResult& result) {
  const std::string gpus = absl::StrJoin(pending, ", ");
  if (change.initial_state == kStateRebooting) {
    return absl::FailedPreconditionError(
        absl::StrCat("the MIG mode change did not take effect after rebooting (GPU ", gpus, ")"));
  }
  change.step = absl::StrCat("resetting GPU ", gpus);
  GPUOP_RETURN_IF_ERROR(Proceed(change, change.step));
  ApplyResult reset;
  GPUOP_RETURN_IF_ERROR(RunOnHelper(
      change,
      [this, pending](const ApplyCheck& check) {
        ApplyResult out;
        out.gpus.push_back({.status = check("resetting the GPUs")});
        if (out.gpus[0].status.ok()) out.gpus[0].status = accelerator_.ResetGpus(pending);
        return out;
      },
      reset));
  if (const absl::Status refused = reset.status(); !refused.ok()) {
    if (options_.with_reboot && refused.code() != absl::StatusCode::kCancelled &&
        refused.code() != absl::StatusCode::kDeadlineExceeded) {
      change.reboot = true;
      return absl::FailedPreconditionError(
          absl::StrCat("the GPU reset that activates the MIG mode was refused (", refused.message(),
                       "); rebooting the node to apply it"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "the GPU reset that activates the MIG mode was refused (GPU ", gpus, ": ",
        refused.message(),
        "); stop what still uses the GPU, or reboot the node (with the MIG manager's withReboot "
        "it reboots the node itself), and the layout is applied again"));
  }
  change.step = "re-discovering the GPUs after the reset";
  GPUOP_RETURN_IF_ERROR(Proceed(change, change.step));
  absl::StatusOr<hw::Inventory> inventory = accelerator_.Discover();
  if (!inventory.ok()) return inventory.status();
  absl::StatusOr<LayoutPlan> plan = PlanLayout(*inventory, change.desired);
  if (!plan.ok()) return plan.status();
  change.step = "applying the MIG layout after the reset";
  ApplyResult again;
  GPUOP_RETURN_IF_ERROR(ApplyOnHelper(change, *plan, again));
  // The GPUs changed before the reset stay changed; the second apply decides the outcome.
  for (GpuOutcome& g : again.gpus) {
    for (const GpuOutcome& before : result.gpus) {
      if (before.gpu_index == g.gpu_index) g.changed = g.changed || before.changed;
    }
  }
  for (const GpuOutcome& before : result.gpus) {
    const bool replanned =
        std::any_of(again.gpus.begin(), again.gpus.end(),
                    [&](const GpuOutcome& g) { return g.gpu_index == before.gpu_index; });
    if (!replanned) again.gpus.push_back(before);
  }
  result = std::move(again);
  return absl::OkStatus();
}

absl::Status MigManager::RunOnHelper(Change& change,
                                     std::function<ApplyResult(const ApplyCheck&)> job,
                                     ApplyResult& result) {
  GPUOP_RETURN_IF_ERROR(HardwareIdle());
  auto run = std::make_shared<HardwareRun>();
  {
    absl::MutexLock lock(&mu_);
    run->started = clock_.Now();
    hardware_ = run;
  }
  // Earlier runs have all returned: their threads end at once.
  for (std::jthread& thread : hardware_threads_) thread.join();
  hardware_threads_.clear();

  const absl::Time deadline = change.deadline;
  ApplyCheck check = [this, run, deadline](const std::string& step) -> absl::Status {
    absl::MutexLock lock(&mu_);
    run->step = step;
    if (stopping_) {
      return absl::CancelledError(absl::StrCat(
          "interrupted by agent shutdown while applying the MIG layout, before ", step));
    }
    if (clock_.Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("timed out while applying the MIG layout, before ", step));
    }
    return absl::OkStatus();
  };
  hardware_threads_.emplace_back([this, run, job = std::move(job), check = std::move(check)] {
    ApplyResult applied = job(check);
    absl::MutexLock lock(&mu_);
    run->result = std::move(applied);
    run->done = true;
  });

  absl::MutexLock lock(&mu_);
  auto done_or_stopping = [this, &run]()
                              ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return run->done || stopping_; };
  clock_.AwaitWithDeadline(mu_, absl::Condition(&done_or_stopping), deadline);
  if (!run->done && stopping_) {
    auto done = [&run]() { return run->done; };
    clock_.AwaitWithDeadline(mu_, absl::Condition(&done),
                             std::min(deadline, clock_.Now() + options_.stop_grace));
  }
  if (!run->done) {
    return absl::DeadlineExceededError(
        absl::StrCat(stopping_ ? "interrupted by agent shutdown" : "timed out",
                     " while applying the MIG layout: ", run->step, " has not returned"));
  }
  result = run->result;
  return absl::OkStatus();
}

absl::Status MigManager::RunChange(Change& change, const LayoutPlan& initial_plan) {
  change.step = "marking the change pending";
  GPUOP_RETURN_IF_ERROR(Proceed(change, change.step));
  // A driver call of an earlier change that never returned: touching the GPUs again (or even
  // pausing the clients for it) would only make things worse.
  GPUOP_RETURN_IF_ERROR(HardwareIdle());
  const std::string changes = ChangingGpus(initial_plan);
  GPUOP_RETURN_IF_ERROR(WriteState(
      kStatePending, absl::StrCat("applying MIG layout ", change.layout, ": ", changes)));
  if (change.initial_state != kStatePending) {
    node_.RecordEvent(kube::EventType::kNormal, "MigConfigPending",
                      absl::StrCat("Applying MIG layout ", change.layout, ": ", changes));
  }

  change.step = "checking the GPUs for processes";
  GPUOP_RETURN_IF_ERROR(Proceed(change, change.step));
  GPUOP_RETURN_IF_ERROR(CheckProcesses(initial_plan));

  change.step = "pausing GPU clients";
  GPUOP_RETURN_IF_ERROR(Proceed(change, change.step));
  GPUOP_RETURN_IF_ERROR(Write(PauseWrite(meta_, options_.components, options_.restore_fallback)));

  change.step = "waiting for GPU clients to stop";
  GPUOP_RETURN_IF_ERROR(WaitForClients(change));

  // The GPUs may have changed while the clients stopped: plan again from what is there now.
  change.step = "re-discovering the GPUs";
  GPUOP_RETURN_IF_ERROR(Proceed(change, change.step));
  absl::StatusOr<hw::Inventory> inventory = accelerator_.Discover();
  if (!inventory.ok()) return inventory.status();
  absl::StatusOr<LayoutPlan> plan = PlanLayout(*inventory, change.desired);
  if (!plan.ok()) return plan.status();
  change.step = "checking the GPUs for processes";
  GPUOP_RETURN_IF_ERROR(CheckProcesses(*plan));

  change.step = "applying the MIG layout";
  GPUOP_RETURN_IF_ERROR(Proceed(change, change.step));
  ApplyResult result;
  GPUOP_RETURN_IF_ERROR(ApplyOnHelper(change, *plan, result));
  std::vector<int> pending;
  for (const GpuOutcome& g : result.gpus) {
    if (g.mode_pending) pending.push_back(g.gpu_index);
  }
  absl::Status status = pending.empty() ? absl::OkStatus() : ResetAndApply(change, pending, result);
  status.Update(result.status());
  if (status.ok()) change.summary = result.Summary();

  // Whatever changed, even in a failed apply, must reach the device plugin and CDI: first the
  // new instances' device nodes (without them a container runtime cannot give the MIG devices
  // to containers, and CDI leaves them out), then the layout file their consumers follow.
  const bool changed = std::any_of(result.gpus.begin(), result.gpus.end(),
                                   [](const GpuOutcome& g) { return g.changed; });
  if (changed) {
    change.step = "creating the MIG devices' nodes (nvidia-smi in the driver's root)";
    const absl::Status nodes = accelerator_.CreateMigDeviceNodes();
    if (!absl::IsUnimplemented(nodes)) status.Update(nodes);
  }
  if (changed && !options_.layout_file.empty()) {
    change.step = "writing the layout file";
    absl::StatusOr<LayoutNotice> notice = WriteLayoutFile(options_.layout_file, change.layout);
    if (!notice.ok()) status.Update(notice.status());
  }
  return status;
}

void MigManager::Finish(Change& change, const absl::Status& outcome) {
  if (change.reboot) {
    // The clients stay paused through the reboot; the sync after it completes the change.
    const std::string reason = absl::StrCat("MIG layout ", change.layout, ": ", outcome.message());
    absl::Status written = WriteState(kStateRebooting, reason);
    NodeWrite request;
    if (!meta_.annotations.contains(options_.reboot_annotation)) {
      request.annotations[options_.reboot_annotation] = kube::FormatTimestamp(clock_.Now());
    }
    written.Update(Write(request));
    node_.RecordEvent(kube::EventType::kWarning, "MigConfigRebooting", reason);
    unfinished_ = !written.ok();
    return;
  }
  absl::Status written = Restore();
  const bool was_success = change.initial_state == kStateSuccess;
  if (outcome.ok()) {
    retry_ = Retry{};
    if (!change.in_place || !was_success) {
      const std::string reason =
          absl::StrCat("MIG layout ", change.layout,
                       change.in_place ? " is in place: " : " applied: ", change.summary);
      written.Update(WriteState(kStateSuccess, reason));
      if (!was_success) {
        node_.RecordEvent(kube::EventType::kNormal, "MigConfigApplied", reason);
      }
    }
  } else {
    RecordFailure(change.key, outcome);
    const std::string reason =
        absl::StrCat("MIG layout ", change.layout, " failed: ", outcome.message());
    const bool news =
        Lookup(meta_.annotations, kReasonAnnotation) != kube::Truncate(reason, kMaxReasonBytes) ||
        Lookup(meta_.labels, kStateLabel) != kStateFailed;
    written.Update(WriteState(kStateFailed, reason));
    if (news) node_.RecordEvent(kube::EventType::kWarning, "MigConfigFailed", reason);
  }
  unfinished_ = !written.ok();
}

}  // namespace gpuop::agent::mig
