#include "operator/controllers/node_reconciler.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kube/client/resource.h"
#include "operator/api/node_state.h"
#include "operator/api/resources.h"
#include "operator/nodes/gpu_node_status.h"
#include "operator/nodes/node_labels.h"
#include "operator/nodes/startup_taint.h"
#include "operator/render/render.h"

namespace gpuop::op {

namespace {

// The component states the GPUNode reports, from the node's deploy labels and operand pods.
std::vector<ComponentState> Components(const kube::Node& node, const PolicySpec& policy,
                                       const std::vector<std::shared_ptr<const OperandPod>>& pods) {
  std::vector<ComponentState> out;
  for (Component c : kAllComponents) {
    if (!policy.Enabled(c)) continue;
    const std::string name = ComponentName(c);
    auto deploy = node.metadata.labels.Get(absl::StrCat(kDeployLabelPrefix, name));
    if (deploy.has_value() && *deploy == kHostDriverValue) {
      out.push_back({name, "Skipped", "the host has its own driver"});
      continue;
    }
    if (deploy.has_value() && *deploy == kNotApplicableValue) {
      out.push_back({name, "Skipped", "NVIDIA only; this node's GPUs are AMD"});
      continue;
    }
    if (deploy.has_value() && *deploy != "true") {
      out.push_back({name, "Paused", absl::StrCat(kDeployLabelPrefix, name, "=", *deploy)});
      continue;
    }
    if (c == Component::kMpsDaemon && node.metadata.labels.Get(kMpsCapableLabel) != "true") {
      out.push_back(
          {name, "Skipped",
           absl::StrCat("no MPS sharing on this node (", kMpsCapableLabel, " is not true)")});
      continue;
    }
    const OperandPod* pod = nullptr;
    for (const auto& p : pods) {
      if (p->component == name) pod = p.get();
    }
    if (pod == nullptr && c == Component::kDriver && DriverPerNode(policy.driver) &&
        !node.metadata.labels.Has(kDriverOsLabel)) {
      out.push_back({name, "NotReady",
                     policy.driver.use_precompiled
                         ? "no driver image for the node yet: its OS or kernel is unknown "
                           "(os-release labels from NFD or gpuop's discovery; the kubelet's "
                           "kernelVersion), or not a label value"
                         : "no driver image for the node yet: its OS is unknown (os-release "
                           "labels from NFD or gpuop's discovery), or set spec.driver.osTag"});
    } else if (pod == nullptr) {
      out.push_back({name, "NotReady", "no pod on the node yet"});
    } else if (!pod->ready) {
      out.push_back(
          {name, "NotReady",
           absl::StrCat("pod ", pod->name, " is ", pod->phase,
                        pod->restarts > 0 ? absl::StrCat(", ", pod->restarts, " restarts") : "")});
    } else {
      out.push_back({name, "Ready", ""});
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<kube::Result> NodeReconciler::Reconcile(const std::string& node_name) {
  auto entry = cache_.nodes().store().Get(node_name);
  if (entry == nullptr) return kube::Result{};  // Gone; its GPUNode goes with it.
  const std::optional<ClusterPolicy> policy = cache_.Policy();
  // A policy whose spec never parsed in this process leaves the node as it is: taking its
  // labels (and so its components) away would strip the fleet over a typo.
  if (!policy.has_value() && cache_.PolicyPresent()) return kube::Result{};
  const std::vector<NodePool> pools = cache_.ValidPools();
  const NodePool* pool = nullptr;
  int matches = 0;
  for (const auto& p : pools) {
    if (p.node_selector.Matches(entry->node.metadata.labels)) {
      pool = &p;
      ++matches;
    }
  }
  const bool conflicted = matches > 1;
  if (conflicted) pool = nullptr;
  const PolicySpec* spec = policy.has_value() ? &policy->spec : nullptr;
  bool driver_pod = false;
  for (const auto& pod : cache_.PodsOn(node_name)) driver_pod |= pod->component == "driver";
  const NodeLabelChange change = DesiredNodeLabels(entry->node, entry->owned_labels, spec, pool,
                                                   conflicted, driver_pod, entry->kernel_version);
  if (change.needed) {
    kube::Json labels = kube::Json::object();
    for (const auto& key : entry->owned_labels) labels[key] = nullptr;  // dropped unless desired
    for (const auto& [key, value] : change.desired) labels[key] = value;
    kube::Json metadata = {{"labels", labels}};
    // Written against the Node as the cache saw it: a label another writer changed meanwhile (a
    // MIG manager's or upgrade's pause) must not be overwritten from a stale view. The server
    // answers 409 to a stale resourceVersion, and the reconcile runs again on the fresh Node.
    if (!entry->node.metadata.resource_version.empty()) {
      metadata["resourceVersion"] = entry->node.metadata.resource_version;
    }
    const auto annotate = [&](const char* key, const std::optional<std::string>& value) {
      if (value.has_value()) {
        metadata["annotations"][key] = value->empty() ? kube::Json(nullptr) : kube::Json(*value);
      }
    };
    annotate(kDriverPoolTargetAnnotation, change.pool_target);
    annotate(kDriverOsTargetAnnotation, change.os_target);
    annotate(kDriverRemovalAnnotation, change.driver_removal);
    GPUOP_RETURN_IF_ERROR(client_
                              .Patch(kube::resources::kNodes, "", node_name,
                                     kube::PatchType::kMergePatch, {{"metadata", metadata}},
                                     {.field_manager = OperatorCache::kFieldManager})
                              .status());
  }
  if (spec != nullptr && change.desired.contains(kManagedLabel)) {
    // The node group's startup taint goes once the GPU stack validated (startup_taint.h).
    if (GpuStackReady(entry->node, *spec)) {
      if (std::optional<kube::Json> patch = StartupTaintRemoval(entry->node)) {
        GPUOP_RETURN_IF_ERROR(client_
                                  .Patch(kube::resources::kNodes, "", node_name,
                                         kube::PatchType::kMergePatch, *patch,
                                         {.field_manager = OperatorCache::kFieldManager})
                                  .status());
      }
    }
    GPUOP_RETURN_IF_ERROR(SyncGpuNode(*entry, spec, pool));
  } else if (cache_.gpu_nodes().store().Get(node_name) != nullptr) {
    absl::Status deleted = client_.Delete(kGpuNodes, "", node_name);
    if (!deleted.ok() && !absl::IsNotFound(deleted)) return deleted;
  }
  return kube::Result{};
}

absl::Status NodeReconciler::SyncGpuNode(const NodeEntry& entry, const PolicySpec* policy,
                                         const NodePool* pool) {
  const kube::Node& node = entry.node;
  const std::string driver_target = pool != nullptr && pool->driver_version.has_value()
                                        ? *pool->driver_version
                                        : policy->driver.version;
  const nlohmann::json status =
      GpuNodeStatus(node, policy, pool != nullptr ? pool->name : "",
                    Components(node, *policy, cache_.PodsOn(node.metadata.name)), driver_target);
  auto existing = cache_.gpu_nodes().store().Get(node.metadata.name);
  if (existing != nullptr && existing->status_hash == JsonHash(status)) return absl::OkStatus();
  if (existing == nullptr) {
    absl::StatusOr<kube::Json> created = client_.Create(kGpuNodes, "", GpuNodeObject(node));
    if (!created.ok() && !absl::IsAlreadyExists(created.status())) return created.status();
  }
  nlohmann::json object = {{"apiVersion", kApiVersion},
                           {"kind", "GPUNode"},
                           {"metadata", {{"name", node.metadata.name}}},
                           {"status", status}};
  return client_.Apply(kGpuNodes, object, OperatorCache::kFieldManager, /*force=*/true, "status")
      .status();
}

}  // namespace gpuop::op
