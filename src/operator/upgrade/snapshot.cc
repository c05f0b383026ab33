#include "operator/upgrade/snapshot.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kube/types/json_fields.h"
#include "kube/types/pod.h"
#include "operator/api/node_state.h"
#include "operator/nodes/node_labels.h"
#include "operator/render/render.h"
#include "operator/upgrade/upgrade_state.h"

namespace gpuop::op::upgrade {
namespace {

constexpr char kMirrorAnnotation[] = "kubernetes.io/config.mirror";

// A GPU resource: anything under nvidia.com/ (gpu, mig-*, shared replicas) or amd.com/gpu.
bool IsGpuResource(absl::string_view name) {
  return absl::StartsWith(name, "nvidia.com/") || name == "amd.com/gpu";
}

bool NonZero(const nlohmann::json& quantity) {
  if (quantity.is_number()) return quantity.get<double>() != 0;
  if (!quantity.is_string()) return false;
  const std::string& q = quantity.get_ref<const std::string&>();
  return !q.empty() && q != "0";
}

bool ContainersUseGpu(const nlohmann::json& containers) {
  if (!containers.is_array()) return false;
  for (const auto& c : containers) {
    const nlohmann::json& resources = kube::Field(c, "resources");
    for (const char* kind : {"limits", "requests"}) {
      const nlohmann::json& list = kube::Field(resources, kind);
      if (!list.is_object()) continue;
      for (const auto& [name, quantity] : list.items()) {
        if (IsGpuResource(name) && NonZero(quantity)) return true;
      }
    }
  }
  return false;
}

bool LabelIs(const kube::Labels& labels, absl::string_view key, absl::string_view value) {
  auto got = labels.Get(key);
  return got.has_value() && *got == value;
}

}  // namespace

absl::StatusOr<PodInfo> PodInfoFromJson(const nlohmann::json& object) {
  GPUOP_ASSIGN_OR_RETURN(
      kube::Pod pod, kube::ParsePod(object, kube::AnnotationFilter::Prefixes({kMirrorAnnotation})));
  PodInfo info{.ns = pod.metadata.namespace_,
               .name = pod.metadata.name,
               .uid = pod.metadata.uid,
               .labels = pod.metadata.labels,
               .phase = pod.phase,
               .terminating = pod.metadata.deletion_timestamp.has_value(),
               .mirror = pod.metadata.annotations.Has(kMirrorAnnotation),
               .operand = LabelIs(pod.metadata.labels, kManagedByLabel, kManagedByValue) ||
                          LabelIs(pod.metadata.labels, kPartOfLabel, kPartOfValue)};
  if (const kube::OwnerReference* owner = pod.metadata.ControllerRef()) {
    info.controlled = true;
    info.daemon_set = owner->kind == "DaemonSet";
  }
  const nlohmann::json& spec = kube::Field(object, "spec");
  info.uses_gpu = ContainersUseGpu(kube::Field(spec, "containers")) ||
                  ContainersUseGpu(kube::Field(spec, "initContainers"));
  const nlohmann::json& volumes = kube::Field(spec, "volumes");
  if (volumes.is_array()) {
    for (const auto& v : volumes) {
      if (v.is_object() && v.contains("emptyDir")) info.empty_dir = true;
    }
  }
  return info;
}

bool NodeSnapshot::Excluded() const {
  return skip || ((host_driver || no_driver) && removal.empty());
}

NodeSnapshot DescribeNode(const kube::Node& node) {
  const kube::Labels& labels = node.metadata.labels;
  const std::string driver_key = absl::StrCat(kDeployLabelPrefix, "driver");
  const kube::Labels& annotations = node.metadata.annotations;
  NodeSnapshot n{.name = node.metadata.name,
                 .uid = node.metadata.uid,
                 .unschedulable = node.unschedulable,
                 .ready = node.Ready(),
                 .cordoned_before = LabelIs(annotations, kWasCordonedAnnotation, "true"),
                 .skip = LabelIs(labels, kUpgradeSkipLabel, "true"),
                 // A host driver found while gpuop's driver runs is gpuop's own (node_labels.h).
                 .host_driver = LabelIs(labels, driver_key, kHostDriverValue) ||
                                (LabelIs(labels, kDriverPreinstalledLabel, "true") &&
                                 !LabelIs(labels, driver_key, "true")),
                 .no_driver = LabelIs(labels, driver_key, kNotApplicableValue),
                 .driver_daemon_set = DriverDaemonSetOf(node),
                 .driver_deployed = LabelIs(labels, driver_key, "true")};
  const std::optional<absl::string_view> validator =
      labels.Get(absl::StrCat(kDeployLabelPrefix, ComponentName(Component::kValidator)));
  n.validator_deployed = validator == std::optional<absl::string_view>("true") ||
                         validator == std::optional<absl::string_view>(kPausedForDriverValue);
  if (auto removal = annotations.Get(kDriverRemovalAnnotation)) n.removal = std::string(*removal);
  if (auto waiting = annotations.Get(kDriverSafeLoadAnnotation)) {
    n.safe_load_pod = std::string(*waiting);
  }
  if (auto state = labels.Get(kUpgradeStateLabel)) n.state_label = std::string(*state);
  if (auto since = annotations.Get(kUpgradeSinceAnnotation)) {
    if (absl::StatusOr<absl::Time> t = kube::ParseTimestamp(*since); t.ok()) n.since = *t;
  }
  if (auto message = annotations.Get(kUpgradeMessageAnnotation)) n.message = std::string(*message);
  const std::optional<absl::string_view> target_pool = annotations.Get(kDriverPoolTargetAnnotation);
  const std::optional<absl::string_view> target_os = annotations.Get(kDriverOsTargetAnnotation);
  if (target_pool.has_value() || target_os.has_value()) {
    n.target_pool = std::string(target_pool.value_or(""));
    n.target_os = std::string(target_os.value_or(""));
    const absl::string_view os = target_os.has_value()
                                     ? (*target_os == kNoDriverOs ? "" : *target_os)
                                     : labels.Get(kDriverOsLabel).value_or("");
    n.target_daemon_set = DriverDaemonSetOfLabels(
        target_pool.has_value() ? *target_pool : labels.Get(kDriverPoolLabel).value_or(""), os);
    if (n.target_daemon_set == n.driver_daemon_set) n.target_daemon_set.clear();
  }
  n.remediating = LabelIs(labels, kRemediationStateLabel, "in-progress");
  n.remediation_restarting_driver =
      n.remediating && LabelIs(annotations, kRemediationStepAnnotation, "RestartDriver");
  n.remediation_tainted =
      std::any_of(node.taints.begin(), node.taints.end(),
                  [](const kube::Taint& t) { return t.key == kRemediationTaintKey; });
  return n;
}

bool IsManagedNode(const kube::Node& node) {
  if (LabelIs(node.metadata.labels, kManagedLabel, "true")) return true;
  if (node.metadata.annotations.Has(kDriverRemovalAnnotation)) return true;
  const std::optional<absl::string_view> state = node.metadata.labels.Get(kUpgradeStateLabel);
  return state.has_value() &&
         InProgress(ParseUpgradeState(*state).value_or(UpgradeState::kUnknown));
}

std::string DriverDaemonSetOf(const kube::Node& node) {
  return DriverDaemonSetOfLabels(node.metadata.labels.Get(kDriverPoolLabel).value_or(""),
                                 node.metadata.labels.Get(kDriverOsLabel).value_or(""));
}

}  // namespace gpuop::op::upgrade
