#include "operator/remediation/remediation_controller.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "kube/client/resource.h"
#include "operator/api/node_state.h"
#include "operator/nodes/pod_actions.h"
#include "operator/nodes/taints.h"
#include "operator/render/render.h"

namespace gpuop::op::remediation {
namespace {

constexpr char kLogger[] = "remediation";

std::optional<absl::Time> ParseTime(absl::string_view text) {
  absl::Time t;
  std::string error;
  if (text.empty() || !absl::ParseTime(absl::RFC3339_full, text, &t, &error)) return std::nullopt;
  return t;
}

std::string Annotation(const kube::Node& node, absl::string_view key) {
  return std::string(node.metadata.annotations.Get(key).value_or(""));
}

bool HasTaint(const kube::Node& node) {
  return std::any_of(node.taints.begin(), node.taints.end(),
                     [](const kube::Taint& t) { return t.key == kRemediationTaintKey; });
}

// The upgrade state label's value ("" when absent).
std::string UpgradeState(const kube::Node& node) {
  return std::string(node.metadata.labels.Get(kUpgradeStateLabel).value_or(""));
}

// A driver upgrade holds the node: it is between cordon-required and uncordon-required. A node
// that only waits for an upgrade slot (upgrade-required) is remediated meanwhile.
bool Upgrading(const kube::Node& node) {
  const std::string state = UpgradeState(node);
  return !state.empty() && state != "upgrade-done" && state != "upgrade-failed" &&
         state != "upgrade-required";
}

// A Node change that can change a plan.
bool NodeChanged(const kube::Node& a, const kube::Node& b) {
  auto differs = [&](const char* type) {
    const kube::Condition* ca = kube::FindCondition(a.conditions, type);
    const kube::Condition* cb = kube::FindCondition(b.conditions, type);
    return (ca == nullptr) != (cb == nullptr) ||
           (ca != nullptr &&
            (ca->status != cb->status || ca->reason != cb->reason || ca->message != cb->message));
  };
  return !(a.metadata.labels == b.metadata.labels) ||
         !(a.metadata.annotations == b.metadata.annotations) || !(a.taints == b.taints) ||
         a.Ready() != b.Ready() || differs("GPUHealthy") || differs("GPURecoveryAction");
}

}  // namespace

RemediationController::RemediationController(kube::Client& client, OperatorCache& cache,
                                             RemediationControllerOptions options)
    : client_(client),
      cache_(cache),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : common::Clock::Real()) {
  loop_ = std::make_unique<kube::Controller>(
      kube::ControllerOptions{.name = "remediation",
                              .workers = 1,
                              .clock = options_.clock,
                              .metrics = options_.metrics,
                              .on_error =
                                  [](const std::string&, const absl::Status& e) {
                                    common::Log(common::LogLevel::kWarning, kLogger, "pass failed",
                                                {{"error", std::string(e.message())}});
                                  }},
      [this](const std::string&) { return Reconcile(); });
}

RemediationController::~RemediationController() { Stop(); }

void RemediationController::WatchCache(OperatorCache& cache, std::function<void()> trigger) {
  cache.nodes().AddHandlers({.on_add = [trigger](const NodeEntry&) { trigger(); },
                             .on_update =
                                 [trigger](const NodeEntry& a, const NodeEntry& b) {
                                   if (NodeChanged(a.node, b.node)) trigger();
                                 },
                             .on_delete = [trigger](const NodeEntry&) { trigger(); }});
  auto pod = [trigger](const OperandPod& p) {
    if (p.component == "driver" || p.component == "validator" || IsDriverClient(p.component)) {
      trigger();
    }
  };
  cache.pods().AddHandlers({.on_add = pod,
                            .on_update = [pod](const OperandPod&, const OperandPod& p) { pod(p); },
                            .on_delete = pod});
  cache.policies().AddHandlers(
      {.on_add = [trigger](const PolicyEntry&) { trigger(); },
       .on_update = [trigger](const PolicyEntry&, const PolicyEntry&) { trigger(); }});
}

absl::Status RemediationController::Start() {
  GPUOP_RETURN_IF_ERROR(loop_->Start());
  loop_->Enqueue(kKey);
  return absl::OkStatus();
}

void RemediationController::Stop() { loop_->Stop(); }

std::vector<NodeState> RemediationController::BuildSnapshot(const PolicySpec& policy,
                                                            std::vector<std::string>& errors) {
  const std::string& reboot_key = policy.remediation.reboot_annotation;
  std::vector<NodeState> out;
  for (const auto& entry : cache_.nodes().store().List()) {
    const kube::Node& node = entry->node;
    if (node.metadata.labels.Get(kManagedLabel) != std::optional<absl::string_view>("true")) {
      continue;
    }
    NodeState n{.name = node.metadata.name,
                .state = std::string(node.metadata.labels.Get(kRemediationStateLabel).value_or("")),
                .step = Annotation(node, kRemediationStepAnnotation),
                .since = ParseTime(Annotation(node, kRemediationSinceAnnotation)),
                .message = Annotation(node, kRemediationMessageAnnotation),
                .remediation_action = Annotation(node, kRemediationActionAnnotation),
                .ready = node.Ready(),
                .tainted = HasTaint(node),
                .upgrading = Upgrading(node),
                .upgrade_restarting_driver = UpgradeState(node) == "pod-restart-required"};
    for (absl::string_view t :
         absl::StrSplit(Annotation(node, kRemediationAttemptsAnnotation), ',', absl::SkipEmpty())) {
      if (auto time = ParseTime(t)) n.attempts.push_back(*time);
    }
    if (const kube::Condition* h = kube::FindCondition(node.conditions, "GPUHealthy")) {
      if (h->status == "True" || h->status == "False") n.healthy = h->status == "True";
      n.health_message = h->message;
    }
    if (const kube::Condition* a = kube::FindCondition(node.conditions, "GPURecoveryAction");
        a != nullptr && a->status == "True") {
      n.required_action = a->reason;
    }
    if (node.metadata.annotations.Get(reboot_key).has_value()) {
      n.reboot_requested = true;
    } else if (!absl::StartsWith(reboot_key, "gpuop.io/") && n.step == "RequestReboot") {
      // The cache keeps only gpuop.io/ annotations; read the Node for another key.
      absl::StatusOr<kube::Json> live = client_.Get(kube::resources::kNodes, "", n.name);
      if (live.ok()) {
        n.reboot_requested =
            (*live)["metadata"].value("annotations", kube::Json::object()).contains(reboot_key);
      } else {
        errors.push_back(std::string(live.status().message()));
        continue;
      }
    }
    const OperandPods pods_on_node = cache_.PodsOn(n.name);
    for (const auto& pod : pods_on_node) {
      if (pod->component == "driver") {
        n.driver_pod = NodeState::DriverPod{
            .ns = options_.ns,
            .name = pod->name,
            .ready = pod->ready,
            .created = pod->created,
            .waits_for_safe_load = node.metadata.annotations.Get(kDriverSafeLoadAnnotation) ==
                                   std::optional<absl::string_view>(pod->name)};
      }
    }
    n.validator_ready = ValidatorReadySince(
        pods_on_node, n.driver_pod.has_value() ? n.driver_pod->created : absl::InfinitePast());
    n.clients = ClientsOf(node.metadata.labels, policy, pods_on_node);
    if (n.state == kInProgress && n.step == RemediationStepName(RemediationStep::kDrain)) {
      absl::StatusOr<kube::ObjectList> pods = client_.List(
          kube::resources::kPods, "", {.field_selector = absl::StrCat("spec.nodeName=", n.name)});
      if (pods.ok()) {
        n.pods_listed = true;
        for (const kube::Json& object : pods->items) {
          if (auto info = upgrade::PodInfoFromJson(object); info.ok()) n.pods.push_back(*info);
        }
      } else {
        errors.push_back(std::string(pods.status().message()));
      }
    }
    out.push_back(std::move(n));
  }
  return out;
}

absl::Status RemediationController::Execute(const NodePlan& plan, const RemediationSpec& spec,
                                            absl::Time now) {
  std::vector<std::string> problems;
  if (plan.pod_action == PodAction::kEvict) {
    problems = EvictPods(client_, plan.pods);
  } else if (plan.pod_action == PodAction::kDeleteDriverPod) {
    problems = DeletePods(client_, plan.pods, std::nullopt);
  }
  auto entry = cache_.nodes().store().Get(plan.node);
  if (entry == nullptr) return absl::OkStatus();
  const kube::Node& node = entry->node;

  std::string message = plan.message;
  if (!problems.empty()) absl::StrAppend(&message, "; ", absl::StrJoin(problems, "; "));
  kube::Json labels = {
      {kRemediationStateLabel, plan.state.empty() ? kube::Json(nullptr) : kube::Json(plan.state)}};
  for (const auto& [key, value] : plan.set_labels) labels[key] = value;
  kube::Json annotations = {
      {kRemediationStepAnnotation, plan.step.empty() ? kube::Json(nullptr) : kube::Json(plan.step)},
      {kRemediationMessageAnnotation, message.empty() ? kube::Json(nullptr) : kube::Json(message)},
      {kRemediationActionAnnotation,
       plan.action.empty() || plan.state.empty() ? kube::Json(nullptr) : kube::Json(plan.action)}};
  if (plan.state.empty()) annotations[kRemediationSinceAnnotation] = nullptr;
  if (plan.restamp) annotations[kRemediationSinceAnnotation] = kube::FormatTimestamp(now);
  std::vector<std::string> attempts;
  for (absl::Time t : plan.attempts) attempts.push_back(kube::FormatTimestamp(t));
  annotations[kRemediationAttemptsAnnotation] =
      attempts.empty() ? kube::Json(nullptr) : kube::Json(absl::StrJoin(attempts, ","));
  if (plan.request_reboot) annotations[spec.reboot_annotation] = kube::FormatTimestamp(now);
  if (plan.release_safe_load) annotations[kDriverSafeLoadAnnotation] = nullptr;
  kube::Json patch = {{"metadata", {{"labels", labels}, {"annotations", annotations}}}};
  if (plan.taint || plan.untaint) {
    // spec.taints is replaced as a whole: the resourceVersion makes the write fail (409) rather
    // than drop a taint someone added since the cache saw the Node.
    kube::Json taints = kube::Json::array();
    for (const kube::Taint& t : node.taints) {
      if (t.key != kRemediationTaintKey) taints.push_back(TaintToJson(t));
    }
    if (plan.taint) {
      taints.push_back(
          {{"key", kRemediationTaintKey}, {"value", "true"}, {"effect", "NoSchedule"}});
    }
    patch["spec"] = {{"taints", taints}};
    patch["metadata"]["resourceVersion"] = node.metadata.resource_version;
  }
  absl::StatusOr<kube::Json> patched =
      client_.Patch(kube::resources::kNodes, "", plan.node, kube::PatchType::kMergePatch, patch,
                    {.field_manager = OperatorCache::kFieldManager});
  if (!patched.ok()) return patched.status();
  {
    absl::MutexLock lock(&mu_);
    writes_.Record(plan.node, (*patched)["metadata"].value("resourceVersion", std::string()), now);
  }
  const std::string old_state(node.metadata.labels.Get(kRemediationStateLabel).value_or(""));
  const std::string old_step = Annotation(node, kRemediationStepAnnotation);
  if (options_.events != nullptr && (plan.state != old_state || plan.step != old_step)) {
    const bool bad = plan.state == kFailed || plan.state == kExhausted;
    std::string reason = plan.state == kInProgress ? absl::StrCat("Remediation", plan.step)
                         : plan.state.empty()      ? "RemediationCleared"
                         : plan.state == kDone     ? "RemediationDone"
                         : plan.state == kPending  ? "RemediationPending"
                         : plan.state == kFailed   ? "RemediationFailed"
                                                   : "RemediationExhausted";
    options_.events->Record(
        kube::ObjectReference{
            .api_version = "v1", .kind = "Node", .name = plan.node, .uid = node.metadata.uid},
        bad ? kube::EventType::kWarning : kube::EventType::kNormal, reason, "Remediate",
        message.empty() ? reason : message);
  }
  common::Log(
      common::LogLevel::kInfo, kLogger, "node",
      {{"node", plan.node}, {"state", plan.state}, {"step", plan.step}, {"message", message}});
  return absl::OkStatus();
}

absl::StatusOr<kube::Result> RemediationController::Reconcile() {
  const std::optional<ClusterPolicy> policy = cache_.Policy();
  if (!policy.has_value()) return kube::Result{};
  const absl::Time now = clock_.Now();
  {
    absl::MutexLock lock(&mu_);
    if (!writes_.CaughtUp(cache_.nodes().store(), now)) {
      return kube::Result{.requeue_after = absl::Seconds(1)};
    }
  }
  std::vector<std::string> errors;
  const std::vector<NodeState> nodes = BuildSnapshot(policy->spec, errors);
  const Plan plan = PlanRemediation(nodes, policy->spec.remediation,
                                    policy->spec.Enabled(Component::kValidator), now);
  for (const NodePlan& p : plan.nodes) {
    if (absl::Status done = Execute(p, policy->spec.remediation, now); !done.ok()) {
      errors.push_back(absl::StrCat(p.node, ": ", done.message()));
    }
  }
  if (!errors.empty()) {
    return absl::UnavailableError(absl::StrCat("remediation: ", absl::StrJoin(errors, "; ")));
  }
  return kube::Result{.requeue_after = plan.active ? options_.resync : absl::ZeroDuration()};
}

}  // namespace gpuop::op::remediation
