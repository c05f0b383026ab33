#include "operator/nodes/gpu_node_status.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "operator/api/node_state.h"
#include "operator/nodes/inventory.h"
#include "operator/nodes/node_labels.h"

namespace gpuop::op {

namespace {

using Json = nlohmann::json;

std::string Label(const kube::Node& node, absl::string_view key) {
  auto v = node.metadata.labels.Get(key);
  return v.has_value() ? std::string(*v) : "";
}
std::string Annotation(const kube::Node& node, absl::string_view key) {
  auto v = node.metadata.annotations.Get(key);
  return v.has_value() ? std::string(*v) : "";
}

// Upgrade states in which the node is out of service or on its way there.
bool UpgradeInProgress(const std::string& state) {
  return !state.empty() && state != "upgrade-done" && state != "upgrade-required";
}

}  // namespace

Json GpuNodeObject(const kube::Node& node) {
  return {{"apiVersion", kApiVersion},
          {"kind", "GPUNode"},
          {"metadata",
           {{"name", node.metadata.name},
            {"labels", {{"app.kubernetes.io/managed-by", "gpuop-operator"}}},
            {"ownerReferences", Json::array({{{"apiVersion", "v1"},
                                              {"kind", "Node"},
                                              {"name", node.metadata.name},
                                              {"uid", node.metadata.uid},
                                              {"blockOwnerDeletion", false}}})}}}};
}

Json GpuNodeStatus(const kube::Node& node, const PolicySpec* policy, const std::string& pool,
                   const std::vector<ComponentState>& components,
                   const std::string& driver_target) {
  Json status = Json::object();
  const std::string nvidia_count = Label(node, "nvidia.com/gpu.count");
  const std::string amd_count = Label(node, "amd.com/gpu.count");
  const NodeGpus gpus = GpusOf(node);
  status["vendor"] = !nvidia_count.empty() || gpus.nvidia ? "nvidia"
                     : !amd_count.empty() || gpus.amd     ? "amd"
                                                          : "unknown";
  const std::string count = !nvidia_count.empty() ? nvidia_count : amd_count;
  int gpu_count = 0;
  if (!absl::SimpleAtoi(count, &gpu_count) || gpu_count < 0) gpu_count = 0;
  status["gpuCount"] = gpu_count;
  std::string product = Label(node, "nvidia.com/gpu.product");
  if (product.empty()) product = Label(node, "amd.com/gpu.product-name");
  status["product"] = product;
  status["pool"] = pool.empty() ? "default" : pool;

  GpuInventory inventory;
  Json conditions = Json::array();
  if (auto text = node.metadata.annotations.Get(kGpuInventoryAnnotation); text.has_value()) {
    absl::StatusOr<GpuInventory> parsed = ParseGpuInventory(*text);
    if (parsed.ok()) {
      inventory = *std::move(parsed);
    } else {
      conditions.push_back({{"type", "InventoryValid"},
                            {"status", "False"},
                            {"reason", "InvalidAnnotation"},
                            {"message", parsed.status().message()}});
    }
  }
  status["gpus"] = std::move(inventory.gpus);

  Json driver = Json::object();
  std::string version = Label(node, "nvidia.com/cuda.driver-version.full");
  if (version.empty()) version = inventory.driver;
  driver["version"] = version;
  const bool host = Label(node, kDriverPreinstalledLabel) == "true";
  driver["source"] =
      host ? "host" : (policy != nullptr && policy->driver.enabled ? "container" : "none");
  if (!inventory.cuda.empty()) driver["cudaVersion"] = inventory.cuda;
  const std::string upgrade_state = Label(node, kUpgradeStateLabel);
  driver["state"] =
      upgrade_state.empty() ? (version.empty() ? "NotLoaded" : "Loaded") : upgrade_state;
  status["driver"] = std::move(driver);

  Json health = {{"state", "Unknown"},
                 {"reason", "NoReport"},
                 {"message", "the health monitor has not reported yet"}};
  if (const kube::Condition* c = kube::FindCondition(node.conditions, "GPUHealthy")) {
    health = {{"state", c->status == "True"    ? "Healthy"
                        : c->status == "False" ? "Unhealthy"
                                               : "Unknown"},
              {"reason", c->reason},
              {"message", c->message}};
    if (c->last_transition_time != absl::InfinitePast()) {
      health["since"] = kube::FormatTimestamp(c->last_transition_time);
    }
  }
  if (const kube::Condition* a = kube::FindCondition(node.conditions, "GPURecoveryAction");
      a != nullptr && a->status == "True") {
    health["requiredAction"] = a->reason;
  }
  status["health"] = health;

  if (!upgrade_state.empty()) {
    Json upgrade = {{"state", upgrade_state}};
    for (const auto& [key, field] :
         {std::pair{kUpgradeMessageAnnotation, "message"}, {kUpgradeSinceAnnotation, "since"}}) {
      if (std::string v = Annotation(node, key); !v.empty()) upgrade[field] = v;
    }
    if (!driver_target.empty()) upgrade["targetVersion"] = driver_target;
    status["upgrade"] = std::move(upgrade);
  }
  const std::string remediation_state = Label(node, kRemediationStateLabel);
  if (!remediation_state.empty()) {
    Json remediation = {{"state", remediation_state}};
    for (const auto& [key, field] : {std::pair{kRemediationStepAnnotation, "step"},
                                     {kRemediationMessageAnnotation, "message"},
                                     {kRemediationSinceAnnotation, "since"}}) {
      if (std::string v = Annotation(node, key); !v.empty()) remediation[field] = v;
    }
    const std::string attempts = Annotation(node, kRemediationAttemptsAnnotation);
    remediation["attempts"] =
        attempts.empty() ? 0
                         : 1 + static_cast<int>(std::count(attempts.begin(), attempts.end(), ','));
    status["remediation"] = std::move(remediation);
  }

  Json comps = Json::array();
  bool components_ready = true;
  for (const auto& c : components) {
    Json entry = {{"name", c.name}, {"state", c.state}};
    if (!c.message.empty()) entry["message"] = c.message;
    comps.push_back(std::move(entry));
    if (c.state == "NotReady") components_ready = false;
  }
  status["components"] = std::move(comps);

  std::string state = "Ready";
  if (Label(node, kDeployOperandsLabel) == "false") {
    state = "Paused";
  } else if (!remediation_state.empty() && remediation_state != "done") {
    state = "Remediating";
  } else if (upgrade_state == "upgrade-failed") {
    state = "UpgradeFailed";
  } else if (UpgradeInProgress(upgrade_state)) {
    state = "Upgrading";
  } else if (!node.Ready()) {
    state = "NodeNotReady";
  } else if (!components_ready) {
    state = "Installing";
  }
  status["state"] = state;
  // Discovery saw nouveau holding the GPUs: while the driver container is not Ready that is the
  // likely reason, and the fix is on the host.
  const bool driver_ready =
      std::any_of(components.begin(), components.end(),
                  [](const ComponentState& c) { return c.name == "driver" && c.state == "Ready"; });
  if (Label(node, kNouveauLoadedLabel) == "true" && !driver_ready) {
    conditions.push_back(
        {{"type", "NouveauLoaded"},
         {"status", "True"},
         {"reason", "NouveauHeldTheGpus"},
         {"message",
          "the nouveau kernel module held the GPUs when the node was discovered; the NVIDIA "
          "driver cannot load while it does: blacklist nouveau (modprobe.d) and reboot the "
          "node"}});
  }
  if (!conditions.empty()) status["conditions"] = std::move(conditions);
  return status;
}

}  // namespace gpuop::op
