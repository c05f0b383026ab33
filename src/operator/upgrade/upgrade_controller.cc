#include "operator/upgrade/upgrade_controller.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "kube/client/resource.h"
#include "kube/workqueue/rate_limiter.h"
#include "operator/render/render.h"

namespace gpuop::op::upgrade {
namespace {

constexpr char kLogger[] = "upgrade";
constexpr char kDriverComponent[] = "driver";
constexpr char kValidatorComponent[] = "validator";

// The states whose rules look at the node's pods.
bool NeedsPods(UpgradeState state) {
  return state == UpgradeState::kWaitForJobsRequired ||
         state == UpgradeState::kPodDeletionRequired || state == UpgradeState::kDrainRequired;
}

// Whether a Node update can change a plan: labels, gpuop's annotations, schedulability or
// readiness.
bool NodeChanged(const kube::Node& a, const kube::Node& b) {
  return !(a.metadata.labels == b.metadata.labels) ||
         !(a.metadata.annotations == b.metadata.annotations) ||
         a.unschedulable != b.unschedulable || a.Ready() != b.Ready();
}

// The driver and validator pods move the upgrade; a GPU client pod going away lets a paused
// node's driver restart.
bool Watched(const OperandPod& pod) {
  return pod.component == kDriverComponent || pod.component == kValidatorComponent ||
         IsDriverClient(pod.component);
}

std::string StateName(UpgradeState state) {
  return state == UpgradeState::kUnknown ? "unknown" : std::string(UpgradeStateLabelValue(state));
}

}  // namespace

struct UpgradeController::Metrics {
  explicit Metrics(metrics::Registry& registry)
      : nodes(registry.AddGauge("gpuop_driver_upgrade_nodes",
                                "Managed GPU nodes per driver upgrade state (excluded: skip "
                                "label or host driver).",
                                {"state"})),
        transitions(registry.AddCounter("gpuop_driver_upgrade_transitions_total",
                                        "Driver upgrade state changes, by the state entered.",
                                        {"state"})),
        errors(registry.AddCounter("gpuop_driver_upgrade_errors_total",
                                   "Driver upgrade actions or reads that failed and will be "
                                   "retried.")) {}
  metrics::Family<metrics::Gauge>& nodes;
  metrics::Family<metrics::Counter>& transitions;
  metrics::Family<metrics::Counter>& errors;
};

UpgradeController::UpgradeController(kube::Client& client, OperatorCache& cache,
                                     UpgradeControllerOptions options)
    : client_(client),
      cache_(cache),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : common::Clock::Real()),
      executor_(client, options_.events),
      revisions_(client, options_.ns,
                 absl::StrCat(kManagedByLabel, "=", kManagedByValue, ",", kComponentLabel, "=",
                              kDriverComponent)),
      writes_(options_.cache_lag_limit) {
  if (options_.metrics != nullptr) metrics_ = std::make_unique<Metrics>(*options_.metrics);
  // Errors back off at most to `resync`: one key stands for every node, so a node whose action
  // keeps failing must not slow the others down.
  loop_ = std::make_unique<kube::Controller>(
      kube::ControllerOptions{.name = "driver-upgrade",
                              .workers = 1,
                              .rate_limiter = std::make_unique<kube::ItemExponentialRateLimiter>(
                                  absl::Milliseconds(100), options_.resync),
                              .clock = &clock_},
      [this](const std::string&) { return Reconcile(); });
}

void UpgradeController::WatchCache(OperatorCache& cache, std::function<void()> trigger) {
  const std::function<void()> fire = std::move(trigger);
  cache.nodes().AddHandlers({
      .on_add = [fire](const NodeEntry&) { fire(); },
      .on_update =
          [fire](const NodeEntry& a, const NodeEntry& b) {
            if (NodeChanged(a.node, b.node)) fire();
          },
      .on_delete = [fire](const NodeEntry&) { fire(); },
  });
  cache.pods().AddHandlers({
      .on_add =
          [fire](const OperandPod& p) {
            if (Watched(p)) fire();
          },
      .on_update =
          [fire](const OperandPod&, const OperandPod& p) {
            if (Watched(p)) fire();
          },
      .on_delete =
          [fire](const OperandPod& p) {
            if (Watched(p)) fire();
          },
  });
  cache.daemon_sets().AddHandlers({
      .on_add = [fire](const kube::DaemonSet&) { fire(); },
      .on_update = [fire](const kube::DaemonSet&, const kube::DaemonSet&) { fire(); },
      .on_delete = [fire](const kube::DaemonSet&) { fire(); },
  });
  cache.policies().AddHandlers({
      .on_add = [fire](const PolicyEntry&) { fire(); },
      .on_update = [fire](const PolicyEntry&, const PolicyEntry&) { fire(); },
      .on_delete = [fire](const PolicyEntry&) { fire(); },
  });
}

UpgradeController::~UpgradeController() { Stop(); }

absl::Status UpgradeController::Start() {
  absl::Status started = loop_->Start();
  if (started.ok()) loop_->Enqueue(kKey);
  return started;
}

void UpgradeController::Stop() { loop_->Stop(); }

UpgradeStatus UpgradeController::Status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

UpgradeSnapshot UpgradeController::BuildSnapshot(const PolicySpec& policy,
                                                 std::vector<std::string>& errors) {
  UpgradeSnapshot snapshot;
  snapshot.validation_enabled = policy.Enabled(Component::kValidator);
  std::map<std::string, std::optional<std::string>> revisions;  // by DaemonSet name
  auto revision_of = [&](const std::string& ds_name) -> std::optional<std::string> {
    if (auto it = revisions.find(ds_name); it != revisions.end()) return it->second;
    std::optional<std::string> revision;
    auto ds = cache_.daemon_sets().store().Get(absl::StrCat(options_.ns, "/", ds_name));
    if (ds != nullptr) {
      absl::StatusOr<std::optional<std::string>> found = revisions_.UpdateRevision(*ds);
      if (found.ok()) {
        revision = *found;
      } else {
        errors.push_back(absl::StrCat("reading the revisions of DaemonSet ", options_.ns, "/",
                                      ds_name, ": ", found.status().message()));
      }
    }
    revisions[ds_name] = revision;
    return revision;
  };

  std::set<std::string> driver_pods;
  for (const auto& entry : cache_.nodes().store().List()) {
    const kube::Node& node = entry->node;
    if (!IsManagedNode(node)) continue;
    NodeSnapshot n = DescribeNode(node);
    // With drivers off only the nodes whose driver is leaving (or mid-upgrade) are planned.
    if (!policy.Enabled(Component::kDriver) && n.removal.empty() &&
        !InProgress(ParseUpgradeState(n.state_label).value_or(UpgradeState::kUnknown))) {
      continue;
    }
    if (!n.Excluded()) n.update_revision = revision_of(n.driver_daemon_set);
    const OperandPods pods_on_node = cache_.PodsOn(n.name);
    for (const auto& pod : pods_on_node) {
      if (pod->component != kDriverComponent) continue;
      driver_pods.insert(pod->name);
      // Prefer the pod of the node's own driver DaemonSet.
      if (n.driver_pod.has_value() && n.driver_pod->owner == n.driver_daemon_set) continue;
      n.driver_pod = DriverPod{.ns = options_.ns,
                               .name = pod->name,
                               .owner = pod->owner,
                               .revision = pod->revision,
                               .ready = pod->ready,
                               .restarts = pod->restarts,
                               .created = pod->created,
                               .waits_for_safe_load = n.safe_load_pod == pod->name};
    }
    n.validator_ready = ValidatorReadySince(
        pods_on_node, n.driver_pod.has_value() ? n.driver_pod->created : absl::InfinitePast());
    n.clients = ClientsOf(node.metadata.labels, policy, pods_on_node);
    const UpgradeState state = ParseUpgradeState(n.state_label).value_or(UpgradeState::kUnknown);
    if (!n.Excluded() && NeedsPods(state)) {
      absl::StatusOr<kube::ObjectList> pods = client_.ListAll(
          kube::resources::kPods, "", {.field_selector = "spec.nodeName=" + n.name});
      if (pods.ok()) {
        n.pods_listed = true;
        for (const kube::Json& object : pods->items) {
          absl::StatusOr<PodInfo> pod = PodInfoFromJson(object);
          if (pod.ok()) n.pods.push_back(*std::move(pod));
        }
      } else {
        n.pods_error = std::string(pods.status().message());
        errors.push_back(absl::StrCat("listing the pods on node ", n.name, ": ", n.pods_error));
      }
    }
    snapshot.nodes.push_back(std::move(n));
  }
  absl::MutexLock lock(&mu_);
  std::erase_if(deleted_driver_pods_,
                [&](const std::string& name) { return !driver_pods.contains(name); });
  return snapshot;
}

absl::StatusOr<kube::Result> UpgradeController::Reconcile() {
  absl::MutexLock serial(&reconcile_mu_);
  const std::optional<ClusterPolicy> policy = cache_.Policy();
  if (!policy.has_value()) {
    Publish(UpgradePlan{});
    return kube::Result{};
  }
  const absl::Time now = clock_.Now();
  {
    absl::MutexLock lock(&mu_);
    if (!writes_.CaughtUp(cache_.nodes().store(), now))
      return kube::Result{.requeue_after = absl::Seconds(1)};
  }
  std::vector<std::string> errors;
  const UpgradeSnapshot snapshot = BuildSnapshot(policy->spec, errors);
  const UpgradePlan plan = Plan(snapshot, policy->spec.upgrade, now);

  for (const NodePlan& planned : plan.nodes) {
    if (!planned.HasWork()) continue;
    NodePlan p = planned;
    if (p.action == Action::kDeleteDriverPod) {
      absl::MutexLock lock(&mu_);
      if (deleted_driver_pods_.contains(p.pods.front().name)) {
        p.action = Action::kNone;
        p.pods.clear();
      }
    }
    absl::StatusOr<ExecuteResult> done = executor_.Execute(p, now);
    if (!done.ok()) {
      errors.push_back(absl::StrCat("node ", p.node, ": ", done.status().message()));
      continue;
    }
    for (const std::string& problem : done->problems) {
      // A PodDisruptionBudget saying no is the drain working as intended, not an error.
      if (problem.find("blocked by a PodDisruptionBudget") == std::string::npos) {
        errors.push_back(absl::StrCat("node ", p.node, ": ", problem));
      }
    }
    absl::MutexLock lock(&mu_);
    if (done->patched) writes_.Record(p.node, done->resource_version, now);
    if (p.action == Action::kDeleteDriverPod && done->problems.empty()) {
      deleted_driver_pods_.insert(p.pods.front().name);
    }
    if (p.Transition()) {
      common::Log(p.to == UpgradeState::kUpgradeFailed ? common::LogLevel::kWarning
                                                       : common::LogLevel::kInfo,
                  kLogger, "driver upgrade state changed",
                  {{"node", p.node},
                   {"from", StateName(p.from)},
                   {"to", StateName(p.to)},
                   {"message", p.message}});
      if (metrics_ != nullptr) metrics_->transitions.With({StateName(p.to)}).Inc();
    }
  }
  Publish(plan);
  if (!errors.empty()) {
    common::Log(common::LogLevel::kWarning, kLogger, "driver upgrade pass incomplete",
                {{"errors", absl::StrJoin(errors, "; ")}});
    if (metrics_ != nullptr) metrics_->errors.Get().Inc(static_cast<double>(errors.size()));
    return absl::UnavailableError(
        absl::StrCat("driver upgrade pass: ", absl::StrJoin(errors, "; ")));
  }
  if (plan.in_progress) return kube::Result{.requeue_after = options_.resync};
  return kube::Result{};
}

void UpgradeController::Publish(const UpgradePlan& plan) {
  UpgradeStatus status{.counts = plan.counts};
  for (const NodePlan& p : plan.nodes) {
    if (p.excluded || p.to == UpgradeState::kUnknown || p.to == UpgradeState::kUpgradeDone) {
      continue;
    }
    status.nodes.push_back({.node = p.node, .state = p.to, .message = p.Describe()});
  }
  if (metrics_ != nullptr) {
    for (UpgradeState state : kAllUpgradeStates) {
      metrics_->nodes.With({StateName(state)}).Set(static_cast<double>(plan.counts.Get(state)));
    }
    metrics_->nodes.With({"excluded"}).Set(static_cast<double>(plan.counts.excluded));
  }
  absl::MutexLock lock(&mu_);
  status_ = std::move(status);
}

}  // namespace gpuop::op::upgrade
