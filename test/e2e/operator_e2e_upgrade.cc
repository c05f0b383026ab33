// Act 2: a rolling driver upgrade with a PodDisruptionBudget in the way, through a SIGKILL of
// the operator.
#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "test/e2e/operator_e2e_test.h"

namespace gpuop::test {

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

  absl::StatusOr<std::string> old_revision =
      CurrentRevisionHash(*client_, ns_, "gpuop-driver-debian12");
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
        absl::StatusOr<std::string> revision =
            CurrentRevisionHash(*client_, ns_, "gpuop-driver-debian12");
        if (!revision.ok()) return revision.status();
        if (*revision == *old_revision) return "the driver DaemonSet has no new revision yet";
        new_revision = *revision;
        absl::StatusOr<std::map<std::string, Json>> driver_pods =
            OperandPods("gpuop-driver-debian12");
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
        absl::StatusOr<Json> ds =
            client_->Get(resources::kDaemonSets, ns_, "gpuop-driver-debian12");
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
  absl::StatusOr<std::map<std::string, Json>> driver_pods = OperandPods("gpuop-driver-debian12");
  ASSERT_TRUE(driver_pods.ok()) << driver_pods.status();
  for (const std::string& name : gpu_nodes_) {
    EXPECT_EQ(LabelOf((*nodes)[name], kUpgradeState), kUpgradeDone) << name;
    EXPECT_EQ(Cordoned((*nodes)[name]), name == precordoned_) << name;
    ASSERT_TRUE(driver_pods->contains(name)) << name;
    EXPECT_EQ(LabelOf((*driver_pods)[name], "controller-revision-hash"), new_revision) << name;
  }
  absl::StatusOr<Json> ds = client_->Get(resources::kDaemonSets, ns_, "gpuop-driver-debian12");
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_THAT((*ds)["spec"]["template"]["spec"]["containers"][0].value("image", ""),
              ::testing::HasSubstr(kNewDriver));
  // The operator that finished is the one started after the kill.
  absl::StatusOr<Json> lease = client_->Get(resources::kLeases, ns_, "gpuop-operator");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ((*lease)["spec"].value("holderIdentity", ""), "e2e-operator-b");
}

}  // namespace gpuop::test
