#include "operator/controllers/policy_reconciler.h"

#include <optional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "operator/api/node_state.h"
#include "operator/api/resources.h"
#include "operator/operands/policy_status.h"
#include "operator/operands/pool_status.h"
#include "operator/render/render.h"

namespace gpuop::op {
namespace {

std::string ReadyOf(const nlohmann::json& status) {
  for (const auto& c : status.value("conditions", nlohmann::json::array())) {
    if (c.value("type", "") == "Ready") return c.value("status", "") + "/" + c.value("reason", "");
  }
  return "";
}

}  // namespace

PolicyReconciler::PolicyReconciler(kube::Client& client, OperatorCache& cache,
                                   PolicyReconcilerOptions options)
    : client_(client), cache_(cache), options_(std::move(options)), applier_(client, options_.ns) {}

ApplyReport PolicyReconciler::last_report() const {
  absl::MutexLock lock(&mu_);
  return last_report_;
}

std::map<std::string, std::set<std::string>> PolicyReconciler::DriverOsInUse() const {
  std::map<std::string, std::set<std::string>> out;
  const auto add = [&](absl::string_view pool, absl::string_view os) {
    if (os.empty() || os == kNoDriverOs) return;
    out[pool.empty() || pool == "default" ? "" : std::string(pool)].insert(std::string(os));
  };
  for (const auto& entry : cache_.nodes().store().List()) {
    const kube::Labels& labels = entry->node.metadata.labels;
    const kube::Labels& annotations = entry->node.metadata.annotations;
    const absl::string_view pool = labels.Get(kDriverPoolLabel).value_or("");
    const absl::string_view os = labels.Get(kDriverOsLabel).value_or("");
    add(pool, os);
    const std::optional<absl::string_view> target_pool =
        annotations.Get(kDriverPoolTargetAnnotation);
    const std::optional<absl::string_view> target_os = annotations.Get(kDriverOsTargetAnnotation);
    if (target_pool.has_value() || target_os.has_value()) {
      add(target_pool.value_or(pool), target_os.value_or(os));
    }
  }
  return out;
}

absl::StatusOr<kube::Result> PolicyReconciler::Reconcile(const std::string& key) {
  if (key != kPolicyName) return kube::Result{};  // the CRD admits only "default"
  const absl::Time now = options_.clock->Now();
  const std::vector<NodePool> pools = cache_.ValidPools();
  std::shared_ptr<const PolicyEntry> entry = cache_.policies().store().Get(kPolicyName);

  std::vector<nlohmann::json> desired;
  bool sync = true;  // false: nothing to run, the operands stay as they are
  // Why the spec cannot be used (then the last good one, if any, keeps running).
  absl::Status invalid = entry != nullptr ? entry->policy.status() : absl::OkStatus();
  const ClusterPolicy* run = nullptr;
  if (entry != nullptr) {
    run = entry->policy.ok() ? &*entry->policy
                             : (entry->last_good.has_value() ? &*entry->last_good : nullptr);
  }
  const std::map<std::string, std::set<std::string>> driver_os = DriverOsInUse();
  if (run != nullptr) {
    absl::StatusOr<std::vector<nlohmann::json>> rendered = RenderOperands({.policy = run->spec,
                                                                           .pools = pools,
                                                                           .ns = options_.ns,
                                                                           .policy_name = run->name,
                                                                           .policy_uid = run->uid,
                                                                           .driver_os = driver_os});
    if (rendered.ok()) {
      desired = *std::move(rendered);
    } else {
      sync = false;
      if (invalid.ok()) invalid = rendered.status();
    }
  } else if (entry != nullptr) {
    sync = false;
  }
  // No policy: `desired` is empty and every operand is pruned but the drivers. Taking a driver
  // away under running GPU workloads needs the upgrade's ceremony (cordon, drain), which only a
  // policy defines: the driver DaemonSets and their ServiceAccount stay until `helm uninstall`
  // (its ordered teardown) or a person deletes them.
  // With a policy, a driver DaemonSet no longer rendered (its pool deleted or without a driver of
  // its own) stays while a node's gpuop.io/driver.pool still selects it: the node moves to its
  // new pool through the upgrade (gpuop.io/driver-pool-target), and pruning the DaemonSet first
  // would end its driver under its workloads.
  // With drivers turned off (spec.components.driver, a node's gpuop.io/deploy.operands=false or
  // the node leaving the policy), a driver DaemonSet stays while a node still runs its driver
  // (gpuop.io/deploy.driver=true): the upgrade takes it off that node first
  // (gpuop.io/driver-removal).
  // Read only when something is pruned (the nodes are many, prunes are rare).
  std::optional<std::set<std::string>> driver_sets_in_use;
  const auto in_use = [&](const std::string& name) {
    if (run == nullptr) return false;
    if (!driver_sets_in_use.has_value()) {
      driver_sets_in_use.emplace();
      const bool drivers_on = run->spec.Enabled(Component::kDriver);
      const std::string deploy_driver = absl::StrCat(kDeployLabelPrefix, "driver");
      for (const auto& node : cache_.nodes().store().List()) {
        const kube::Labels& labels = node->node.metadata.labels;
        if (!drivers_on && labels.Get(deploy_driver) != std::optional<absl::string_view>("true")) {
          continue;
        }
        if (auto pool = labels.Get(kDriverPoolLabel); pool.has_value()) {
          driver_sets_in_use->insert(
              DriverDaemonSetOfLabels(*pool, labels.Get(kDriverOsLabel).value_or("")));
        }
      }
    }
    return driver_sets_in_use->contains(name);
  };
  // The driver's ServiceAccount and RBAC go with its last DaemonSet (the pods' safe-load step
  // reads and annotates their Node).
  const auto driver_account = [&](const std::string& kind, const std::string& name) {
    return name == DriverDaemonSetName("") &&
           (kind == "ServiceAccount" || kind == "ClusterRole" || kind == "ClusterRoleBinding");
  };
  const auto keep_drivers = [&](const std::string& kind, const std::string& name) {
    if (kind == "DaemonSet" && in_use(name)) return true;
    if (entry == nullptr) {
      return driver_account(kind, name) ||
             (kind == "DaemonSet" && absl::StartsWith(name, DriverDaemonSetName("")));
    }
    if (!driver_account(kind, name)) return false;
    for (const auto& ds : cache_.daemon_sets().store().List()) {
      if (absl::StartsWith(ds->metadata.name, DriverDaemonSetName("")) &&
          in_use(ds->metadata.name)) {
        return true;
      }
    }
    return false;
  };

  absl::Duration requeue = options_.resync;
  if (sync) {
    const uint64_t hash = JsonHash(nlohmann::json(desired));
    bool due;
    {
      absl::MutexLock lock(&mu_);
      due = applied_hash_ != hash || now >= next_resync_;
    }
    // A DaemonSet deleted or edited by hand is repaired at once (the cache sees DaemonSets);
    // other kinds at the next resync.
    for (const nlohmann::json& object : desired) {
      if (due || object.value("kind", "") != "DaemonSet") continue;
      auto live = cache_.daemon_sets().store().Get(
          absl::StrCat(options_.ns, "/", object["metadata"].value("name", "")));
      due = live == nullptr || live->metadata.annotations.Get(kSpecHashAnnotation) !=
                                   std::optional<absl::string_view>(SpecHash(object));
    }
    if (due) {
      GPUOP_ASSIGN_OR_RETURN(ApplyReport report, applier_.Sync(desired, keep_drivers));
      for (const std::string& error : report.errors) {
        if (options_.recorder != nullptr && entry != nullptr) {
          options_.recorder->Record(
              {.api_version = kApiVersion, .kind = "GPUClusterPolicy", .name = entry->name},
              kube::EventType::kWarning, "ApplyFailed", "Apply", error);
        }
      }
      absl::MutexLock lock(&mu_);
      last_report_ = report;
      if (report.ok()) {
        applied_hash_ = hash;
        next_resync_ = now + options_.resync;
      } else {
        applied_hash_.reset();
        requeue = options_.retry;
      }
    } else {
      absl::MutexLock lock(&mu_);
      requeue = std::max(absl::Seconds(1), next_resync_ - now);
    }
  }
  if (entry != nullptr) {
    GPUOP_RETURN_IF_ERROR(WritePolicyStatus(*entry, invalid, pools, driver_os, now));
  }
  GPUOP_RETURN_IF_ERROR(WritePoolStatuses(pools, now));
  return kube::Result{.requeue_after = requeue};
}

absl::Status PolicyReconciler::WritePolicyStatus(
    const PolicyEntry& entry, const absl::Status& invalid, const std::vector<NodePool>& pools,
    const std::map<std::string, std::set<std::string>>& driver_os, absl::Time now) {
  std::optional<nlohmann::json> previous;
  {
    absl::MutexLock lock(&mu_);
    previous = policy_status_;
  }
  if (!previous.has_value()) {
    // First status after a start: the object's current one keeps its transition times.
    absl::StatusOr<nlohmann::json> live = client_.Get(kGpuClusterPolicies, "", entry.name);
    if (!live.ok() && !absl::IsNotFound(live.status())) return live.status();
    previous = live.ok() ? live->value("status", nlohmann::json::object()) : nlohmann::json{};
  }
  PolicyStatusInput in{
      .generation = entry.generation,
      .pools = pools,
      .driver_os = driver_os,
      .daemon_sets = cache_.daemon_sets().store().List(),
      .pods = cache_.pods().store().List(),
      .nodes = cache_.nodes().store().List(),
      .previous_conditions = previous->value("conditions", nlohmann::json::array()),
      .now = now};
  if (invalid.ok()) {
    in.spec = entry.policy->spec;
  } else {
    in.spec = invalid;
  }
  {
    absl::MutexLock lock(&mu_);
    in.apply_errors = last_report_.errors;
  }
  nlohmann::json status = ComputePolicyStatus(in);
  if (status == *previous) return absl::OkStatus();
  nlohmann::json object = {{"apiVersion", kApiVersion},
                           {"kind", "GPUClusterPolicy"},
                           {"metadata", {{"name", entry.name}}},
                           {"status", status}};
  absl::StatusOr<nlohmann::json> written = client_.Apply(
      kGpuClusterPolicies, object, OperandApplier::kFieldManager, /*force=*/true, "status");
  if (!written.ok()) {
    if (absl::IsNotFound(written.status())) return absl::OkStatus();  // deleted meanwhile
    return written.status();
  }
  if (ReadyOf(status) != ReadyOf(*previous)) RecordReady(entry, status);
  absl::MutexLock lock(&mu_);
  policy_status_ = std::move(status);
  return absl::OkStatus();
}

void PolicyReconciler::RecordReady(const PolicyEntry& entry, const nlohmann::json& status) {
  if (options_.recorder == nullptr) return;
  for (const auto& c : status["conditions"]) {
    if (c.value("type", "") != "Ready") continue;
    const bool ready = c.value("status", "") == "True";
    options_.recorder->Record(
        {.api_version = kApiVersion, .kind = "GPUClusterPolicy", .name = entry.name},
        ready ? kube::EventType::kNormal : kube::EventType::kWarning, c.value("reason", ""),
        "Reconcile", c.value("message", ""));
  }
}

absl::Status PolicyReconciler::WritePoolStatuses(const std::vector<NodePool>& pools,
                                                 absl::Time now) {
  std::map<std::string, nlohmann::json> previous_conditions;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, status] : pool_statuses_) {
      previous_conditions[name] = status.value("conditions", nlohmann::json::array());
    }
  }
  const std::map<std::string, nlohmann::json> statuses =
      ComputePoolStatuses(pools, cache_.nodes().store().List(), previous_conditions, now);
  for (const auto& [name, status] : statuses) {
    {
      absl::MutexLock lock(&mu_);
      const auto found = pool_statuses_.find(name);
      if (found != pool_statuses_.end() && found->second == status) continue;
    }
    nlohmann::json object = {{"apiVersion", kApiVersion},
                             {"kind", "GPUNodePool"},
                             {"metadata", {{"name", name}}},
                             {"status", status}};
    absl::StatusOr<nlohmann::json> written = client_.Apply(
        kGpuNodePools, object, OperandApplier::kFieldManager, /*force=*/true, "status");
    if (!written.ok() && !absl::IsNotFound(written.status())) return written.status();
    absl::MutexLock lock(&mu_);
    pool_statuses_[name] = status;
  }
  return absl::OkStatus();
}

}  // namespace gpuop::op
