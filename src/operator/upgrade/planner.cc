#include "operator/upgrade/planner.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "operator/api/node_state.h"
#include "operator/render/render.h"
#include "operator/upgrade/driver_state.h"
#include "operator/upgrade/pod_selector.h"

namespace gpuop::op::upgrade {
namespace {

// "1h30m", "3m", "45s", "0s".
std::string Short(absl::Duration d) {
  int64_t s = absl::ToInt64Seconds(d);
  if (s <= 0) return "0s";
  std::string out;
  if (s >= 3600) absl::StrAppend(&out, s / 3600, "h");
  if (s % 3600 >= 60) absl::StrAppend(&out, s % 3600 / 60, "m");
  if (s % 60 != 0) absl::StrAppend(&out, s % 60, "s");
  return out;
}

std::string Count(size_t n, const char* one, const char* many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

// "ns/a, ns/b, ns/c and 2 more".

std::string Names(const std::vector<std::string>& names) {
  constexpr size_t kShown = 3;
  std::vector<std::string> shown(
      names.begin(), names.begin() + static_cast<std::ptrdiff_t>(std::min(kShown, names.size())));
  std::string out = absl::StrJoin(shown, ", ");
  if (names.size() > kShown) absl::StrAppend(&out, " and ", names.size() - kShown, " more");
  return out;
}

std::string Names(const std::vector<const PodInfo*>& pods) {
  std::vector<std::string> keys;
  for (const PodInfo* p : pods) keys.push_back(p->Key());
  return Names(keys);
}

std::vector<PodRef> Refs(const std::vector<const PodInfo*>& pods) {
  std::vector<PodRef> out;
  for (const PodInfo* p : pods) out.push_back({p->ns, p->name, p->uid});
  return out;
}

// Plans one node. Holds what every state's rule needs.
class NodePlanner : public DriverState {
 public:
  NodePlanner(const NodeSnapshot& node, const UpgradeSnapshot& snapshot, const UpgradeSpec& spec,
              absl::Time now, NodePlan& out)
      : DriverState(node), n_(node), snapshot_(snapshot), spec_(spec), out_(out) {
    elapsed_ = node.since.has_value() ? std::max(absl::ZeroDuration(), now - *node.since)
                                      : absl::ZeroDuration();
  }

  // Every state but upgrade-required, which the caller plans with the slots.
  void Run() {
    switch (out_.from) {
      case UpgradeState::kUnknown:
      case UpgradeState::kUpgradeDone:
        return UnknownOrDone();
      case UpgradeState::kUpgradeRequired:
        return;  // planned with the slots
      case UpgradeState::kCordonRequired:
        out_.action = n_.unschedulable ? Action::kNone : Action::kCordon;
        return Go(UpgradeState::kWaitForJobsRequired, "");
      case UpgradeState::kWaitForJobsRequired:
        return WaitForJobs();
      case UpgradeState::kPodDeletionRequired:
        return PodDeletion();
      case UpgradeState::kDrainRequired:
        return Drain();
      case UpgradeState::kPodRestartRequired:
        return PodRestart();
      case UpgradeState::kValidationRequired:
        return Validation();
      case UpgradeState::kUncordonRequired:
        return Uncordon();
      case UpgradeState::kUpgradeFailed:
        return Failed();
    }
  }

  void Go(UpgradeState to, std::string message) {
    out_.to = to;
    out_.message = std::move(message);
    out_.wait.reset();
  }
  void Stay(std::string message, absl::Duration timeout) {
    out_.to = out_.from;
    out_.message = std::move(message);
    out_.wait = WaitProgress{.elapsed = elapsed_, .timeout = timeout};
  }
  bool TimedOut(absl::Duration timeout) const {
    return timeout > absl::ZeroDuration() && elapsed_ >= timeout;
  }
  // upgrade-failed. Before the driver pod is touched the node still runs a working driver, so
  // it goes back into service rather than staying cordoned until someone notices.
  void Fail(std::string reason) {
    Go(UpgradeState::kUpgradeFailed, std::move(reason));
    out_.action = Action::kNone;
    out_.pods.clear();
    const bool driver_untouched = out_.from == UpgradeState::kCordonRequired ||
                                  out_.from == UpgradeState::kWaitForJobsRequired ||
                                  out_.from == UpgradeState::kPodDeletionRequired ||
                                  out_.from == UpgradeState::kDrainRequired;
    if (driver_untouched && n_.unschedulable && !n_.cordoned_before) {
      out_.action = Action::kUncordon;
    }
  }
  // The node's pods are needed but could not be listed: wait (the timeout still runs).
  bool NoPods(absl::Duration timeout) {
    if (n_.pods_listed) return false;
    Stay(absl::StrCat("listing the pods on the node: ",
                      n_.pods_error.empty() ? "not listed yet" : n_.pods_error),
         timeout);
    return true;
  }

  void UnknownOrDone() {
    if (Outdated()) return Go(UpgradeState::kUpgradeRequired, OutdatedMessage());
    if (Removing() && !n_.driver_deployed) out_.finish_removal = true;  // nothing left to do
    if (out_.from == UpgradeState::kUnknown && UpToDate()) {
      return Go(UpgradeState::kUpgradeDone, "");
    }
    out_.to = out_.from;
    out_.message = n_.message;
  }

  void WaitForJobs() {
    const absl::Duration timeout = spec_.wait_for_jobs_timeout;
    if (spec_.wait_for_jobs_selector.empty()) return Go(UpgradeState::kPodDeletionRequired, "");
    absl::StatusOr<kube::LabelSelector> selector =
        ParsePodSelector(spec_.wait_for_jobs_selector, "spec.upgrade.waitForJobs.podSelector");
    if (!selector.ok()) {
      if (TimedOut(timeout)) return Go(UpgradeState::kPodDeletionRequired, "");
      return Stay(std::string(selector.status().message()), timeout);
    }
    if (NoPods(timeout)) {
      if (TimedOut(timeout)) Go(UpgradeState::kPodDeletionRequired, "");
      return;
    }
    std::vector<const PodInfo*> jobs;
    for (const PodInfo& p : n_.pods) {
      if (!p.Finished() && selector->Matches(p.labels)) jobs.push_back(&p);
    }
    if (jobs.empty()) return Go(UpgradeState::kPodDeletionRequired, "");
    const std::string what = absl::StrCat(Count(jobs.size(), "job", "jobs"), " (selector ",
                                          spec_.wait_for_jobs_selector, ")");
    if (TimedOut(timeout)) {
      return Go(UpgradeState::kPodDeletionRequired,
                absl::StrCat("stopped waiting for ", what, " after ", Short(timeout)));
    }
    Stay(absl::StrCat("waiting for ", what, ": ", Names(jobs)), timeout);
  }

  // After pod deletion: drain when enabled, else restart the driver.
  UpgradeState AfterPodDeletion() const {
    return spec_.drain_enabled ? UpgradeState::kDrainRequired : UpgradeState::kPodRestartRequired;
  }
  // Pod deletion cannot finish: drain instead when enabled, else fail.
  void PodDeletionFailed(const std::string& reason) {
    if (spec_.drain_enabled) return Go(UpgradeState::kDrainRequired, reason + "; draining");
    Fail(reason);
  }

  void PodDeletion() {
    const absl::Duration timeout = spec_.pod_deletion_timeout;
    if (NoPods(timeout)) {
      if (TimedOut(timeout)) {
        PodDeletionFailed(absl::StrCat("could not list the node's pods within ", Short(timeout)));
      }
      return;
    }
    std::vector<const PodInfo*> gpu, refused, uncontrolled, deletable;
    for (const PodInfo& p : n_.pods) {
      // DaemonSet pods are left alone, as NVIDIA's upgrade does: deleting one only brings it
      // back at once, and the DaemonSet's owner decides how it runs through a driver restart.
      if (!p.uses_gpu || p.operand || p.mirror || p.daemon_set || p.Finished()) continue;
      gpu.push_back(&p);
      if (p.terminating) continue;
      if (p.empty_dir && !spec_.pod_deletion_delete_empty_dir) {
        refused.push_back(&p);
      } else if (!p.controlled && !spec_.pod_deletion_force) {
        uncontrolled.push_back(&p);  // nothing would recreate it: kubectl drain's --force rule
      } else {
        deletable.push_back(&p);
      }
    }
    if (gpu.empty()) return Go(AfterPodDeletion(), "");
    if (!refused.empty()) {
      return PodDeletionFailed(
          absl::StrCat("GPU pod ", Names(refused),
                       " uses emptyDir and spec.upgrade.podDeletion.deleteEmptyDir is false"));
    }
    if (!uncontrolled.empty()) {
      return PodDeletionFailed(absl::StrCat("GPU pod ", Names(uncontrolled),
                                            " has no controller and "
                                            "spec.upgrade.podDeletion.force is false"));
    }
    if (TimedOut(timeout)) {
      return PodDeletionFailed(absl::StrCat(Count(gpu.size(), "GPU pod", "GPU pods"),
                                            " still on the node after ", Short(timeout), ": ",
                                            Names(gpu)));
    }
    if (deletable.empty()) {
      return Stay(absl::StrCat("waiting for ", Count(gpu.size(), "GPU pod", "GPU pods"),
                               " to terminate: ", Names(gpu)),
                  timeout);
    }
    Stay(absl::StrCat("deleting ", Count(deletable.size(), "GPU pod", "GPU pods"), ": ",
                      Names(deletable)),
         timeout);
    out_.action = Action::kDeletePods;
    out_.pods = Refs(deletable);
  }

  void Drain() {
    const absl::Duration timeout = spec_.drain_timeout;
    absl::StatusOr<kube::LabelSelector> selector =
        ParsePodSelector(spec_.drain_selector, "spec.upgrade.drain.podSelector");
    if (!selector.ok()) {
      if (TimedOut(timeout)) return Fail(std::string(selector.status().message()));
      return Stay(std::string(selector.status().message()), timeout);
    }
    if (NoPods(timeout)) {
      if (TimedOut(timeout))
        Fail(absl::StrCat("could not list the node's pods within ", Short(timeout), ": ",
                          n_.pods_error));
      return;
    }
    std::vector<const PodInfo*> left, evictable, empty_dir, uncontrolled;
    for (const PodInfo& p : n_.pods) {
      if (p.daemon_set || p.operand || p.mirror || p.Finished() || !selector->Matches(p.labels)) {
        continue;
      }
      auto skip = p.labels.Get(kUpgradeDrainSkipLabel);
      if (skip.has_value() && *skip == "true") continue;
      left.push_back(&p);
      if (p.terminating) continue;
      if (p.empty_dir && !spec_.drain_delete_empty_dir) empty_dir.push_back(&p);
      if (!p.controlled && !spec_.drain_force) uncontrolled.push_back(&p);
      evictable.push_back(&p);
    }
    if (left.empty()) return Go(UpgradeState::kPodRestartRequired, "");
    if (!empty_dir.empty()) {
      return Fail(absl::StrCat("cannot drain: pod ", Names(empty_dir),
                               " uses emptyDir and spec.upgrade.drain.deleteEmptyDir is false"));
    }
    if (!uncontrolled.empty()) {
      return Fail(absl::StrCat("cannot drain: pod ", Names(uncontrolled),
                               " has no controller and spec.upgrade.drain.force is false"));
    }
    if (TimedOut(timeout)) {
      std::string reason =
          absl::StrCat("drain did not finish within ", Short(timeout), ": ",
                       Count(left.size(), "pod", "pods"), " left (", Names(left), ")");
      if (!n_.message.empty()) absl::StrAppend(&reason, "; last: ", n_.message);
      return Fail(std::move(reason));
    }
    if (evictable.empty()) {
      return Stay(absl::StrCat("waiting for ", Count(left.size(), "pod", "pods"),
                               " to terminate: ", Names(left)),
                  timeout);
    }
    Stay(absl::StrCat("evicting ", Count(evictable.size(), "pod", "pods"), ": ", Names(evictable)),
         timeout);
    out_.action = Action::kEvictPods;
    out_.pods = Refs(evictable);
  }

  void PodRestart() {
    const absl::Duration timeout = spec_.pod_restart_timeout;
    const std::string& ds = n_.driver_daemon_set;
    if (Removing() && !n_.driver_deployed) {
      if (Removed()) {
        out_.set_labels = n_.clients.ResumeLabels();
        return Go(UpgradeState::kValidationRequired, "");
      }
      std::string waiting = absl::StrCat("waiting for driver pod ", n_.driver_pod->name,
                                         " to stop (", OutdatedMessage(), ")");
      if (TimedOut(timeout)) {
        return Fail(absl::StrCat("the driver did not stop within ", Short(timeout), ": ", waiting));
      }
      return Stay(std::move(waiting), timeout);
    }
    if (Removing() && !n_.driver_pod.has_value()) {  // its pod went on its own
      out_.set_labels[absl::StrCat(kDeployLabelPrefix, "driver")] = "false";
      return Stay(absl::StrCat("taking the driver off the node (", RemovalReason(), ")"), timeout);
    }
    if (UpToDate() && n_.driver_pod->ready) {
      out_.set_labels = n_.clients.ResumeLabels();
      return Go(UpgradeState::kValidationRequired, "");
    }
    if (Current() && n_.driver_pod->restarts > kMaxDriverRestarts) {
      return Fail(absl::StrCat("driver pod ", n_.driver_pod->name, " restarted ",
                               n_.driver_pod->restarts, " times without becoming Ready"));
    }
    std::string waiting;
    if (!n_.update_revision.has_value()) {
      waiting = absl::StrCat("waiting for the update revision of DaemonSet ", ds);
    } else if (!n_.driver_pod.has_value()) {
      waiting = absl::StrCat("waiting for DaemonSet ", ds, " to create the driver pod");
    } else if (UpToDate()) {
      waiting = absl::StrCat("waiting for driver pod ", n_.driver_pod->name, " to be Ready");
    } else if (!n_.clients.to_pause.empty()) {
      waiting = absl::StrCat("pausing the GPU clients before restarting the driver: ",
                             DriverClients::ComponentsOf(n_.clients.to_pause));
    } else if (!n_.clients.running.empty()) {
      waiting = absl::StrCat("waiting for ",
                             Count(n_.clients.running.size(), "GPU client", "GPU clients"),
                             " to stop before restarting the driver: ", Names(n_.clients.running));
    } else if (RemovalPending()) {
      waiting = absl::StrCat("taking the driver off the node (", RemovalReason(), ")");
    } else if (MovePending()) {
      waiting = absl::StrCat("moving the node to ", MoveTarget());
    } else if (SafeLoadWaiting()) {
      waiting = absl::StrCat("letting driver pod ", n_.driver_pod->name,
                             " load: the node is drained and the GPU clients stopped");
    } else {
      waiting =
          absl::StrCat("deleting driver pod ", n_.driver_pod->name, " (", OutdatedMessage(), ")");
    }
    if (TimedOut(timeout)) {
      return Fail(absl::StrCat("the driver was not Ready within ", Short(timeout), ": ", waiting));
    }
    Stay(std::move(waiting), timeout);
    if (Outdated() && !n_.clients.Stopped()) {
      out_.set_labels = n_.clients.PauseLabels();
    } else if (RemovalPending()) {
      // The DaemonSet lets go of the node; the annotation stays until the node is in service.
      out_.set_labels[absl::StrCat(kDeployLabelPrefix, "driver")] = "false";
    } else if (MovePending()) {
      // The old DaemonSet lets go of the node and the new one starts its driver (the
      // anti-affinity holds it until the old pod is gone).
      if (!n_.target_pool.empty()) out_.set_labels[kDriverPoolLabel] = n_.target_pool;
      if (!n_.target_os.empty()) {
        out_.set_labels[kDriverOsLabel] = n_.target_os == kNoDriverOs ? "" : n_.target_os;
      }
      out_.finish_pool_move = true;
    } else if (SafeLoadWaiting()) {
      out_.release_safe_load = true;
    } else if (Outdated()) {
      out_.action = Action::kDeleteDriverPod;
      out_.pods = {PodRef{.ns = n_.driver_pod->ns, .name = n_.driver_pod->name}};
    }
  }

  void Validation() {
    const absl::Duration timeout = spec_.validation_timeout;
    if (!snapshot_.validation_enabled || !n_.validator_deployed) {
      return Go(UpgradeState::kUncordonRequired, "");
    }
    std::string waiting;
    if (!Removed() && (!Current() || !n_.driver_pod->ready)) {
      waiting = "waiting for the driver pod to be current and Ready";
    } else if (n_.validator_ready == true) {
      return Go(UpgradeState::kUncordonRequired, "");
    } else if (n_.validator_ready == false) {
      waiting = "waiting for the validator pod on the node to be Ready";
    } else {
      waiting = "waiting for a validator pod on the node";
    }
    if (TimedOut(timeout)) {
      return Fail(absl::StrCat("validation did not pass within ", Short(timeout), ": ", waiting));
    }
    Stay(std::move(waiting), timeout);
  }

  void Uncordon() {
    if (Removing()) out_.finish_removal = true;
    if (n_.cordoned_before) {
      Go(UpgradeState::kUpgradeDone, "left cordoned: it was cordoned before the upgrade");
    } else {
      out_.action = n_.unschedulable ? Action::kUncordon : Action::kNone;
      Go(UpgradeState::kUpgradeDone, "");
    }
    out_.set_cordoned_before = false;
  }

  void Failed() {
    const bool validated =
        !snapshot_.validation_enabled || !n_.validator_deployed || n_.validator_ready == true;
    const bool recovered = Removed() || (UpToDate() && n_.driver_pod->ready);
    if (recovered && validated) {
      if (n_.unschedulable && !n_.cordoned_before) out_.action = Action::kUncordon;
      Go(UpgradeState::kUpgradeDone,
         Removed() ? std::string("recovered: the driver is off the node")
                   : absl::StrCat("recovered: driver pod ", n_.driver_pod->name,
                                  " is current and Ready"));
      out_.set_cordoned_before = false;
      out_.finish_removal = Removing();
      return;
    }
    out_.to = out_.from;
    out_.message = n_.message;
  }

 private:
  const NodeSnapshot& n_;
  const UpgradeSnapshot& snapshot_;
  const UpgradeSpec& spec_;
  NodePlan& out_;
  absl::Duration elapsed_;
};

bool Unavailable(const NodeSnapshot& n, UpgradeState state) {
  return n.unschedulable || !n.ready || n.remediation_tainted ||
         state == UpgradeState::kCordonRequired;
}

}  // namespace

const char* ActionName(Action action) {
  switch (action) {
    case Action::kNone:
      return "none";
    case Action::kCordon:
      return "cordon";
    case Action::kUncordon:
      return "uncordon";
    case Action::kDeletePods:
      return "delete-pods";
    case Action::kEvictPods:
      return "evict-pods";
    case Action::kDeleteDriverPod:
      return "delete-driver-pod";
  }
  return "none";
}

bool NodePlan::HasWork() const {
  if (excluded) return false;
  return Transition() || action != Action::kNone || stamp_since || message != current_message ||
         set_cordoned_before.has_value() || !set_labels.empty() || finish_pool_move ||
         finish_removal || release_safe_load;
}

std::string NodePlan::Describe() const {
  std::string out = message;
  if (!detail.empty()) absl::StrAppend(&out, out.empty() ? "" : ": ", detail);
  if (wait.has_value()) {
    absl::StrAppend(&out, " for ", Short(wait->elapsed),
                    wait->timeout > absl::ZeroDuration()
                        ? absl::StrCat(" of ", Short(wait->timeout))
                        : std::string(" (no timeout)"));
  }
  return out;
}

int64_t UpgradeCounts::InProgress() const {
  int64_t n = 0;
  for (const auto& [state, count] : nodes) {
    if (upgrade::InProgress(state)) n += count;
  }
  return n;
}

int64_t UpgradeCounts::Get(UpgradeState state) const {
  auto it = nodes.find(state);
  return it == nodes.end() ? 0 : it->second;
}

UpgradePlan Plan(const UpgradeSnapshot& snapshot, const UpgradeSpec& spec, absl::Time now) {
  std::vector<const NodeSnapshot*> nodes;
  for (const NodeSnapshot& n : snapshot.nodes) nodes.push_back(&n);
  std::sort(nodes.begin(), nodes.end(),
            [](const NodeSnapshot* a, const NodeSnapshot* b) { return a->name < b->name; });

  UpgradePlan plan;
  SlotCounts counts;
  for (const NodeSnapshot* n : nodes) {
    NodePlan& p = plan.nodes.emplace_back();
    p.node = n->name;
    p.node_uid = n->uid;
    p.current_message = n->message;
    p.from = ParseUpgradeState(n->state_label).value_or(UpgradeState::kUnknown);
    p.to = p.from;
    p.message = n->message;
    if (n->Excluded()) {
      p.excluded = true;
      p.detail = n->skip          ? absl::StrCat("skipped: ", kUpgradeSkipLabel, "=true")
                 : n->host_driver ? "the host has its own driver"
                                  : "no driver container on the node";
      continue;
    }
    ++counts.total;
    if (InProgress(p.from)) ++counts.in_progress;
    if (Unavailable(*n, p.from)) ++counts.unavailable;
  }
  plan.slots = ComputeSlots(counts, spec.max_parallel, spec.max_unavailable);

  // A node that is already out of service (cordoned, NotReady) takes nothing more from
  // maxUnavailable when it starts, so it needs only a maxParallel slot: a cordoned node is never
  // stuck behind the budget it uses up itself.
  int64_t parallel_left = std::numeric_limits<int64_t>::max();
  if (spec.max_parallel > 0)
    parallel_left = std::max<int64_t>(0, spec.max_parallel - counts.in_progress);
  int64_t fresh_left = plan.slots.available;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeSnapshot& n = *nodes[i];
    NodePlan& p = plan.nodes[i];
    if (p.excluded) {
      ++plan.counts.excluded;
      continue;
    }
    NodePlanner planner(n, snapshot, spec, now, p);
    if (p.from == UpgradeState::kUpgradeRequired) {
      if (planner.UpToDate() || planner.Removed()) {
        planner.Go(UpgradeState::kUpgradeDone, "");
        p.finish_removal = planner.Removing();
      } else if (!spec.auto_upgrade) {
        p.message = "waiting: automatic upgrades are off (spec.upgrade.autoUpgrade is false)";
        if (planner.SafeLoadWaiting()) {
          absl::StrAppend(&p.message, "; driver pod ", n.driver_pod->name,
                          " loads once someone drains the node and removes ",
                          kDriverSafeLoadAnnotation);
        }
      } else if (n.remediating) {
        p.message = "waiting: remediation is working on the node";
      } else if (parallel_left > 0 && (fresh_left > 0 || Unavailable(n, p.from))) {
        --parallel_left;
        if (!Unavailable(n, p.from)) --fresh_left;
        planner.Go(UpgradeState::kCordonRequired, "");
        p.set_cordoned_before = n.unschedulable;
      } else {
        p.message = "waiting for a free upgrade slot";
        p.detail = plan.slots.limit;
      }
    } else {
      planner.Run();
    }
    if (!InProgress(p.to) && !n.remediation_restarting_driver && !n.clients.paused.empty()) {
      p.set_labels = n.clients.ResumeLabels();
    }
    if (InProgress(p.to) && !n.since.has_value() && !p.Transition()) p.stamp_since = true;
    ++plan.counts.nodes[p.to];
    if (InProgress(p.to) || p.Transition() ||
        (p.to == UpgradeState::kUpgradeRequired && spec.auto_upgrade)) {
      plan.in_progress = true;
    }
  }
  return plan;
}

}  // namespace gpuop::op::upgrade
