// The operator end to end, as a user meets it: the gpuop-operator binary runs as a process
// against a full control plane (etcd, kube-apiserver, controller-manager, scheduler) whose nodes
// kwok simulates, and the test only writes what a person would (nodes, a policy, a workload) and
// reads what they would see. In three acts on the same cluster:
//   1. Converge: 20 GPU nodes and one CPU node; the policy's DaemonSets run on every GPU node.
//   2. A rolling driver upgrade with a PodDisruptionBudget in the way, never more than
//      maxParallel nodes at once, through a SIGKILL of the operator and a new operator process;
//      a node cordoned by a person beforehand is upgraded and stays cordoned.
//   3. An XID on a node whose real gpuop-agent health process reads the fake NVML: the operator
//      taints, drains, restarts the driver, waits for the GPU to recover, and returns the node.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "kube/client/client.h"
#include "operator/api/resources.h"
#include "test/cluster/cluster_environment.h"
#include "test/e2e/operator_e2e_util.h"
#include "test/fakes/node_objects.h"

namespace gpuop::test {
namespace {

using kube::Json;
using ::testing::Contains;
using ::testing::IsEmpty;
namespace resources = kube::resources;

const kube::ResourceType& kPolicies = op::kGpuClusterPolicies;
const kube::ResourceType& kGpuNodes = op::kGpuNodes;

constexpr int kGpuNodeCount = 20;
constexpr int kMaxParallel = 3;
constexpr char kOldDriver[] = "570.86.15";
constexpr char kNewDriver[] = "570.124.06";
constexpr int kTrainerReplicas = 3;

// The label keys and values the operator keeps its state in (src/operator/api/node_state.h),
// spelled out here as the contract a user and kubectl see.
constexpr char kManaged[] = "gpuop.io/managed";
constexpr char kUpgradeState[] = "gpuop.io/driver-upgrade-state";
constexpr char kUpgradeDone[] = "upgrade-done";
constexpr char kUpgradeFailed[] = "upgrade-failed";
constexpr char kUpgradeMessage[] = "gpuop.io/driver-upgrade-message";
constexpr char kRemediationState[] = "gpuop.io/remediation-state";
constexpr char kRemediationStep[] = "gpuop.io/remediation-step";
constexpr char kRemediationSince[] = "gpuop.io/remediation-since";
constexpr char kRemediationAttempts[] = "gpuop.io/remediation-attempts";
constexpr char kRemediationMessage[] = "gpuop.io/remediation-message";
constexpr char kRemediationTaint[] = "gpuop.io/remediation";

// The upgrade states in which a node holds one of the maxParallel slots.
bool UpgradeInProgress(const std::string& state) {
  static const std::set<std::string> kInProgress = {
      "cordon-required",      "wait-for-jobs-required", "pod-deletion-required", "drain-required",
      "pod-restart-required", "validation-required",    "uncordon-required"};
  return kInProgress.contains(state);
}

std::string Name(const Json& object) { return object["metadata"].value("name", ""); }

class OperatorE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<kube::Client>> client = AdminClient();
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
    run_ = UniqueName("op");
    work_dir_ = std::filesystem::temp_directory_path() / UniqueName("gpuop-operator-e2e");
    std::filesystem::create_directories(work_dir_);

    ns_ = run_ + "-system";
    apps_ = run_ + "-apps";
    for (const std::string& ns : {ns_, apps_}) {
      ASSERT_TRUE(
          client_
              ->Create(resources::kNamespaces, "",
                       {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}})
              .ok());
    }
    for (int i = 0; i < kGpuNodeCount; ++i) {
      gpu_nodes_.push_back(absl::StrFormat("%s-gpu-%02d", run_, i));
      Json node = fakes::KwokGpuNode(gpu_nodes_.back(), 8);  // NFD's pci-10de label included
      node["metadata"]["labels"]["e2e.gpuop.io/run"] = run_;
      ASSERT_TRUE(client_->Create(resources::kNodes, "", node).ok()) << gpu_nodes_.back();
    }
    cpu_node_ = run_ + "-cpu";
    const Json cpu = {{"apiVersion", "v1"},
                      {"kind", "Node"},
                      {"metadata",
                       {{"name", cpu_node_},
                        {"annotations", {{"kwok.x-k8s.io/node", "fake"}}},
                        {"labels",
                         {{"kubernetes.io/os", "linux"},
                          {"kubernetes.io/hostname", cpu_node_},
                          {"type", "kwok"},
                          {"e2e.gpuop.io/run", run_}}}}},
                      {"status",
                       {{"capacity", {{"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}}},
                        {"allocatable", {{"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}}}}}};
    ASSERT_TRUE(client_->Create(resources::kNodes, "", cpu).ok());
  }

  void TearDown() override {
    std::vector<ChildProcess*> children = {agent_.get(), operator_.get(), killed_operator_.get()};
    for (ChildProcess* child : children) {
      if (child == nullptr) continue;
      const absl::Status stopped = child->Stop();
      EXPECT_TRUE(stopped.ok()) << stopped;
    }
    if (HasFailure() || std::getenv("GPUOP_E2E_KEEP_LOGS") != nullptr) {
      for (ChildProcess* child : children) {
        if (child == nullptr) continue;
        std::cerr << "---- " << child->log().string() << " (" << child->DescribeExit()
                  << "), last lines:\n"
                  << child->LogTail() << "\n";
      }
      std::cerr << "logs kept in " << work_dir_.string() << "\n";
    } else {
      std::error_code ignored;
      std::filesystem::remove_all(work_dir_, ignored);
    }
    if (client_ == nullptr) return;
    (void)client_->Delete(kPolicies, "", "default");
    for (const std::string& ns : {apps_, ns_}) {
      (void)client_->Delete(resources::kNamespaces, "", ns);
    }
    for (const std::string& node : gpu_nodes_) (void)client_->Delete(resources::kNodes, "", node);
    if (!cpu_node_.empty()) (void)client_->Delete(resources::kNodes, "", cpu_node_);
  }

  // Starts an operator process as `identity` into operator_ (the previous one must be gone).
  void StartOperator(const std::string& identity) {
    absl::StatusOr<std::unique_ptr<ChildProcess>> started =
        ChildProcess::Start({GPUOP_OPERATOR_BINARY, "run", "--kubeconfig",
                             ClusterEnvironment::Get().kubeconfig().string(), "--namespace", ns_,
                             "--listen", "127.0.0.1:0", "--leader-elect", "--identity", identity},
                            {}, work_dir_ / absl::StrCat("operator-", identity, ".log"));
    ASSERT_TRUE(started.ok()) << started.status();
    operator_ = *std::move(started);
  }

  // This run's Nodes by name.
  absl::StatusOr<std::map<std::string, Json>> Nodes() {
    absl::StatusOr<kube::ObjectList> list =
        client_->List(resources::kNodes, "", {.label_selector = "e2e.gpuop.io/run=" + run_});
    if (!list.ok()) return list.status();
    std::map<std::string, Json> out;
    for (Json& node : list->items) {
      const std::string name = Name(node);
      out[name] = std::move(node);
    }
    return out;
  }

  // The pods of `daemon_set` in the operator's namespace, by node.
  absl::StatusOr<std::map<std::string, Json>> OperandPods(const std::string& daemon_set) {
    absl::StatusOr<kube::ObjectList> list = client_->List(resources::kPods, ns_);
    if (!list.ok()) return list.status();
    std::map<std::string, Json> out;
    for (Json& pod : list->items) {
      bool owned = false;
      for (const Json& owner : pod["metadata"].value("ownerReferences", Json::array())) {
        owned = owned ||
                (owner.value("kind", "") == "DaemonSet" && owner.value("name", "") == daemon_set);
      }
      const std::string node = pod["spec"].value("nodeName", "");
      if (owned && !node.empty()) out[node] = std::move(pod);
    }
    return out;
  }

  absl::StatusOr<std::vector<Json>> TrainerPods() {
    absl::StatusOr<kube::ObjectList> list =
        client_->List(resources::kPods, apps_, {.label_selector = "app=trainer"});
    if (!list.ok()) return list.status();
    return list->items;
  }

  // "" once the policy reports Ready=True for its current generation.
  absl::StatusOr<std::string> PolicyNotReady() {
    absl::StatusOr<Json> policy = client_->Get(kPolicies, "", "default");
    if (!policy.ok()) return policy.status();
    const Json& status = (*policy).value("status", Json::object());
    if (status.value("observedGeneration", int64_t{-1}) !=
        (*policy)["metadata"].value("generation", int64_t{0})) {
      return "the policy's status is for an older generation";
    }
    if (ConditionStatus(*policy, "Ready") != "True") {
      return "policy not Ready: " + status.value("conditions", Json::array()).dump();
    }
    return "";
  }

  // "" once the trainer Deployment has all its replicas ready and up to date.
  absl::StatusOr<std::string> TrainerNotReady() {
    absl::StatusOr<Json> deployment = client_->Get(resources::kDeployments, apps_, "trainer");
    if (!deployment.ok()) return deployment.status();
    const Json& status = (*deployment).value("status", Json::object());
    if (status.value("readyReplicas", 0) == kTrainerReplicas &&
        status.value("updatedReplicas", 0) == kTrainerReplicas &&
        status.value("replicas", 0) == kTrainerReplicas) {
      return "";
    }
    return "trainer Deployment status " + status.dump();
  }

  void Converge();
  void UpgradeThroughAnOperatorKill();
  void RemediateAnXid();

  std::unique_ptr<kube::Client> client_;
  std::string run_;
  std::filesystem::path work_dir_;
  std::string ns_;    // the operator's: its DaemonSets and Lease
  std::string apps_;  // a user's workload
  std::vector<std::string> gpu_nodes_;
  std::string cpu_node_;
  std::string precordoned_;
  std::unique_ptr<ChildProcess> operator_;
  std::unique_ptr<ChildProcess> killed_operator_;
  std::unique_ptr<ChildProcess> agent_;
};

void OperatorE2eTest::Converge() {
  ASSERT_NO_FATAL_FAILURE(StartOperator("e2e-operator-a"));
  // The operator installs its CRDs before anything else.
  ASSERT_TRUE(AwaitDone("the GPUClusterPolicy CRD served", absl::Seconds(90),
                        [&]() -> absl::StatusOr<std::string> {
                          absl::StatusOr<kube::ObjectList> list = client_->List(kPolicies, "");
                          if (!list.ok()) return list.status();
                          return "";
                        })
                  .ok())
      << operator_->LogTail();

  const Json policy = {
      {"apiVersion", "gpuop.io/v1alpha1"},
      {"kind", "GPUClusterPolicy"},
      {"metadata", {{"name", "default"}}},
      {"spec",
       {{"driver", {{"version", kOldDriver}}},
        // Only what the upgrade and remediation need, to keep 20 nodes light: the driver and
        // the validator that proves it works. Health comes from the agent process of act 3.
        {"components",
         {{"labels", {{"enabled", false}}},
          {"runtime", {{"enabled", false}}},
          {"cdi", {{"enabled", false}}},
          {"devicePlugin", {{"enabled", false}}},
          {"exporter", {{"enabled", false}}},
          {"health", {{"enabled", false}}}}},
        {"upgrade",
         {{"maxParallel", kMaxParallel}, {"drain", {{"enabled", true}, {"timeout", "5m"}}}}},
        {"remediation", {{"stepTimeout", "5m"}}}}}};
  absl::StatusOr<Json> applied = client_->Apply(kPolicies, policy, "e2e", true);
  ASSERT_TRUE(applied.ok()) << applied.status();

  const absl::Status converged =
      AwaitDone("the fleet converged", absl::Minutes(5), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<std::map<std::string, Json>> nodes = Nodes();
        if (!nodes.ok()) return nodes.status();
        for (const std::string& name : gpu_nodes_) {
          if (LabelOf((*nodes)[name], kManaged) != "true") return name + " not managed yet";
        }
        absl::StatusOr<kube::ObjectList> gpu_node_objects = client_->List(kGpuNodes, "");
        if (!gpu_node_objects.ok()) return gpu_node_objects.status();
        std::set<std::string> reported;
        for (const Json& g : gpu_node_objects->items) reported.insert(Name(g));
        for (const std::string& name : gpu_nodes_) {
          if (!reported.contains(name)) return "no GPUNode " + name;
        }
        for (const char* ds : {"gpuop-driver", "gpuop-validator"}) {
          absl::StatusOr<std::map<std::string, Json>> pods = OperandPods(ds);
          if (!pods.ok()) return pods.status();
          for (const std::string& name : gpu_nodes_) {
            auto pod = pods->find(name);
            if (pod == pods->end()) return absl::StrCat("no ", ds, " pod on ", name);
            if (!PodRunningAndReady(pod->second)) {
              return absl::StrCat(ds, " pod on ", name, " not running: ",
                                  pod->second.value("status", Json::object()).dump());
            }
          }
        }
        return PolicyNotReady();
      });
  ASSERT_TRUE(converged.ok()) << converged;

  // The CPU node is left alone: none of the operator's labels, no GPUNode, no operand pod.
  absl::StatusOr<Json> cpu = client_->Get(resources::kNodes, "", cpu_node_);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  const Json cpu_labels = (*cpu)["metadata"].value("labels", Json::object());
  for (const auto& [key, value] : cpu_labels.items()) {
    EXPECT_FALSE(absl::StartsWith(key, "gpuop.io/")) << key << "=" << value;
  }
  EXPECT_EQ(client_->Get(kGpuNodes, "", cpu_node_).status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<kube::ObjectList> pods =
      client_->List(resources::kPods, ns_, {.field_selector = "spec.nodeName=" + cpu_node_});
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_THAT(pods->items, IsEmpty());

  // Exactly the enabled components were rendered, each scheduled on every GPU node, the driver
  // at the policy's version.
  absl::StatusOr<kube::ObjectList> daemon_sets = client_->List(resources::kDaemonSets, ns_);
  ASSERT_TRUE(daemon_sets.ok()) << daemon_sets.status();
  std::set<std::string> names;
  for (const Json& ds : daemon_sets->items) {
    names.insert(Name(ds));
    EXPECT_EQ(ds["status"].value("desiredNumberScheduled", 0), kGpuNodeCount) << Name(ds);
    EXPECT_EQ(ds["status"].value("numberReady", 0), kGpuNodeCount) << Name(ds);
    if (Name(ds) == "gpuop-driver") {
      const std::string image = ds["spec"]["template"]["spec"]["containers"][0].value("image", "");
      EXPECT_THAT(image, ::testing::HasSubstr(kOldDriver));
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"gpuop-driver", "gpuop-validator"}));
}

void OperatorE2eTest::UpgradeThroughAnOperatorKill() {
  // A workload that does not use GPUs, so the upgrade drains it (through the eviction API)
  // rather than deleting it, one pod per node, and a budget that lets only one go at a time.
  // Its pods may run only on the first three nodes, which the upgrade takes first (in name
  // order) and together: a drained pod's replacement waits until one of them is uncordoned,
  // so the budget holds the other two drains back until then.
  Json deployment = Json::parse(R"json({
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "trainer"},
    "spec": {
      "replicas": 3,
      "selector": {"matchLabels": {"app": "trainer"}},
      "template": {
        "metadata": {"labels": {"app": "trainer"}},
        "spec": {
          "nodeSelector": {"gpuop.io/managed": "true"},
          "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "trainer"}},
             "topologyKey": "kubernetes.io/hostname"}]}},
          "terminationGracePeriodSeconds": 1,
          "containers": [{"name": "main", "image": "example.invalid/trainer:never-pulled"}]
        }
      }
    }})json");
  const std::vector<std::string> first_batch(gpu_nodes_.begin(),
                                             gpu_nodes_.begin() + kTrainerReplicas);
  deployment["spec"]["template"]["spec"]["affinity"]["nodeAffinity"] = Json::parse(R"json({
    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
      {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In"}]}]}})json");
  deployment["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
            ["matchExpressions"][0]["values"] = first_batch;
  ASSERT_TRUE(client_->Create(resources::kDeployments, apps_, deployment).ok());
  const Json budget = Json::parse(R"json({
    "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
    "metadata": {"name": "trainer"},
    "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "trainer"}}}})json");
  ASSERT_TRUE(client_->Create(resources::kPodDisruptionBudgets, apps_, budget).ok());
  absl::Status ready = AwaitDone(
      "the trainer and its budget", absl::Minutes(2), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<std::string> trainer = TrainerNotReady();
        if (!trainer.ok() || !trainer->empty()) return trainer;
        absl::StatusOr<Json> pdb = client_->Get(resources::kPodDisruptionBudgets, apps_, "trainer");
        if (!pdb.ok()) return pdb.status();
        if ((*pdb)["status"].value("disruptionsAllowed", -1) != 1) {
          return "budget " + (*pdb)["status"].dump();
        }
        return "";
      });
  ASSERT_TRUE(ready.ok()) << ready;
  absl::StatusOr<std::vector<Json>> placed = TrainerPods();
  ASSERT_TRUE(placed.ok()) << placed.status();
  for (const Json& pod : *placed) {
    ASSERT_THAT(first_batch, Contains(pod["spec"].value("nodeName", ""))) << Name(pod);
  }

  // A person cordoned a node for reasons of their own: it is upgraded, and stays cordoned.
  precordoned_ = gpu_nodes_[4];
  ASSERT_TRUE(client_
                  ->Patch(resources::kNodes, "", precordoned_, kube::PatchType::kMergePatch,
                          {{"spec", {{"unschedulable", true}}}})
                  .ok());

  absl::StatusOr<std::string> old_revision = CurrentRevisionHash(*client_, ns_, "gpuop-driver");
  ASSERT_TRUE(old_revision.ok()) << old_revision.status();
  ASSERT_TRUE(client_
                  ->Patch(kPolicies, "", "default", kube::PatchType::kMergePatch,
                          {{"spec", {{"driver", {{"version", kNewDriver}}}}}})
                  .ok());

  // Watch every node's upgrade state until all 20 run the new driver. Once one node has
  // finished and others are still on their way, the operator is killed and a new one started.
  int most_in_progress = 0;
  int fewest_trainers = kTrainerReplicas;
  std::set<std::string> held_back;  // nodes whose drain the budget blocked
  std::string most_in_progress_seen;
  std::set<std::string> failed;
  bool killed = false;
  std::string killed_when;
  absl::Time killed_at, took_over_at, finished_at;
  bool finished_before_kill = false;
  std::string new_revision;
  const absl::Status upgraded =
      AwaitDone("every node upgraded", absl::Minutes(15), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<std::map<std::string, Json>> nodes = Nodes();
        if (!nodes.ok()) return nodes.status();
        std::vector<std::string> in_progress;
        for (const std::string& name : gpu_nodes_) {
          const std::string state = LabelOf((*nodes)[name], kUpgradeState);
          if (UpgradeInProgress(state)) in_progress.push_back(name + "=" + state);
          if (state == kUpgradeFailed) failed.insert(name);
          if (absl::StrContains(AnnotationOf((*nodes)[name], kUpgradeMessage),
                                "PodDisruptionBudget")) {
            held_back.insert(name);
          }
        }
        absl::StatusOr<std::vector<Json>> trainers = TrainerPods();
        if (!trainers.ok()) return trainers.status();
        const int running =
            static_cast<int>(std::count_if(trainers->begin(), trainers->end(), PodRunningAndReady));
        fewest_trainers = std::min(fewest_trainers, running);
        if (static_cast<int>(in_progress.size()) > most_in_progress) {
          most_in_progress = static_cast<int>(in_progress.size());
          most_in_progress_seen = absl::StrJoin(in_progress, ", ");
        }
        absl::StatusOr<std::string> revision = CurrentRevisionHash(*client_, ns_, "gpuop-driver");
        if (!revision.ok()) return revision.status();
        if (*revision == *old_revision) return "the driver DaemonSet has no new revision yet";
        new_revision = *revision;
        absl::StatusOr<std::map<std::string, Json>> driver_pods = OperandPods("gpuop-driver");
        if (!driver_pods.ok()) return driver_pods.status();
        std::vector<std::string> waiting;
        for (const std::string& name : gpu_nodes_) {
          auto pod = driver_pods->find(name);
          const bool current = pod != driver_pods->end() &&
                               LabelOf(pod->second, "controller-revision-hash") == new_revision &&
                               PodRunningAndReady(pod->second);
          if (!current || LabelOf((*nodes)[name], kUpgradeState) != kUpgradeDone) {
            waiting.push_back(name);
          }
        }
        const int done = kGpuNodeCount - static_cast<int>(waiting.size());
        if (!killed && done >= 1 && !in_progress.empty()) {
          // Mid-upgrade: some nodes cordoned, drained or restarting. No chance to clean up.
          const absl::Status kill = operator_->Kill();
          if (!kill.ok()) return kill;
          killed = true;
          killed_at = absl::Now();
          killed_when = absl::StrCat(done, " of ", kGpuNodeCount,
                                     " upgraded; in progress: ", absl::StrJoin(in_progress, ", "));
          killed_operator_ = std::move(operator_);
          StartOperator("e2e-operator-b");
          if (operator_ == nullptr) return absl::InternalError("the second operator did not start");
        }
        if (killed && took_over_at == absl::Time()) {
          absl::StatusOr<Json> lease = client_->Get(resources::kLeases, ns_, "gpuop-operator");
          if (lease.ok() && (*lease)["spec"].value("holderIdentity", "") == "e2e-operator-b") {
            took_over_at = absl::Now();
          }
        }
        if (waiting.empty()) {
          finished_before_kill = !killed;
          finished_at = absl::Now();
          return "";
        }
        return absl::StrCat(done, " of ", kGpuNodeCount,
                            " upgraded; in progress: ", absl::StrJoin(in_progress, ", "));
      });
  ASSERT_TRUE(upgraded.ok()) << upgraded;
  ASSERT_FALSE(finished_before_kill) << "the upgrade was never seen mid-way, so never interrupted";
  ASSERT_TRUE(killed);
  EXPECT_THAT(killed_operator_->DescribeExit(), ::testing::HasSubstr("signal 9"));
  EXPECT_LE(most_in_progress, kMaxParallel) << "at once: " << most_in_progress_seen;
  EXPECT_GE(most_in_progress, 1);
  EXPECT_THAT(failed, IsEmpty());
  EXPECT_GE(fewest_trainers, kTrainerReplicas - 1) << "the budget allows one trainer down";
  // The first of the three nodes to drain takes the budget's one disruption; the other two wait.
  EXPECT_GE(held_back.size(), 2u) << "the budget held back: " << absl::StrJoin(held_back, ", ");
  std::cout << "[e2e] operator killed with " << killed_when << "\n[e2e] most nodes in progress at "
            << "once: " << most_in_progress << " (" << most_in_progress_seen << ")\n"
            << "[e2e] drains held back by the budget: " << absl::StrJoin(held_back, ", ")
            << "; fewest trainers running: " << fewest_trainers << "\n"
            << "[e2e] after the kill: the new operator led in "
            << absl::FormatDuration(took_over_at - killed_at) << ", the upgrade finished in "
            << absl::FormatDuration(finished_at - killed_at) << "\n";

  // The new operator finished the job: the nodes are back in service, except the one a person
  // had cordoned, and the workload is whole again.
  const absl::Status settled =
      AwaitDone("the fleet settled", absl::Minutes(3), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<std::map<std::string, Json>> nodes = Nodes();
        if (!nodes.ok()) return nodes.status();
        for (const std::string& name : gpu_nodes_) {
          if (name != precordoned_ && Cordoned((*nodes)[name])) return name + " still cordoned";
        }
        absl::StatusOr<Json> ds = client_->Get(resources::kDaemonSets, ns_, "gpuop-driver");
        if (!ds.ok()) return ds.status();
        const Json& status = (*ds)["status"];
        if (status.value("updatedNumberScheduled", 0) != kGpuNodeCount ||
            status.value("numberReady", 0) != kGpuNodeCount) {
          return "driver DaemonSet status " + status.dump();
        }
        // The fleet table (kubectl get gpunodes) says so too.
        absl::StatusOr<kube::ObjectList> gpu_nodes = client_->List(kGpuNodes, "");
        if (!gpu_nodes.ok()) return gpu_nodes.status();
        for (const Json& g : gpu_nodes->items) {
          const Json& driver = g.value("status", Json::object()).value("driver", Json::object());
          if (driver.value("state", "") != kUpgradeDone) {
            return absl::StrCat("GPUNode ", Name(g), " driver ", driver.dump());
          }
        }
        absl::StatusOr<std::string> trainer = TrainerNotReady();
        if (!trainer.ok() || !trainer->empty()) return trainer;
        return PolicyNotReady();
      });
  EXPECT_TRUE(settled.ok()) << settled;

  absl::StatusOr<std::map<std::string, Json>> nodes = Nodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  absl::StatusOr<std::map<std::string, Json>> driver_pods = OperandPods("gpuop-driver");
  ASSERT_TRUE(driver_pods.ok()) << driver_pods.status();
  for (const std::string& name : gpu_nodes_) {
    EXPECT_EQ(LabelOf((*nodes)[name], kUpgradeState), kUpgradeDone) << name;
    EXPECT_EQ(Cordoned((*nodes)[name]), name == precordoned_) << name;
    ASSERT_TRUE(driver_pods->contains(name)) << name;
    EXPECT_EQ(LabelOf((*driver_pods)[name], "controller-revision-hash"), new_revision) << name;
  }
  absl::StatusOr<Json> ds = client_->Get(resources::kDaemonSets, ns_, "gpuop-driver");
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_THAT((*ds)["spec"]["template"]["spec"]["containers"][0].value("image", ""),
              ::testing::HasSubstr(kNewDriver));
  // The operator that finished is the one started after the kill.
  absl::StatusOr<Json> lease = client_->Get(resources::kLeases, ns_, "gpuop-operator");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ((*lease)["spec"].value("holderIdentity", ""), "e2e-operator-b");
}

void OperatorE2eTest::RemediateAnXid() {
  // The node that runs a trainer pod, so the drain has something to move.
  std::string node;
  std::string trainer_pod;
  {
    absl::StatusOr<std::vector<Json>> trainers = TrainerPods();
    ASSERT_TRUE(trainers.ok()) << trainers.status();
    for (const Json& pod : *trainers) {
      if (PodRunningAndReady(pod)) {
        node = pod["spec"].value("nodeName", "");
        trainer_pod = Name(pod);
        break;
      }
    }
  }
  ASSERT_FALSE(node.empty()) << "no running trainer pod";
  absl::StatusOr<std::map<std::string, Json>> driver_pods = OperandPods("gpuop-driver");
  ASSERT_TRUE(driver_pods.ok()) << driver_pods.status();
  ASSERT_TRUE(driver_pods->contains(node));
  const std::string old_driver_pod = Name((*driver_pods)[node]);

  // The node's health monitor: a real agent process on the fake NVML (8 x H100).
  const std::filesystem::path control = work_dir_ / "nvml-control";
  absl::StatusOr<std::unique_ptr<ChildProcess>> agent = ChildProcess::Start(
      {GPUOP_AGENT_BINARY, "health", "--node-name", node, "--kubeconfig",
       ClusterEnvironment::Get().kubeconfig().string(), "--nvml-library", GPUOP_FAKE_NVML_LIBRARY,
       "--sysfs-root", (work_dir_ / "no-sysfs").string(), "--health-file",
       (work_dir_ / "gpu-health.json").string(), "--recover-after", "6", "--sample-interval", "2"},
      {"GPUOP_FAKE_NVML_SCENARIO=h100-8x-nvswitch",
       absl::StrCat("GPUOP_FAKE_NVML_CONTROL=", control.string())},
      work_dir_ / "agent-health.log");
  ASSERT_TRUE(agent.ok()) << agent.status();
  agent_ = *std::move(agent);
  auto gpu_healthy = [&]() -> absl::StatusOr<std::string> {
    absl::StatusOr<Json> got = client_->Get(resources::kNodes, "", node);
    if (!got.ok()) return got.status();
    return ConditionStatus(*got, "GPUHealthy");
  };
  absl::Status healthy = AwaitDone(
      "GPUHealthy=True from the agent", absl::Minutes(1), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<std::string> status = gpu_healthy();
        if (!status.ok()) return status.status();
        return *status == "True" ? "" : "GPUHealthy is '" + *status + "'";
      });
  ASSERT_TRUE(healthy.ok()) << healthy;

  // XID 79 (fallen off the bus) on GPU 3, repeated every 2 s so that the GPU stays unhealthy
  // (the agent recovers it after 6 quiet seconds) until the remediation has been seen waiting
  // in Validate for a while; then the XIDs stop and the GPU recovers.
  absl::Time last_xid = absl::InfinitePast();
  std::optional<absl::Time> validate_seen;
  bool saw_unhealthy = false, saw_taint = false, saw_in_progress = false;
  std::vector<std::string> violations;
  const absl::Status remediated =
      AwaitDone("the node remediated", absl::Minutes(5), [&]() -> absl::StatusOr<std::string> {
        const absl::Time now = absl::Now();
        const bool keep_failing =
            !validate_seen.has_value() || now - *validate_seen < absl::Seconds(6);
        if (keep_failing && now - last_xid >= absl::Seconds(2)) {
          if (absl::Status appended = AppendLine(control, "xid 3 79"); !appended.ok()) {
            return appended;
          }
          last_xid = now;
        }
        absl::StatusOr<Json> got = client_->Get(resources::kNodes, "", node);
        if (!got.ok()) return got.status();
        const std::string health = ConditionStatus(*got, "GPUHealthy");
        const std::string state = LabelOf(*got, kRemediationState);
        const std::string step = AnnotationOf(*got, kRemediationStep);
        const bool tainted = HasTaint(*got, kRemediationTaint);
        saw_unhealthy = saw_unhealthy || health == "False";
        saw_taint = saw_taint || tainted;
        saw_in_progress = saw_in_progress || state == "in-progress";
        if (step == "Validate" && health == "False" && !validate_seen.has_value()) {
          validate_seen = now;
        }
        // While the GPU is unhealthy the node must not go back to service.
        if (saw_taint && health == "False" && (!tainted || state == "done")) {
          violations.push_back(absl::StrCat("state=", state, " step=", step, " tainted=", tainted,
                                            " with GPUHealthy=False"));
        }
        if (state == "done" && !tainted && health == "True" && validate_seen.has_value()) {
          return "";
        }
        return absl::StrCat("GPUHealthy=", health, " state=", state, " step=", step,
                            " tainted=", tainted);
      });
  ASSERT_TRUE(remediated.ok()) << remediated << "\nagent log:\n" << agent_->LogTail();
  EXPECT_TRUE(saw_unhealthy);
  EXPECT_TRUE(saw_taint);
  EXPECT_TRUE(saw_in_progress);
  EXPECT_THAT(violations, IsEmpty());

  // Its state, as kubectl shows it.
  absl::StatusOr<Json> got = client_->Get(resources::kNodes, "", node);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(LabelOf(*got, kRemediationState), "done");
  EXPECT_FALSE(HasAnnotation(*got, kRemediationStep));
  EXPECT_TRUE(HasAnnotation(*got, kRemediationSince));
  const std::vector<std::string> attempts =
      absl::StrSplit(AnnotationOf(*got, kRemediationAttempts), ',', absl::SkipEmpty());
  EXPECT_EQ(attempts.size(), 1u) << AnnotationOf(*got, kRemediationAttempts);
  EXPECT_FALSE(AnnotationOf(*got, kRemediationMessage).empty());
  EXPECT_FALSE(Cordoned(*got));
  // And as the node's GPUNode shows it.
  const absl::Status reported = AwaitDone(
      "the GPUNode reports the remediation", absl::Minutes(1),
      [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<Json> g = client_->Get(kGpuNodes, "", node);
        if (!g.ok()) return g.status();
        const Json status = g->value("status", Json::object());
        const Json remediation = status.value("remediation", Json::object());
        if (remediation.value("state", "") == "done" && remediation.value("attempts", 0) == 1 &&
            status.value("health", Json::object()).value("state", "") == "Healthy") {
          return "";
        }
        return "GPUNode status " + status.dump();
      });
  EXPECT_TRUE(reported.ok()) << reported;

  // The driver was restarted (a new pod), the trainer pod was drained and is whole elsewhere.
  driver_pods = OperandPods("gpuop-driver");
  ASSERT_TRUE(driver_pods.ok()) << driver_pods.status();
  ASSERT_TRUE(driver_pods->contains(node));
  EXPECT_NE(Name((*driver_pods)[node]), old_driver_pod);
  EXPECT_TRUE(PodRunningAndReady((*driver_pods)[node]));
  EXPECT_EQ(client_->Get(resources::kPods, apps_, trainer_pod).status().code(),
            absl::StatusCode::kNotFound);
  const absl::Status whole =
      AwaitDone("the trainer whole again", absl::Minutes(2), [&] { return TrainerNotReady(); });
  EXPECT_TRUE(whole.ok()) << whole;

  // The operator told the story in Events on the Node.
  std::vector<std::string> reasons;
  const absl::Status told =
      AwaitDone("remediation Events", absl::Minutes(1), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<kube::ObjectList> events = client_->ListAll(resources::kEventsV1, "");
        if (!events.ok()) return events.status();
        std::vector<std::pair<std::string, std::string>> timed;
        for (const Json& e : events->items) {
          const std::string reason = e.value("reason", "");
          if (e["regarding"].value("kind", "") == "Node" &&
              e["regarding"].value("name", "") == node && absl::StartsWith(reason, "Remediation")) {
            timed.emplace_back(e.value("eventTime", ""), reason);
          }
        }
        std::sort(timed.begin(), timed.end());
        reasons.clear();
        for (const auto& [time, reason] : timed) reasons.push_back(reason);
        // The taint goes on with the first step's write and comes off with the last, so they
        // have no Events of their own.
        for (const char* want : {"RemediationDrain", "RemediationRestartDriver",
                                 "RemediationValidate", "RemediationDone"}) {
          if (std::find(reasons.begin(), reasons.end(), want) == reasons.end()) {
            return absl::StrCat("no ", want, " among ", absl::StrJoin(reasons, ", "));
          }
        }
        return "";
      });
  ASSERT_TRUE(told.ok()) << told;
  // In the order the steps ran.
  auto first = [&](const char* reason) {
    return std::find(reasons.begin(), reasons.end(), reason) - reasons.begin();
  };
  EXPECT_LT(first("RemediationDrain"), first("RemediationRestartDriver"))
      << absl::StrJoin(reasons, ", ");
  EXPECT_LT(first("RemediationRestartDriver"), first("RemediationValidate"));
  EXPECT_LT(first("RemediationValidate"), first("RemediationDone"));
}

TEST_F(OperatorE2eTest, ConvergesUpgradesThroughAKillAndRemediatesAnXid) {
  absl::Time start = absl::Now();
  auto took = [&start](const char* act) {
    std::cout << "[e2e] " << act << ": " << absl::FormatDuration(absl::Now() - start) << "\n";
    start = absl::Now();
  };
  ASSERT_NO_FATAL_FAILURE(Converge());
  took("converged");
  ASSERT_NO_FATAL_FAILURE(UpgradeThroughAnOperatorKill());
  took("upgraded");
  ASSERT_NO_FATAL_FAILURE(RemediateAnXid());
  took("remediated");
}

}  // namespace
}  // namespace gpuop::test
