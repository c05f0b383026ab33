// The operator end to end: act 1 (converge) and the test that runs the four acts in order.
#include "test/e2e/operator_e2e_test.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gpuop::test {

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
         {{"discovery", {{"enabled", false}}},  // kwok runs no container to label a node
          {"labels", {{"enabled", false}}},
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
        for (const char* ds : {"gpuop-driver-debian12", "gpuop-validator"}) {
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
  // Every operand but the driver's belongs to the policy (its uid), so the garbage collector
  // takes it with the policy; the driver's belong to nothing.
  absl::StatusOr<Json> live_policy = client_->Get(kPolicies, "", "default");
  ASSERT_TRUE(live_policy.ok()) << live_policy.status();
  const std::string policy_uid = (*live_policy)["metadata"].value("uid", "");
  std::set<std::string> names;
  for (const Json& ds : daemon_sets->items) {
    names.insert(Name(ds));
    const Json owners = ds["metadata"].value("ownerReferences", Json::array());
    if (LabelOf(ds, "app.kubernetes.io/component") == "driver") {
      EXPECT_TRUE(owners.empty()) << Name(ds);
    } else {
      ASSERT_EQ(owners.size(), 1u) << Name(ds);
      EXPECT_EQ(owners[0].value("uid", ""), policy_uid) << Name(ds);
      EXPECT_EQ(owners[0].value("kind", ""), "GPUClusterPolicy") << Name(ds);
    }
    EXPECT_EQ(ds["status"].value("desiredNumberScheduled", 0), kGpuNodeCount) << Name(ds);
    EXPECT_EQ(ds["status"].value("numberReady", 0), kGpuNodeCount) << Name(ds);
    if (Name(ds) == "gpuop-driver-debian12") {
      const std::string image = ds["spec"]["template"]["spec"]["containers"][0].value("image", "");
      EXPECT_THAT(image, ::testing::HasSubstr(kOldDriver));
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"gpuop-driver-debian12", "gpuop-validator"}));
}

TEST_F(OperatorE2eTest, ConvergesUpgradesThroughAKillRemediatesAnXidAndMovesANodeToAPool) {
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
  ASSERT_NO_FATAL_FAILURE(MoveANodeToAPool());
  took("moved a node to a pool");
}

}  // namespace gpuop::test
