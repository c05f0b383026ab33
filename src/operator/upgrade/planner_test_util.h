#ifndef GPUOP_OPERATOR_UPGRADE_PLANNER_TEST_UTIL_H_
#define GPUOP_OPERATOR_UPGRADE_PLANNER_TEST_UTIL_H_

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "operator/upgrade/planner.h"

// Snapshots for the planner's tests.
namespace gpuop::op::upgrade::testing {

inline const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);

// A managed GPU node whose driver pod is current ("new") and Ready, validated, in `state`,
// which it entered a minute ago.
inline NodeSnapshot Gpu(const std::string& name, const std::string& state = "") {
  return NodeSnapshot{.name = name,
                      .uid = "uid-" + name,
                      .state_label = state,
                      .ready = true,
                      .since = kNow - absl::Minutes(1),
                      .driver_daemon_set = "gpuop-driver",
                      .update_revision = "new",
                      .driver_pod = DriverPod{.ns = "gpuop-system",
                                              .name = "driver-" + name,
                                              .owner = "gpuop-driver",
                                              .revision = "new",
                                              .ready = true},
                      .validator_ready = true,
                      .pods_listed = true};
}

inline NodeSnapshot Outdated(NodeSnapshot n) {
  n.driver_pod->revision = "old";
  return n;
}

inline PodInfo Pod(const std::string& name) {
  return PodInfo{
      .ns = "work", .name = name, .uid = "uid-" + name, .phase = "Running", .controlled = true};
}
inline PodInfo GpuPod(const std::string& name) {
  PodInfo p = Pod(name);
  p.uses_gpu = true;
  return p;
}
inline PodInfo WithLabels(PodInfo p, std::map<std::string, std::string> labels) {
  p.labels = kube::Labels(labels);
  return p;
}

inline UpgradeSpec Spec() {
  UpgradeSpec spec;
  spec.max_parallel = 0;
  spec.max_unavailable = {.value = 100, .percent = true};
  return spec;
}

inline NodePlan PlanOne(const NodeSnapshot& node, const UpgradeSpec& spec = Spec(),
                        bool validation = true) {
  UpgradePlan plan = Plan({.nodes = {node}, .validation_enabled = validation}, spec, kNow);
  EXPECT_EQ(plan.nodes.size(), 1u);
  return plan.nodes.front();
}

inline std::vector<std::string> PodNames(const NodePlan& p) {
  std::vector<std::string> out;
  for (const PodRef& r : p.pods) out.push_back(r.name);
  return out;
}

// One rule of the state machine: a node, a spec, and what the plan must say.

}  // namespace gpuop::op::upgrade::testing

#endif  // GPUOP_OPERATOR_UPGRADE_PLANNER_TEST_UTIL_H_
