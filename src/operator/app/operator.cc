#include "operator/app/operator.h"

#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "kube/leaderelection/leader_elector.h"
#include "kube/leaderelection/lease_store.h"
#include "operator/api/node_state.h"
#include "operator/controllers/node_reconciler.h"
#include "operator/controllers/policy_reconciler.h"
#include "operator/crds/crds.h"
#include "operator/remediation/remediation_controller.h"
#include "operator/render/render.h"
#include "operator/upgrade/upgrade_controller.h"

namespace gpuop::op {
namespace {

constexpr char kLogger[] = "operator";
constexpr char kLeaseName[] = "gpuop-operator";

void LogError(const std::string& controller, const std::string& key, const absl::Status& error) {
  common::Log(common::LogLevel::kWarning, kLogger, "reconcile failed",
              {{"controller", controller}, {"key", key}, {"error", std::string(error.message())}});
}

// A reconcile that threw is a bug the operator survives: the loop retries the key with backoff
// and counts it (gpuop_controller_reconcile_panics_total); this says so on the object too.
void RecordPanic(kube::EventRecorder* recorder, const std::string& controller,
                 const kube::ObjectReference& regarding, const std::string& what) {
  common::Log(common::LogLevel::kError, kLogger, "reconcile threw",
              {{"controller", controller}, {"object", regarding.name}, {"error", what}});
  if (recorder == nullptr) return;
  recorder->Record(regarding, kube::EventType::kWarning, "ReconcilePanic", "Reconcile",
                   absl::StrCat("the ", controller, " reconcile threw, retrying: ", what));
}

}  // namespace

// The controllers of one leadership term.
struct Operator::Controllers {
  NodeReconciler node_reconciler;
  PolicyReconciler policy_reconciler;
  kube::Controller nodes;
  kube::Controller policy;
  upgrade::UpgradeController upgrades;
  remediation::RemediationController remediations;

  Controllers(kube::Client& client, OperatorCache& cache, const OperatorOptions& options,
              kube::ControllerMetrics& metrics, metrics::Registry& registry,
              kube::EventRecorder* recorder)
      : node_reconciler(client, cache),
        policy_reconciler(
            client, cache,
            {.ns = options.ns, .resync = options.policy_resync, .recorder = recorder}),
        nodes({.name = "nodes",
               .workers = options.node_workers,
               .metrics = &metrics,
               .on_error = [](const std::string& key,
                              const absl::Status& e) { LogError("nodes", key, e); },
               .on_panic =
                   [recorder](const std::string& key, const std::string& what) {
                     RecordPanic(recorder, "nodes",
                                 {.api_version = "v1", .kind = "Node", .name = key}, what);
                   }},
              [this](const std::string& key) { return node_reconciler.Reconcile(key); }),
        policy({.name = "policy",
                .workers = 1,
                .metrics = &metrics,
                .on_error = [](const std::string& key,
                               const absl::Status& e) { LogError("policy", key, e); },
                .on_panic =
                    [recorder](const std::string& key, const std::string& what) {
                      RecordPanic(
                          recorder, "policy",
                          {.api_version = kApiVersion, .kind = "GPUClusterPolicy", .name = key},
                          what);
                    }},
               [this](const std::string& key) { return policy_reconciler.Reconcile(key); }),
        upgrades(client, cache,
                 {.ns = options.ns,
                  .events = recorder,
                  .metrics = options.upgrade_metrics ? &registry : nullptr}),
        remediations(client, cache, {.ns = options.ns, .events = recorder, .metrics = &metrics}) {}
};

Operator::Operator(kube::Client& client, metrics::Registry& registry, OperatorOptions options)
    : client_(client),
      registry_(registry),
      options_(std::move(options)),
      controller_metrics_(registry) {
  registry_.AddCollector([this](metrics::TextWriter& out) {
    out.Header("gpuop_operator_leader", "1 while this replica holds the operator Lease.", "gauge");
    out.Sample("gpuop_operator_leader", {}, leading_.load() ? 1 : 0);
    if (cache_ == nullptr) return;
    out.Header("gpuop_operator_cached_objects", "Objects in the operator's cache, by kind.",
               "gauge");
    out.Sample("gpuop_operator_cached_objects", {{"kind", "Node"}},
               static_cast<double>(cache_->nodes().store().size()));
    out.Sample("gpuop_operator_cached_objects", {{"kind", "GPUNode"}},
               static_cast<double>(cache_->gpu_nodes().store().size()));
    out.Sample("gpuop_operator_cached_objects", {{"kind", "Pod"}},
               static_cast<double>(cache_->pods().store().size()));
  });
}

Operator::~Operator() = default;

void Operator::EnqueueNode(const std::string& name) {
  absl::MutexLock lock(&mu_);
  if (controllers_ != nullptr) controllers_->nodes.Enqueue(name);
}

void Operator::EnqueuePolicy() {
  absl::MutexLock lock(&mu_);
  if (controllers_ != nullptr) controllers_->policy.Enqueue(kPolicyName);
}

void Operator::EnqueuePolicySoon() {
  // Node and pod churn (thousands of events at start, or during a rollout) folds into one
  // status computation per interval rather than one write per event.
  absl::MutexLock lock(&mu_);
  if (controllers_ != nullptr) controllers_->policy.EnqueueAfter(kPolicyName, absl::Seconds(2));
}

void Operator::EnqueueAllNodes() {
  absl::MutexLock lock(&mu_);
  if (controllers_ == nullptr) return;
  for (const auto& entry : cache_->nodes().store().List()) {
    controllers_->nodes.Enqueue(entry->node.metadata.name);
  }
}

void Operator::RegisterHandlers() {
  cache_->nodes().AddHandlers({
      .on_add =
          [this](const NodeEntry& e) {
            EnqueueNode(e.node.metadata.name);
            EnqueuePolicySoon();
          },
      .on_update =
          [this](const NodeEntry& old, const NodeEntry& e) {
            EnqueueNode(e.node.metadata.name);
            // A driver DaemonSet a node now needs (a new OS, kernel or target) is rendered at
            // once: the node's driver waits for it.
            const auto driver_set = [](const NodeEntry& n) {
              const kube::ObjectMeta& m = n.node.metadata;
              return std::tuple(m.labels.Get(kDriverOsLabel), m.labels.Get(kDriverPoolLabel),
                                m.annotations.Get(kDriverOsTargetAnnotation),
                                m.annotations.Get(kDriverPoolTargetAnnotation));
            };
            if (driver_set(old) != driver_set(e)) {
              EnqueuePolicy();
            } else {
              EnqueuePolicySoon();
            }
          },
      .on_delete = [this](const NodeEntry&) { EnqueuePolicySoon(); },
  });
  auto all = [this] {
    EnqueuePolicy();
    EnqueueAllNodes();
  };
  cache_->policies().AddHandlers(
      {.on_add = [all](const PolicyEntry&) { all(); },
       .on_update = [all](const PolicyEntry&, const PolicyEntry&) { all(); },
       .on_delete = [all](const PolicyEntry&) { all(); }});
  cache_->pools().AddHandlers({.on_add = [all](const PoolEntry&) { all(); },
                               .on_update = [all](const PoolEntry&, const PoolEntry&) { all(); },
                               .on_delete = [all](const PoolEntry&) { all(); }});
  cache_->gpu_nodes().AddHandlers({
      .on_add = [this](const GpuNodeEntry& e) { EnqueueNode(e.name); },
      .on_update = [this](const GpuNodeEntry&, const GpuNodeEntry& e) { EnqueueNode(e.name); },
      .on_delete = [this](const GpuNodeEntry& e) { EnqueueNode(e.name); },
  });
  upgrade::UpgradeController::WatchCache(*cache_, [this] {
    absl::MutexLock lock(&mu_);
    if (controllers_ != nullptr) controllers_->upgrades.Enqueue();
  });
  remediation::RemediationController::WatchCache(*cache_, [this] {
    absl::MutexLock lock(&mu_);
    if (controllers_ != nullptr) controllers_->remediations.Enqueue();
  });
  cache_->daemon_sets().AddHandlers(
      {.on_add = [this](const kube::DaemonSet&) { EnqueuePolicy(); },
       .on_update = [this](const kube::DaemonSet&, const kube::DaemonSet&) { EnqueuePolicy(); },
       .on_delete = [this](const kube::DaemonSet&) { EnqueuePolicy(); }});
  auto pod_changed = [this](const OperandPod& p) {
    if (!p.node.empty()) EnqueueNode(p.node);
    EnqueuePolicySoon();
  };
  cache_->pods().AddHandlers(
      {.on_add = pod_changed,
       .on_update = [pod_changed](const OperandPod&, const OperandPod& p) { pod_changed(p); },
       .on_delete = pod_changed});
}

void Operator::Lead(std::stop_token stop) {
  common::Log(common::LogLevel::kInfo, kLogger, "leading: starting controllers",
              {{"identity", options_.identity}});
  auto controllers = std::make_unique<Controllers>(client_, *cache_, options_, controller_metrics_,
                                                   registry_, recorder_.get());
  for (absl::Status started : {controllers->nodes.Start(), controllers->policy.Start(),
                               controllers->upgrades.Start(), controllers->remediations.Start()}) {
    if (!started.ok()) {
      common::Log(common::LogLevel::kError, kLogger, "controller start failed",
                  {{"error", std::string(started.message())}});
      healthy_ = false;
      return;
    }
  }
  {
    absl::MutexLock lock(&mu_);
    controllers_ = controllers.get();
  }
  leading_ = true;
  EnqueuePolicy();
  EnqueueAllNodes();
  absl::Mutex wait_mu;
  bool stopped = false;
  std::stop_callback on_stop(stop, [&] {
    absl::MutexLock lock(&wait_mu);
    stopped = true;
  });
  {
    absl::MutexLock lock(&wait_mu);
    wait_mu.Await(absl::Condition(&stopped));
  }
  leading_ = false;
  {
    absl::MutexLock lock(&mu_);
    controllers_ = nullptr;
  }
  controllers->nodes.Stop();
  controllers->policy.Stop();
  controllers->upgrades.Stop();
  controllers->remediations.Stop();
  common::Log(common::LogLevel::kInfo, kLogger, "stopped leading: controllers stopped");
}

absl::Status Operator::Run(std::stop_token stop) {
  auto fail = [this](absl::Status status) {
    healthy_ = false;
    common::Log(common::LogLevel::kError, kLogger, "start-up failed",
                {{"error", std::string(status.message())}});
    return status;
  };
  if (options_.install_crds) {
    if (absl::Status installed = InstallCrds(client_, absl::Minutes(1)); !installed.ok()) {
      return fail(installed);
    }
    common::Log(common::LogLevel::kInfo, kLogger, "CRDs installed");
  }
  absl::StatusOr<std::unique_ptr<kube::EventRecorder>> recorder = kube::EventRecorder::Create(
      client_,
      {.reporting_controller = "gpuop.io/operator",
       .reporting_instance = options_.identity.empty() ? "gpuop-operator" : options_.identity});
  if (!recorder.ok()) return fail(recorder.status());
  recorder_ = *std::move(recorder);

  cache_ = std::make_unique<OperatorCache>(client_, options_.ns);
  RegisterHandlers();
  cache_->Start();
  if (!cache_->WaitForSync(options_.cache_sync_timeout)) {
    cache_->Stop();
    return fail(absl::DeadlineExceededError(absl::StrCat(
        "the cache did not sync within ", absl::FormatDuration(options_.cache_sync_timeout))));
  }
  ready_ = true;
  common::Log(common::LogLevel::kInfo, kLogger, "cache synced",
              {{"nodes", absl::StrCat(cache_->nodes().store().size())}});

  absl::Status result = absl::OkStatus();
  if (!options_.leader_elect) {
    Lead(stop);
  } else {
    kube::ClientLeaseStore store(client_);
    absl::StatusOr<std::unique_ptr<kube::LeaderElector>> elector = kube::LeaderElector::Create(
        store,
        {.lease_namespace = options_.ns,
         .lease_name = kLeaseName,
         .identity = options_.identity,
         .lease_duration = options_.lease_duration,
         .renew_deadline = options_.renew_deadline,
         .retry_period = options_.retry_period},
        {.on_started_leading = [this](std::stop_token term) { Lead(term); },
         .on_stopped_leading = [] {},
         .on_new_leader =
             [](const std::string& identity) {
               common::Log(common::LogLevel::kInfo, kLogger, "leader", {{"identity", identity}});
             }});
    if (!elector.ok()) {
      result = elector.status();
    } else {
      result = (*elector)->Run(stop);
    }
  }
  ready_ = false;
  recorder_->Stop();
  cache_->Stop();
  if (!result.ok()) return fail(result);
  return absl::OkStatus();
}

}  // namespace gpuop::op
