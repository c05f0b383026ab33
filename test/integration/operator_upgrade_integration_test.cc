// A rolling driver upgrade against the real kube-apiserver. The `apiserver` profile has no
// kubelet, no DaemonSet controller and no disruption controller, so the test plays them: it
// keeps one driver pod per node at the DaemonSet's current revision (creating the replacement
// when the upgrade controller deletes one) and one validator pod per node while the node's
// gpuop.io/deploy.validator is "true" (so the pause around a driver restart takes it away and
// brings a new one back), finishes the deletion of pods that are terminating, and computes the
// PodDisruptionBudget's status. Four nodes, maxParallel 2, drain enabled: one
// pre-cordoned node stays cordoned, one node whose pod a PodDisruptionBudget protects waits and
// then fails on the drain timeout while the others finish, and the operator is restarted (its
// cache and controller destroyed and made anew) in the middle.
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "kube/events/event_recorder.h"
#include "operator/api/resources.h"
#include "operator/cache/cache.h"
#include "operator/crds/crds.h"
#include "operator/upgrade/revisions.h"
#include "operator/upgrade/upgrade_controller.h"
#include "test/cluster/test_api.h"
#include "test/integration/kube_test_util.h"

namespace gpuop::test {
namespace {

using kube::Json;
using ::testing::HasSubstr;
namespace resources = kube::resources;

constexpr char kDriverDs[] = "gpuop-driver";
constexpr char kStateLabel[] = "gpuop.io/driver-upgrade-state";

Json OperandLabels(const std::string& component, const std::string& name) {
  return {{"app.kubernetes.io/managed-by", "gpuop-operator"},
          {"app.kubernetes.io/component", component},
          {"app.kubernetes.io/name", name}};
}

// The test's stand-in for the DaemonSet controller and the kubelets.
// Creates pod `name` on `node` in `ns`, controlled by `owner_kind`/`owner`, and reports it
// Running and Ready as the kubelet would. OK when both writes went through.
absl::Status CreateRunningPod(kube::Client& client, const std::string& ns, const std::string& name,
                              const std::string& node, const Json& labels,
                              const std::string& owner_kind, const std::string& owner,
                              const std::string& owner_uid, const Json& container) {
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"labels", labels},
                {"ownerReferences",
                 {{{"apiVersion", "apps/v1"},
                   {"kind", owner_kind},
                   {"name", owner},
                   {"uid", owner_uid},
                   {"controller", true}}}}}},
              {"spec", {{"nodeName", node}, {"containers", {container}}}}};
  if (auto created = client.Create(resources::kPods, ns, pod); !created.ok()) {
    return created.status();
  }
  return client
      .Patch(resources::kPods, ns, name, kube::PatchType::kMergePatch,
             {{"status",
               {{"phase", "Running"}, {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}},
             {.subresource = "status"})
      .status();
}

class FakeNodeAgents {
 public:
  FakeNodeAgents(kube::Client& client, std::string ns, std::string work_ns, std::string ds_uid,
                 std::vector<std::string> nodes)
      : client_(client),
        ns_(std::move(ns)),
        work_ns_(std::move(work_ns)),
        ds_uid_(std::move(ds_uid)),
        nodes_(std::move(nodes)) {}
  ~FakeNodeAgents() { Stop(); }

  void SetRevision(const std::string& revision) {
    absl::MutexLock lock(&mu_);
    revision_ = revision;
  }
  void Start() {
    thread_ = std::jthread([this](std::stop_token stop) {
      while (!stop.stop_requested()) {
        Sync();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  void Stop() {
    if (thread_.joinable()) {
      thread_.request_stop();
      thread_.join();
    }
  }
  // Driver pods created after the first round (replacements).
  int replaced() const { return replaced_.load(); }

 private:
  // One round: terminating pods go, each node gets a driver pod and, while selected, a validator
  // pod; new pods become Ready.
  void Sync() {
    for (const std::string& ns : {ns_, work_ns_}) {
      auto pods = client_.ListAll(resources::kPods, ns);
      if (!pods.ok()) continue;
      for (const Json& pod : pods->items) {
        if (pod["metadata"].contains("deletionTimestamp")) {
          (void)client_.Delete(resources::kPods, ns, pod["metadata"]["name"].get<std::string>(),
                               {.grace_period_seconds = 0});
        }
      }
    }
    std::string revision;
    {
      absl::MutexLock lock(&mu_);
      revision = revision_;
    }
    const std::map<std::string, std::string> drivers = Running("driver");
    const std::map<std::string, std::string> validators = Running("validator");
    for (const std::string& node : nodes_) {
      if (!drivers.contains(node)) {
        Json labels = OperandLabels("driver", kDriverDs);
        labels["controller-revision-hash"] = revision;
        if (CreateReady(absl::StrCat(kDriverDs, "-", node, "-", ++attempts_), node, labels,
                        kDriverDs, ds_uid_, "driver:" + revision) &&
            ++created_ > static_cast<int>(nodes_.size())) {
          replaced_.fetch_add(1);
        }
      }
      // The validator DaemonSet selects gpuop.io/deploy.validator=true.
      auto got = client_.Get(resources::kNodes, "", node);
      if (!got.ok()) continue;
      const bool selected =
          (*got)["metadata"]["labels"].value("gpuop.io/deploy.validator", "") == "true";
      if (selected && !validators.contains(node)) {
        (void)CreateReady(absl::StrCat("gpuop-validator-", node, "-", ++attempts_), node,
                          OperandLabels("validator", "gpuop-validator"), "gpuop-validator",
                          kValidatorDsUid, "v:1");
      } else if (!selected && validators.contains(node)) {
        (void)client_.Delete(resources::kPods, ns_, validators.at(node));
      }
    }
  }

  // The pods of `component` not being deleted: node -> pod name.
  std::map<std::string, std::string> Running(const std::string& component) {
    std::map<std::string, std::string> out;
    auto pods = client_.ListAll(resources::kPods, ns_,
                                {.label_selector = "app.kubernetes.io/component=" + component});
    if (!pods.ok()) return out;
    for (const Json& pod : pods->items) {
      if (pod["metadata"].contains("deletionTimestamp")) continue;
      out[pod["spec"].value("nodeName", "")] = pod["metadata"].value("name", "");
    }
    return out;
  }

  // A pod of DaemonSet `owner` on `node`, Running and Ready, as the kubelet would report it.
  bool CreateReady(const std::string& name, const std::string& node, const Json& labels,
                   const std::string& owner, const std::string& owner_uid,
                   const std::string& image) {
    return CreateRunningPod(client_, ns_, name, node, labels, "DaemonSet", owner, owner_uid,
                            {{"name", "c"}, {"image", image}})
        .ok();
  }

  static constexpr char kValidatorDsUid[] = "00000000-0000-0000-0000-000000000002";

  kube::Client& client_;
  const std::string ns_;
  const std::string work_ns_;
  const std::string ds_uid_;
  const std::vector<std::string> nodes_;
  absl::Mutex mu_;
  std::string revision_ ABSL_GUARDED_BY(mu_) = "rev1";
  int attempts_ = 0;  // the agents' thread only
  int created_ = 0;   // the agents' thread only
  std::atomic<int> replaced_{0};
  std::jthread thread_;
};

// The operator's upgrade half: a cache and the upgrade controller, as the binary wires them.
struct Operator {
  Operator(kube::Client& client, const std::string& ns, kube::EventRecorder* events,
           metrics::Registry* registry = nullptr)
      : cache(client, ns),
        controller(
            client, cache,
            {.ns = ns, .events = events, .metrics = registry, .resync = absl::Milliseconds(500)}) {
    op::upgrade::UpgradeController::WatchCache(cache, [this] { controller.Enqueue(); });
  }
  bool Start() {
    cache.Start();
    if (!cache.WaitForSync(absl::Seconds(30))) return false;
    return controller.Start().ok();
  }
  ~Operator() {
    controller.Stop();
    cache.Stop();
  }
  op::OperatorCache cache;
  op::upgrade::UpgradeController controller;
};

class OperatorUpgradeIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = AdminClient();
    ASSERT_NE(client_, nullptr);
    const absl::Status crds = op::InstallCrds(*client_, absl::Seconds(60));
    ASSERT_TRUE(crds.ok()) << crds;
    ns_ = CreateTestNamespace(*client_, "gpuop");
    work_ns_ = CreateTestNamespace(*client_, "work");
    const std::string base = UniqueName("upg");
    for (const char* suffix : {"a", "b", "c", "d"}) nodes_.push_back(base + "-" + suffix);
    auto recorder =
        kube::EventRecorder::Create(*client_, {.reporting_instance = "upgrade-integration-test"});
    ASSERT_TRUE(recorder.ok()) << recorder.status();
    events_ = *std::move(recorder);
  }

  void TearDown() override {
    agents_.reset();
    if (events_ != nullptr) events_->Stop();
    (void)client_->Delete(op::kGpuClusterPolicies, "", op::kPolicyName);
    for (const std::string& node : nodes_) (void)client_->Delete(resources::kNodes, "", node);
    for (const std::string& ns : {ns_, work_ns_})
      (void)client_->Delete(resources::kNamespaces, "", ns);
  }

  void CreateNode(const std::string& name, bool cordoned) {
    Json node = {{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata",
                  {{"name", name},
                   {"labels",
                    {{"gpuop.io/managed", "true"},
                     {"gpuop.io/deploy.driver", "true"},
                     {"gpuop.io/deploy.validator", "true"},
                     {"gpuop.io/driver.pool", "default"}}}}},
                 {"spec", {{"unschedulable", cordoned}}}};
    ASSERT_TRUE(client_->Create(resources::kNodes, "", node).ok());
    auto ready =
        client_->Patch(resources::kNodes, "", name, kube::PatchType::kMergePatch,
                       {{"status", {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}},
                       {.subresource = "status"});
    ASSERT_TRUE(ready.ok()) << ready.status();
  }

  // A Running pod on `node` in the workload namespace, owned by a ReplicaSet (so a drain may
  // evict it).
  void CreateWorkload(const std::string& name, const std::string& node, Json labels, bool gpu) {
    Json container = {{"name", "main"}, {"image", "work:1"}};
    if (gpu) container["resources"]["limits"]["nvidia.com/gpu"] = "1";
    ASSERT_TRUE(CreateRunningPod(*client_, work_ns_, name, node, labels, "ReplicaSet", name + "-rs",
                                 "00000000-0000-0000-0000-000000000001", container)
                    .ok());
  }

  // A ControllerRevision of the driver DaemonSet, then the DaemonSet's status saying the
  // controller has seen generation `generation`, as the DaemonSet controller writes them.
  void PublishRevision(const std::string& hash, int64_t revision, int64_t generation) {
    Json labels = OperandLabels("driver", kDriverDs);
    labels["controller-revision-hash"] = hash;
    Json cr = {{"apiVersion", "apps/v1"},
               {"kind", "ControllerRevision"},
               {"metadata",
                {{"name", absl::StrCat(kDriverDs, "-", hash)},
                 {"labels", labels},
                 {"ownerReferences",
                  {{{"apiVersion", "apps/v1"},
                    {"kind", "DaemonSet"},
                    {"name", kDriverDs},
                    {"uid", ds_uid_},
                    {"controller", true}}}}}},
               {"data", Json::object()},
               {"revision", revision}};
    auto created = client_->Create(op::upgrade::kControllerRevisions, ns_, cr);
    ASSERT_TRUE(created.ok()) << created.status();
    auto status =
        client_->Patch(resources::kDaemonSets, ns_, kDriverDs, kube::PatchType::kMergePatch,
                       {{"status",
                         {{"observedGeneration", generation},
                          {"desiredNumberScheduled", 4},
                          {"currentNumberScheduled", 4},
                          {"numberReady", 4},
                          {"numberMisscheduled", 0}}}},
                       {.subresource = "status"});
    ASSERT_TRUE(status.ok()) << status.status();
  }

  absl::StatusOr<Json> Node(const std::string& name) {
    return client_->Get(resources::kNodes, "", name);
  }
  std::string State(const std::string& name) {
    auto node = Node(name);
    if (!node.ok()) return "";
    return node->at("metadata").value("labels", Json::object()).value(kStateLabel, "");
  }
  // Every node's state, message and schedulability, for failure messages.
  std::string Dump() {
    std::string out;
    for (const std::string& name : nodes_) {
      auto node = Node(name);
      if (!node.ok()) continue;
      const Json annotations = (*node)["metadata"].value("annotations", Json::object());
      absl::StrAppend(&out, "\n  ", name, ": ", State(name),
                      (*node)["spec"].value("unschedulable", false) ? " (cordoned)" : "", ": ",
                      annotations.value("gpuop.io/driver-upgrade-message", ""));
    }
    return out;
  }
  static std::string Dump(const op::upgrade::UpgradeStatus& status) {
    std::string out;
    for (const auto& n : status.nodes) absl::StrAppend(&out, "\n  ", n.node, ": ", n.message);
    return out;
  }

  absl::Status AwaitStates(const std::map<std::string, std::string>& want, absl::Duration timeout) {
    return WaitUntil(absl::StrCat("nodes in ", want.size(), " states"), timeout,
                     [&]() -> absl::StatusOr<bool> {
                       for (const auto& [node, state] : want) {
                         if (State(node) != state) return false;
                       }
                       return true;
                     });
  }

  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<kube::EventRecorder> events_;
  std::string ns_;
  std::string work_ns_;
  std::string ds_uid_;
  std::vector<std::string> nodes_;
  std::unique_ptr<FakeNodeAgents> agents_;
};

TEST_F(OperatorUpgradeIntegrationTest, RollsTheDriverAcrossTheNodesThroughARestart) {
  const std::string& a = nodes_[0];  // plain
  const std::string& b = nodes_[1];  // its web pod is protected by a disruption budget
  const std::string& c = nodes_[2];  // cordoned by someone before the upgrade
  const std::string& d = nodes_[3];  // plain
  for (const std::string& node : nodes_) CreateNode(node, node == c);

  auto policy = client_->Create(op::kGpuClusterPolicies, "", Json::parse(R"({
      "apiVersion": "gpuop.io/v1alpha1", "kind": "GPUClusterPolicy",
      "metadata": {"name": "default"},
      "spec": {"driver": {"version": "570.86.15"},
               "upgrade": {"maxParallel": 2, "maxUnavailable": "100%",
                           "podDeletion": {"timeout": "1m"},
                           "drain": {"enabled": true, "timeout": "25s"},
                           "podRestartTimeout": "2m", "validationTimeout": "2m"}}})"));
  ASSERT_TRUE(policy.ok()) << policy.status();

  Json ds_labels = OperandLabels("driver", kDriverDs);
  auto ds = client_->Create(
      resources::kDaemonSets, ns_,
      {{"apiVersion", "apps/v1"},
       {"kind", "DaemonSet"},
       {"metadata", {{"name", kDriverDs}, {"labels", ds_labels}}},
       {"spec",
        {{"selector", {{"matchLabels", {{"app.kubernetes.io/name", kDriverDs}}}}},
         {"updateStrategy", {{"type", "OnDelete"}}},
         {"template",
          {{"metadata", {{"labels", ds_labels}}},
           {"spec", {{"containers", {{{"name", "driver"}, {"image", "driver:rev1"}}}}}}}}}}});
  ASSERT_TRUE(ds.ok()) << ds.status();
  ds_uid_ = (*ds)["metadata"]["uid"].get<std::string>();
  PublishRevision("rev1", 1, 1);

  // A GPU job on every node; on b, a web pod a budget protects.
  for (const std::string& node : nodes_) {
    CreateWorkload("train-" + node, node, {{"app", "train"}}, /*gpu=*/true);
  }
  CreateWorkload("web", b, {{"app", "web"}}, /*gpu=*/false);
  ASSERT_TRUE(client_
                  ->Create(resources::kPodDisruptionBudgets, work_ns_, Json::parse(R"({
      "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
      "metadata": {"name": "web-pdb"},
      "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})"))
                  .ok());
  // What the disruption controller would compute: one healthy pod, one needed, none to spare.
  ASSERT_TRUE(client_
                  ->Patch(resources::kPodDisruptionBudgets, work_ns_, "web-pdb",
                          kube::PatchType::kMergePatch,
                          {{"status",
                            {{"observedGeneration", 1},
                             {"disruptionsAllowed", 0},
                             {"currentHealthy", 1},
                             {"desiredHealthy", 1},
                             {"expectedPods", 1}}}},
                          {.subresource = "status"})
                  .ok());

  agents_ = std::make_unique<FakeNodeAgents>(*client_, ns_, work_ns_, ds_uid_, nodes_);
  agents_->Start();

  auto first = std::make_unique<Operator>(*client_, ns_, events_.get());
  ASSERT_TRUE(first->Start());
  // Every node runs the current driver: nothing to upgrade.
  ASSERT_TRUE(
      AwaitStates(
          {{a, "upgrade-done"}, {b, "upgrade-done"}, {c, "upgrade-done"}, {d, "upgrade-done"}},
          absl::Seconds(60))
          .ok());

  // A new driver: the template changes, the DaemonSet controller records revision 2.
  ASSERT_TRUE(client_
                  ->Patch(resources::kDaemonSets, ns_, kDriverDs, kube::PatchType::kMergePatch,
                          Json::parse(R"({"spec": {"template": {"spec": {"containers":
                              [{"name": "driver", "image": "driver:rev2"}]}}}})"))
                  .ok());
  agents_->SetRevision("rev2");
  PublishRevision("rev2", 2, 2);

  // b gets stuck behind the budget; the operator is restarted while it waits.
  const absl::Status blocked =
      WaitUntil("b blocked by the budget", absl::Seconds(60), [&]() -> absl::StatusOr<bool> {
        auto node = Node(b);
        if (!node.ok()) return node.status();
        const Json annotations = (*node)["metadata"].value("annotations", Json::object());
        return annotations.value("gpuop.io/driver-upgrade-message", "")
                   .find("blocked by a PodDisruptionBudget") != std::string::npos;
      });
  ASSERT_TRUE(blocked.ok()) << blocked << Dump() << "\nstatus:" << Dump(first->controller.Status());
  const op::upgrade::UpgradeStatus mid = first->controller.Status();
  EXPECT_LE(mid.counts.InProgress(), 2);
  first.reset();
  const std::map<std::string, std::string> at_restart = {
      {a, State(a)}, {b, State(b)}, {c, State(c)}, {d, State(d)}};
  EXPECT_EQ(at_restart.at(b), "drain-required");

  metrics::Registry registry;
  Operator second(*client_, ns_, events_.get(), &registry);
  ASSERT_TRUE(second.Start());
  const absl::Status finished = AwaitStates(
      {{a, "upgrade-done"}, {b, "upgrade-failed"}, {c, "upgrade-done"}, {d, "upgrade-done"}},
      absl::Seconds(120));
  ASSERT_TRUE(finished.ok()) << finished << Dump()
                             << "\nstatus:" << Dump(second.controller.Status())
                             << " (states at the restart: a=" << at_restart.at(a)
                             << " b=" << at_restart.at(b) << " c=" << at_restart.at(c)
                             << " d=" << at_restart.at(d) << ")";

  // c stays cordoned, the others are back in service (b too: its driver was never touched).
  for (const std::string& node : nodes_) {
    auto got = Node(node);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ((*got)["spec"].value("unschedulable", false), node == c) << node;
  }
  auto failed = Node(b);
  ASSERT_TRUE(failed.ok());
  EXPECT_THAT((*failed)["metadata"]["annotations"].value("gpuop.io/driver-upgrade-message", ""),
              HasSubstr("drain did not finish within 25s: 1 pod left (" + work_ns_ + "/web)"));
  // The protected pod still runs; the GPU jobs of the upgraded nodes were deleted.
  EXPECT_TRUE(client_->Get(resources::kPods, work_ns_, "web").ok());
  EXPECT_FALSE(client_->Get(resources::kPods, work_ns_, "train-" + a).ok());
  // Three drivers were replaced at the new revision; b still runs the old one.
  EXPECT_EQ(agents_->replaced(), 3);
  auto drivers = client_->ListAll(resources::kPods, ns_,
                                  {.label_selector = "app.kubernetes.io/component=driver"});
  ASSERT_TRUE(drivers.ok());
  for (const Json& pod : drivers->items) {
    const std::string node = pod["spec"]["nodeName"].get<std::string>();
    EXPECT_EQ(pod["metadata"]["labels"]["controller-revision-hash"], node == b ? "rev1" : "rev2")
        << node;
  }
  const op::upgrade::UpgradeStatus status = second.controller.Status();
  EXPECT_EQ(status.counts.Get(op::upgrade::UpgradeState::kUpgradeDone), 3);
  EXPECT_EQ(status.counts.Get(op::upgrade::UpgradeState::kUpgradeFailed), 1);
  const std::string metrics = registry.Render();
  EXPECT_THAT(metrics, HasSubstr("gpuop_driver_upgrade_nodes{state=\"upgrade-done\"} 3"));
  EXPECT_THAT(metrics, HasSubstr("gpuop_driver_upgrade_nodes{state=\"upgrade-failed\"} 1"));
  EXPECT_THAT(metrics,
              HasSubstr("gpuop_driver_upgrade_transitions_total{state=\"upgrade-failed\"} 1"));

  // Each transition was recorded as an Event on its Node.
  events_->Stop();
  const absl::Status recorded =
      WaitUntil("upgrade events", absl::Seconds(30), [&]() -> absl::StatusOr<bool> {
        auto list = client_->ListAll(resources::kEventsV1, "default");
        if (!list.ok()) return list.status();
        std::map<std::string, int> reasons;
        for (const Json& e : list->items) {
          if (e["regarding"].value("name", "") == b) ++reasons[e.value("reason", "")];
          if (e["regarding"].value("name", "") == a) ++reasons["a:" + e.value("reason", "")];
        }
        return reasons["DrainRequired"] > 0 && reasons["UpgradeFailed"] > 0 &&
               reasons["a:PodRestartRequired"] > 0 && reasons["a:UpgradeDone"] > 0;
      });
  EXPECT_TRUE(recorded.ok()) << recorded;
}

}  // namespace
}  // namespace gpuop::test
