#include "operator/remediation/planner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kube/types/object_meta.h"

namespace gpuop::op::remediation {
namespace {

bool Holding(const std::string& state) {
  return state == kPending || state == kInProgress || state == kFailed || state == kExhausted;
}

// How much an action takes; 0 for none.
int Rank(const std::string& action) {
  if (action == "ResetGpu") return 1;
  if (action == "RebootNode") return 2;
  if (action == "ContactSupport") return 3;
  return 0;
}

bool Repair(RemediationStep s) {
  return s == RemediationStep::kRestartDriver || s == RemediationStep::kRequestReboot;
}

// The step after `step` in `steps`; nullopt after the last.
std::optional<RemediationStep> Next(const std::vector<RemediationStep>& steps,
                                    std::optional<RemediationStep> step) {
  if (!step.has_value()) {
    if (steps.empty()) return std::nullopt;
    return steps.front();
  }
  auto it = std::find(steps.begin(), steps.end(), *step);
  if (it == steps.end() || ++it == steps.end()) return std::nullopt;
  return *it;
}

std::optional<RemediationStep> ParseStep(const std::string& name) {
  for (RemediationStep s :
       {RemediationStep::kTaint, RemediationStep::kDrain, RemediationStep::kRestartDriver,
        RemediationStep::kRequestReboot, RemediationStep::kValidate, RemediationStep::kUntaint}) {
    if (name == RemediationStepName(s)) return s;
  }
  return std::nullopt;
}

// Pods the Drain step evicts.
std::vector<PodRef> Evictable(const NodeState& node) {
  std::vector<PodRef> out;
  for (const upgrade::PodInfo& p : node.pods) {
    if (p.Finished() || p.terminating || p.mirror || p.daemon_set || p.operand) continue;
    out.push_back({.ns = p.ns, .name = p.name, .uid = p.uid});
  }
  return out;
}

class Planner {
 public:
  Planner(const RemediationSpec& spec, bool validation_enabled, absl::Time now)
      : spec_(spec), validation_(validation_enabled), now_(now) {}

  NodePlan Start(const NodeState& n, NodePlan p) {
    p.state = kInProgress;
    p.record_attempt = now_;
    p.attempts.push_back(now_);
    p.action = n.required_action;
    const std::vector<RemediationStep> steps = StepsFor(spec_, n, p.action);
    return Enter(n, std::move(p), steps, Next(steps, std::nullopt));
  }

  // Begins `step` (or finishes when none is left).
  // `steps` are the node's (StepsFor).
  NodePlan Enter(const NodeState& n, NodePlan p, const std::vector<RemediationStep>& steps,
                 std::optional<RemediationStep> step) {
    p.restamp = true;
    p.changed = true;
    if (!step.has_value()) {
      p.step = "";
      if (p.action == "ContactSupport") {
        p.state = kFailed;
        p.message = absl::StrCat(
            "the GPUs need a person (ContactSupport), no repair is run; the "
            "node stays tainted until they are healthy: ",
            n.health_message);
        return p;
      }
      p.state = kDone;
      p.message = "the node is back in service";
      if (n.tainted && std::find(spec_.steps.begin(), spec_.steps.end(),
                                 RemediationStep::kUntaint) == spec_.steps.end()) {
        p.message = "steps finished; the node stays tainted (the policy has no Untaint step)";
      }
      return p;
    }
    p.step = RemediationStepName(*step);
    return Work(n, std::move(p), steps, *step, now_);
  }

  // Does or waits for the work of `step`, begun at `since`.
  NodePlan Work(const NodeState& n, NodePlan p, const std::vector<RemediationStep>& steps,
                RemediationStep step, absl::Time since) {
    auto advance = [&](NodePlan done) {
      return Enter(n, std::move(done), steps, Next(steps, step));
    };
    const absl::Duration elapsed = now_ - since;
    const bool timed_out =
        spec_.step_timeout > absl::ZeroDuration() && elapsed > spec_.step_timeout;
    auto wait = [&](std::string why) {
      if (timed_out) {
        p.state = kFailed;
        p.message = absl::StrCat(RemediationStepName(step), " did not finish within ",
                                 absl::FormatDuration(spec_.step_timeout), ": ", why,
                                 "; the node stays tainted until a person looks at it");
        p.changed = true;
        return p;
      }
      if (p.message != why) p.changed = true;
      p.message = std::move(why);
      return p;
    };
    switch (step) {
      case RemediationStep::kTaint:
        if (!n.tainted) {
          p.taint = true;
          p.changed = true;
        }
        p.message = "tainted";
        return advance(std::move(p));
      case RemediationStep::kDrain: {
        if (!n.pods_listed) return wait("listing the pods on the node");
        p.pods = Evictable(n);
        if (p.pods.empty()) return advance(std::move(p));
        p.pod_action = PodAction::kEvict;
        p.changed = true;
        return wait(absl::StrCat("evicting ", p.pods.size(), " pods (first ", p.pods[0].ns, "/",
                                 p.pods[0].name, ")"));
      }
      case RemediationStep::kRestartDriver:
        if (!n.driver_pod.has_value()) {
          if (since == now_) {
            p.message = "no driver pod (the host's driver is not restarted)";
            return advance(std::move(p));
          }
          return wait("waiting for the driver pod to be recreated");
        }
        if (n.driver_pod->created < since) {
          if (!n.clients.to_pause.empty()) {
            p.set_labels = n.clients.PauseLabels();
            p.changed = true;
            return wait(absl::StrCat("pausing the GPU clients before restarting the driver: ",
                                     DriverClients::ComponentsOf(n.clients.to_pause)));
          }
          if (!n.clients.running.empty()) {
            return wait(
                absl::StrCat("waiting for ", n.clients.running.size(),
                             " GPU client pods to stop before restarting the driver (first ",
                             n.clients.running.front(), ")"));
          }
          p.pod_action = PodAction::kDeleteDriverPod;
          p.pods = {{.ns = n.driver_pod->ns, .name = n.driver_pod->name}};
          p.changed = true;
          return wait(absl::StrCat("restarting the driver: deleting pod ", n.driver_pod->name));
        }
        if (n.driver_pod->waits_for_safe_load) {
          p.release_safe_load = true;
          p.changed = true;
          return wait(absl::StrCat("letting driver pod ", n.driver_pod->name,
                                   " load: it waited for the node to be safe"));
        }
        if (!n.driver_pod->ready) return wait("waiting for the new driver pod to be Ready");
        p.set_labels = n.clients.ResumeLabels();
        return advance(std::move(p));
      case RemediationStep::kRequestReboot:
        if (since == now_ && !n.reboot_requested) {
          p.request_reboot = true;
          p.changed = true;
          return wait(absl::StrCat("reboot requested (", spec_.reboot_annotation, ")"));
        }
        if (n.reboot_requested || !n.ready) {
          return wait(absl::StrCat("waiting for the reboot (", spec_.reboot_annotation,
                                   " removed and the node Ready)"));
        }
        return advance(std::move(p));
      case RemediationStep::kValidate:
        if (n.healthy != std::optional<bool>(true)) {
          return wait(absl::StrCat(
              "waiting for the GPUs to be healthy",
              n.health_message.empty() ? "" : absl::StrCat(" (", n.health_message, ")")));
        }
        if (validation_ && n.validator_ready != std::optional<bool>(true)) {
          return wait("waiting for the validator");
        }
        return advance(std::move(p));
      case RemediationStep::kUntaint:
        if (n.tainted) {
          p.untaint = true;
          p.changed = true;
        }
        return advance(std::move(p));
    }
    return p;
  }

 private:
  const RemediationSpec& spec_;
  const bool validation_;
  const absl::Time now_;
};

}  // namespace

std::vector<RemediationStep> StepsFor(const RemediationSpec& spec, const NodeState& node,
                                      const std::string& action) {
  auto slot = std::find_if(spec.steps.begin(), spec.steps.end(), Repair);
  if (action.empty() || slot == spec.steps.end()) return spec.steps;
  std::vector<RemediationStep> out(spec.steps.begin(), slot);
  if (action == "ContactSupport") return out;
  if (action == "RebootNode" || !node.driver_pod.has_value()) {
    out.push_back(RemediationStep::kRequestReboot);
  } else {
    out.push_back(RemediationStep::kRestartDriver);
  }
  for (auto it = slot; it != spec.steps.end(); ++it) {
    if (!Repair(*it)) out.push_back(*it);
  }
  return out;
}

Plan PlanRemediation(const std::vector<NodeState>& input, const RemediationSpec& spec,
                     bool validation_enabled, absl::Time now) {
  std::vector<const NodeState*> nodes;
  for (const NodeState& n : input) nodes.push_back(&n);
  std::sort(nodes.begin(), nodes.end(),
            [](const NodeState* a, const NodeState* b) { return a->name < b->name; });
  Planner planner(spec, validation_enabled, now);
  Plan plan;
  int64_t in_progress = 0;
  for (const NodeState* n : nodes) in_progress += n->state == kInProgress;

  for (const NodeState* n : nodes) {
    NodePlan p{.node = n->name,
               .state = n->state,
               .step = n->step,
               .message = n->message,
               .action = n->remediation_action};
    for (absl::Time t : n->attempts) {
      if (now - t < spec.window) p.attempts.push_back(t);
    }
    const absl::Time since = n->since.value_or(now);
    const bool healthy = n->healthy == std::optional<bool>(true);
    const bool validated = !validation_enabled || n->validator_ready != std::optional<bool>(false);

    if (!spec.enabled) {
      if (Holding(n->state) || n->tainted) {
        p.state = "";
        p.step = "";
        p.message = "";
        p.untaint = n->tainted;
        p.changed = true;
        in_progress -= n->state == kInProgress;
        plan.nodes.push_back(std::move(p));
      }
      continue;
    }

    if (n->state == kInProgress) {
      p.action = n->remediation_action;
      const bool grew = Rank(n->required_action) > Rank(p.action);
      if (grew) p.action = n->required_action;
      const std::vector<RemediationStep> steps = StepsFor(spec, *n, p.action);
      std::optional<RemediationStep> step = ParseStep(n->step);
      // Lost its step, or the action grew (a reset became a reboot): start over (the steps
      // before the repair are idempotent).
      if (grew || !step.has_value() ||
          std::find(steps.begin(), steps.end(), *step) == steps.end()) {
        p = planner.Enter(*n, std::move(p), steps, Next(steps, std::nullopt));
      } else {
        p = planner.Work(*n, std::move(p), steps, *step, since);
      }
      if (p.step != n->step) p.restamp = true;
      if (p.state != kInProgress) --in_progress;
      plan.active = plan.active || p.state == kInProgress;
    } else if ((n->state == kFailed || n->state == kExhausted) && healthy && validated) {
      p.state = kDone;
      p.step = "";
      p.message = "healthy again: back in service";
      p.untaint = n->tainted;
      p.restamp = true;
      p.changed = true;
    } else if (n->state == kExhausted && now - since >= spec.window &&
               static_cast<int64_t>(p.attempts.size()) < spec.max_attempts) {
      p.state = kPending;
      p.message = "attempts are available again";
      p.restamp = true;
      p.changed = true;
      plan.active = true;
    } else if (n->healthy == std::optional<bool>(false) &&
               (n->state.empty() || n->state == kDone || n->state == kPending)) {
      if (n->upgrading) {
        const std::string why = "waiting for the driver upgrade on this node to finish";
        if (n->state != kPending || n->message != why) {
          p.state = kPending;
          p.message = why;
          p.changed = true;
        }
        plan.active = true;
      } else if (static_cast<int64_t>(p.attempts.size()) >= spec.max_attempts) {
        p.state = kExhausted;
        p.message = absl::StrCat(p.attempts.size(), " remediations within ",
                                 absl::FormatDuration(spec.window),
                                 " (maxAttempts): the node stays tainted; ", n->health_message);
        p.taint = !n->tainted;
        p.restamp = true;
        p.changed = true;
      } else if (in_progress < spec.max_parallel) {
        ++in_progress;
        p = planner.Start(*n, std::move(p));
        plan.active = true;
      } else {
        const std::string why =
            absl::StrCat("waiting for a slot: ", in_progress, " nodes in remediation (maxParallel ",
                         spec.max_parallel, ")");
        if (n->state != kPending || n->message != why) {
          p.state = kPending;
          p.message = why;
          p.restamp = n->state != kPending;
          p.changed = true;
        }
        plan.active = true;
      }
    } else if (n->state == kPending && healthy) {
      p.state = "";
      p.message = "";
      p.changed = true;
    } else if (n->state == kDone && healthy && n->since.has_value() &&
               now - *n->since > absl::Minutes(10)) {
      // Clean up a finished remediation's label after a while (the attempts stay).
      p.state = "";
      p.step = "";
      p.message = "";
      p.changed = true;
    }
    const bool restarting =
        p.state == kInProgress && p.step == RemediationStepName(RemediationStep::kRestartDriver);
    if (!restarting && !n->upgrade_restarting_driver && !n->clients.paused.empty()) {
      for (const auto& [label, value] : n->clients.ResumeLabels()) p.set_labels[label] = value;
      p.changed = true;
    }
    if (p.changed) plan.nodes.push_back(std::move(p));
  }
  plan.in_progress = in_progress;
  return plan;
}

}  // namespace gpuop::op::remediation
