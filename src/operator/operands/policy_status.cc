#include "operator/operands/policy_status.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kube/types/object_meta.h"
#include "operator/api/node_state.h"
#include "operator/render/render.h"

namespace gpuop::op {
namespace {

constexpr int kFailingRestarts = 3;
constexpr size_t kNodesNamed = 3;  // nodes a message names before "and N more"

std::string NodeList(std::vector<std::string> nodes) {
  std::sort(nodes.begin(), nodes.end());
  if (nodes.size() <= kNodesNamed) return absl::StrJoin(nodes, ", ");
  return absl::StrCat(absl::StrJoin(nodes.begin(), nodes.begin() + kNodesNamed, ", "), " and ",
                      nodes.size() - kNodesNamed, " more");
}

bool Managed(const kube::Node& node) {
  return node.metadata.labels.Get(kManagedLabel) == std::optional<absl::string_view>("true");
}

struct ComponentRollout {
  std::string name;
  int64_t desired = 0, ready = 0, updated = 0, unavailable = 0;
  bool found = true;     // every DaemonSet exists
  bool observed = true;  // every DaemonSet's controller has seen its latest spec
  std::vector<std::string> not_ready_nodes;
  std::string failing;  // "pod gpuop-exporter-x on node-a: not ready, 5 restarts"
};

ComponentRollout Rollout(Component component, const PolicyStatusInput& in) {
  ComponentRollout r{.name = ComponentName(component)};
  const PolicySpec spec = in.spec.ok() ? *in.spec : PolicySpec{};
  for (const std::string& ds_name : ComponentDaemonSets(component, spec, in.pools, in.driver_os)) {
    const auto ds = std::find_if(in.daemon_sets.begin(), in.daemon_sets.end(),
                                 [&](const auto& d) { return d->metadata.name == ds_name; });
    if (ds == in.daemon_sets.end()) {
      r.found = false;
      continue;
    }
    const kube::DaemonSet& d = **ds;
    r.desired += d.desired_number_scheduled;
    r.ready += d.number_ready;
    r.updated += d.updated_number_scheduled;
    r.unavailable += d.number_unavailable;
    if (d.observed_generation < d.metadata.generation) r.observed = false;
  }
  for (const auto& pod : in.pods) {
    if (pod->component != r.name || pod->ready) continue;
    r.not_ready_nodes.push_back(pod->node);
    if (pod->restarts >= kFailingRestarts && r.failing.empty()) {
      r.failing = absl::StrCat("pod ", pod->name, " on ", pod->node, ": not ready, ", pod->restarts,
                               " restarts");
    }
  }
  return r;
}

}  // namespace

std::vector<std::string> ComponentDaemonSets(
    Component component, const PolicySpec& spec, const std::vector<NodePool>& pools,
    const std::map<std::string, std::set<std::string>>& driver_os) {
  if (component != Component::kDriver) return {absl::StrCat("gpuop-", ComponentName(component))};
  std::vector<std::string> names;
  for (const DriverSet& set : DriverSets(spec, pools, driver_os)) names.push_back(set.name);
  return names;
}

void SetCondition(nlohmann::json& conditions, const nlohmann::json& previous,
                  const std::string& type, bool status, const std::string& reason,
                  const std::string& message, int64_t generation, absl::Time now) {
  const std::string value = status ? "True" : "False";
  std::string since = kube::FormatTimestamp(now);
  for (const nlohmann::json& c : previous) {
    if (c.value("type", "") == type && c.value("status", "") == value &&
        c.contains("lastTransitionTime")) {
      since = c["lastTransitionTime"].get<std::string>();
    }
  }
  conditions.push_back({{"type", type},
                        {"status", value},
                        {"reason", reason},
                        {"message", message},
                        {"observedGeneration", generation},
                        {"lastTransitionTime", since}});
}

nlohmann::json ComputePolicyStatus(const PolicyStatusInput& in) {
  nlohmann::json status = {{"observedGeneration", in.generation}};
  int64_t total = 0, ready = 0, upgrading = 0, remediating = 0, unhealthy = 0;
  // Nodes that need a person: a failed driver upgrade, a remediation that failed or ran out of
  // attempts.
  std::vector<std::string> upgrade_failed, remediation_stuck;
  for (const auto& entry : in.nodes) {
    const kube::Node& node = entry->node;
    if (!Managed(node)) continue;
    ++total;
    if (node.Ready()) ++ready;
    const std::string upgrade(node.metadata.labels.Get(kUpgradeStateLabel).value_or(""));
    if (!upgrade.empty() && upgrade != "upgrade-done" && upgrade != "upgrade-failed") ++upgrading;
    const std::string remediation(node.metadata.labels.Get(kRemediationStateLabel).value_or(""));
    if (!remediation.empty() && remediation != "done") ++remediating;
    if (upgrade == "upgrade-failed") upgrade_failed.push_back(node.metadata.name);
    if (remediation == "failed" || remediation == "exhausted") {
      remediation_stuck.push_back(node.metadata.name);
    }
    const kube::Condition* health = kube::FindCondition(node.conditions, "GPUHealthy");
    if (health != nullptr && health->status == "False") ++unhealthy;
  }
  status["nodes"] = {{"total", total},
                     {"ready", ready},
                     {"upgrading", upgrading},
                     {"remediating", remediating},
                     {"unhealthy", unhealthy}};

  nlohmann::json conditions = nlohmann::json::array();
  auto set = [&](const std::string& type, bool value, const std::string& reason,
                 const std::string& message) {
    SetCondition(conditions, in.previous_conditions, type, value, reason, message, in.generation,
                 in.now);
  };
  if (!in.spec.ok()) {
    const std::string message = absl::StrCat(
        "the spec cannot be used, so the components keep their last good configuration: ",
        in.spec.status().message());
    set("Ready", false, "InvalidSpec", message);
    set("Progressing", false, "InvalidSpec", "nothing is applied until the spec is fixed");
    set("Degraded", true, "InvalidSpec", message);
    status["conditions"] = std::move(conditions);
    return status;
  }
  const PolicySpec& spec = *in.spec;

  nlohmann::json components = nlohmann::json::array();
  std::optional<ComponentRollout> not_ready, rolling, failing;
  for (Component c : kAllComponents) {
    if (!spec.Enabled(c)) continue;
    ComponentRollout r = Rollout(c, in);
    components.push_back({{"name", r.name},
                          {"desired", r.desired},
                          {"ready", r.ready},
                          {"updated", r.updated},
                          {"unavailable", r.unavailable}});
    if (!failing && !r.failing.empty()) failing = r;
    // The driver's DaemonSets are OnDelete: outdated pods are the upgrade controller's to
    // replace, so they are progress, not a fault.
    if (!rolling && (!r.observed || r.updated < r.desired)) rolling = r;
    if (!not_ready && (!r.found || !r.observed || r.ready < r.desired)) not_ready = r;
  }
  status["components"] = std::move(components);

  if (!in.apply_errors.empty()) {
    const std::string message =
        absl::StrCat(in.apply_errors.front(),
                     in.apply_errors.size() > 1
                         ? absl::StrCat(" (and ", in.apply_errors.size() - 1, " more failures)")
                         : "");
    set("Ready", false, "ApplyFailed", message);
    set("Progressing", true, "ApplyFailed", "retrying the failed writes");
    set("Degraded", true, "ApplyFailed", message);
    status["conditions"] = std::move(conditions);
    return status;
  }

  if (total == 0) {
    set("Ready", true, "NoGPUNodes", "no GPU nodes yet: nothing to run");
  } else if (not_ready) {
    const ComponentRollout& r = *not_ready;
    std::string message;
    if (!r.found) {
      message = absl::StrCat(r.name, ": DaemonSet not created yet");
    } else if (!r.observed) {
      message = absl::StrCat(r.name, ": waiting for the DaemonSet controller");
    } else {
      message = absl::StrCat(r.name, ": ", r.ready, "/", r.desired, " pods ready");
    }
    if (!r.not_ready_nodes.empty()) {
      absl::StrAppend(&message, "; not ready on ", NodeList(r.not_ready_nodes));
    }
    set("Ready", false, "ComponentNotReady", message);
  } else {
    set("Ready", true, "AllComponentsReady",
        absl::StrCat(total, " GPU nodes, every component ready"));
  }

  if (rolling) {
    const ComponentRollout& r = *rolling;
    const bool driver = r.name == ComponentName(Component::kDriver) && r.observed;
    set("Progressing", true, driver ? "DriverUpgrade" : "RollingOut",
        !r.observed
            ? absl::StrCat(r.name, ": waiting for the DaemonSet controller")
            : absl::StrCat(r.name, ": ", r.updated, "/", r.desired, " pods updated",
                           upgrading > 0 ? absl::StrCat("; ", upgrading, " nodes upgrading") : ""));
  } else if (not_ready) {
    set("Progressing", true, "ComponentsStarting", absl::StrCat(not_ready->name, " is starting"));
  } else {
    set("Progressing", false, "Stable", "every component is at the policy's configuration");
  }

  if (failing) {
    set("Degraded", true, "ComponentFailing", absl::StrCat(failing->name, ": ", failing->failing));
  } else if (!upgrade_failed.empty()) {
    set("Degraded", true, "UpgradeFailed",
        absl::StrCat("the driver upgrade failed on ", NodeList(upgrade_failed),
                     " (the node's gpuop.io/driver-upgrade-message says why; set its "
                     "gpuop.io/driver-upgrade-state label to upgrade-required to retry)"));
  } else if (!remediation_stuck.empty()) {
    set("Degraded", true, "RemediationFailed",
        absl::StrCat("remediation failed or ran out of attempts on ", NodeList(remediation_stuck),
                     " (the node's gpuop.io/remediation-message says why; it stays tainted)"));
  } else {
    set("Degraded", false, "AsExpected", "");
  }
  status["conditions"] = std::move(conditions);
  return status;
}

}  // namespace gpuop::op
