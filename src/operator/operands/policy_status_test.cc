#include "operator/operands/policy_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "operator/api/node_state.h"
#include "operator/render/render.h"

namespace gpuop::op {
namespace {

using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

std::shared_ptr<const NodeEntry> GpuNode(
    const std::string& name, std::vector<std::pair<std::string, std::string>> labels = {}) {
  nlohmann::json object = {{"metadata", {{"name", name}, {"labels", {{kManagedLabel, "true"}}}}},
                           {"status", {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
  for (const auto& [k, v] : labels) object["metadata"]["labels"][k] = v;
  auto node = kube::ParseNode(object);
  EXPECT_TRUE(node.ok()) << node.status();
  return std::make_shared<NodeEntry>(NodeEntry{.node = *node});
}

std::shared_ptr<const kube::DaemonSet> Ds(const std::string& name, int desired, int ready,
                                          int updated) {
  auto ds = std::make_shared<kube::DaemonSet>();
  ds->metadata.name = name;
  ds->metadata.generation = 1;
  ds->observed_generation = 1;
  ds->desired_number_scheduled = desired;
  ds->number_ready = ready;
  ds->updated_number_scheduled = updated;
  ds->number_unavailable = desired - ready;
  return ds;
}

PolicySpec MinimalSpec() {
  PolicySpec spec;
  spec.driver.enabled = false;
  spec.components = {.labels = false,
                     .runtime = false,
                     .cdi = false,
                     .device_plugin = true,
                     .exporter = true,
                     .health = false,
                     .validator = false};
  return spec;
}

const nlohmann::json* Condition(const nlohmann::json& status, const std::string& type) {
  for (const auto& c : status["conditions"]) {
    if (c["type"] == type) return &c;
  }
  return nullptr;
}

TEST(PolicyStatusTest, AllComponentsReadyIsReadyAndStable) {
  PolicyStatusInput in{.generation = 3, .spec = MinimalSpec(), .now = kNow};
  in.nodes = {GpuNode("a"), GpuNode("b")};
  // The MPS daemons come with the device plugin and run on no node here (none is MPS-capable).
  in.daemon_sets = {Ds("gpuop-device-plugin", 2, 2, 2), Ds("gpuop-exporter", 2, 2, 2),
                    Ds("gpuop-mps-daemon", 0, 0, 0)};
  const nlohmann::json status = ComputePolicyStatus(in);
  EXPECT_EQ(status["observedGeneration"], 3);
  EXPECT_EQ(status["nodes"]["total"], 2);
  EXPECT_EQ(status["nodes"]["ready"], 2);
  EXPECT_EQ((*Condition(status, "Ready"))["status"], "True");
  EXPECT_EQ((*Condition(status, "Ready"))["reason"], "AllComponentsReady");
  EXPECT_EQ((*Condition(status, "Progressing"))["status"], "False");
  EXPECT_EQ((*Condition(status, "Degraded"))["status"], "False");
  ASSERT_EQ(status["components"].size(), 3u);
  EXPECT_EQ(status["components"][0]["name"], "device-plugin");
  EXPECT_EQ(status["components"][2]["name"], "mps-daemon");
}

TEST(PolicyStatusTest, NotReadyNamesTheComponentAndTheNodes) {
  PolicyStatusInput in{.generation = 1, .spec = MinimalSpec(), .now = kNow};
  in.nodes = {GpuNode("a"), GpuNode("b")};
  in.daemon_sets = {Ds("gpuop-device-plugin", 2, 2, 2), Ds("gpuop-exporter", 2, 1, 2)};
  in.pods = {std::make_shared<OperandPod>(OperandPod{
      .name = "gpuop-exporter-x", .node = "b", .component = "exporter", .ready = false})};
  const nlohmann::json status = ComputePolicyStatus(in);
  const nlohmann::json& ready = *Condition(status, "Ready");
  EXPECT_EQ(ready["status"], "False");
  EXPECT_EQ(ready["reason"], "ComponentNotReady");
  EXPECT_EQ(ready["message"], "exporter: 1/2 pods ready; not ready on b");
  EXPECT_EQ((*Condition(status, "Degraded"))["status"], "False");
}

TEST(PolicyStatusTest, CrashLoopingPodIsDegraded) {
  PolicyStatusInput in{.generation = 1, .spec = MinimalSpec(), .now = kNow};
  in.nodes = {GpuNode("a")};
  in.daemon_sets = {Ds("gpuop-device-plugin", 1, 0, 1), Ds("gpuop-exporter", 1, 1, 1)};
  in.pods = {std::make_shared<OperandPod>(OperandPod{.name = "gpuop-device-plugin-q",
                                                     .node = "a",
                                                     .component = "device-plugin",
                                                     .ready = false,
                                                     .restarts = 7})};
  const nlohmann::json status = ComputePolicyStatus(in);
  const nlohmann::json& degraded = *Condition(status, "Degraded");
  EXPECT_EQ(degraded["status"], "True");
  EXPECT_EQ(degraded["reason"], "ComponentFailing");
  EXPECT_THAT(degraded["message"].get<std::string>(),
              HasSubstr("pod gpuop-device-plugin-q on a: not ready, 7 restarts"));
}

TEST(PolicyStatusTest, FailedUpgradesAndStuckRemediationsAreDegraded) {
  PolicyStatusInput in{.generation = 1, .spec = MinimalSpec(), .now = kNow};
  in.daemon_sets = {Ds("gpuop-device-plugin", 3, 3, 3), Ds("gpuop-exporter", 3, 3, 3)};
  in.nodes = {GpuNode("a", {{kUpgradeStateLabel, "upgrade-failed"}}),
              GpuNode("b", {{kRemediationStateLabel, "exhausted"}}), GpuNode("c")};
  nlohmann::json status = ComputePolicyStatus(in);
  EXPECT_EQ((*Condition(status, "Degraded"))["reason"], "UpgradeFailed");
  EXPECT_THAT((*Condition(status, "Degraded"))["message"].get<std::string>(),
              HasSubstr("the driver upgrade failed on a"));
  in.nodes[0] = GpuNode("a");
  status = ComputePolicyStatus(in);
  EXPECT_EQ((*Condition(status, "Degraded"))["status"], "True");
  EXPECT_EQ((*Condition(status, "Degraded"))["reason"], "RemediationFailed");
  EXPECT_THAT((*Condition(status, "Degraded"))["message"].get<std::string>(), HasSubstr("on b"));
}

TEST(PolicyStatusTest, OutdatedDriverPodsAreADriverUpgradeInProgress) {
  PolicySpec spec = MinimalSpec();
  spec.driver.enabled = true;
  spec.driver.version = "570.86.15";
  PolicyStatusInput in{.generation = 2, .spec = spec, .now = kNow};
  in.driver_os = {{"", {"ubuntu22.04"}}};  // both nodes' gpuop.io/driver.os
  in.nodes = {GpuNode("a", {{kUpgradeStateLabel, "drain-required"}}), GpuNode("b")};
  in.daemon_sets = {Ds("gpuop-driver-ubuntu22.04", 2, 2, 1), Ds("gpuop-device-plugin", 2, 2, 2),
                    Ds("gpuop-exporter", 2, 2, 2)};
  const nlohmann::json status = ComputePolicyStatus(in);
  const nlohmann::json& progressing = *Condition(status, "Progressing");
  EXPECT_EQ(progressing["status"], "True");
  EXPECT_EQ(progressing["reason"], "DriverUpgrade");
  EXPECT_EQ(progressing["message"], "driver: 1/2 pods updated; 1 nodes upgrading");
  EXPECT_EQ(status["nodes"]["upgrading"], 1);
}

TEST(PolicyStatusTest, InvalidSpecSaysWhyAndKeepsTheLastGoodConfiguration) {
  PolicyStatusInput in{.generation = 4,
                       .spec = absl::InvalidArgumentError("spec.upgrade.maxParallel: negative"),
                       .now = kNow};
  const nlohmann::json status = ComputePolicyStatus(in);
  const nlohmann::json& degraded = *Condition(status, "Degraded");
  EXPECT_EQ(degraded["reason"], "InvalidSpec");
  EXPECT_THAT(degraded["message"].get<std::string>(),
              HasSubstr("keep their last good configuration: spec.upgrade.maxParallel: negative"));
  EXPECT_EQ((*Condition(status, "Ready"))["status"], "False");
}

TEST(PolicyStatusTest, ApplyFailureIsDegradedWithTheFirstError) {
  PolicyStatusInput in{.generation = 1, .spec = MinimalSpec(), .now = kNow};
  in.apply_errors = {"apply DaemonSet gpuop-system/gpuop-exporter: forbidden", "another"};
  const nlohmann::json status = ComputePolicyStatus(in);
  const nlohmann::json& degraded = *Condition(status, "Degraded");
  EXPECT_EQ(degraded["reason"], "ApplyFailed");
  EXPECT_EQ(degraded["message"],
            "apply DaemonSet gpuop-system/gpuop-exporter: forbidden (and 1 more failures)");
}

TEST(PolicyStatusTest, UnchangedConditionsKeepTheirTransitionTime) {
  PolicyStatusInput in{.generation = 1, .spec = MinimalSpec(), .now = kNow};
  in.nodes = {GpuNode("a")};
  in.daemon_sets = {Ds("gpuop-device-plugin", 1, 1, 1), Ds("gpuop-exporter", 1, 1, 1),
                    Ds("gpuop-mps-daemon", 0, 0, 0)};
  const nlohmann::json first = ComputePolicyStatus(in);
  in.previous_conditions = first["conditions"];
  in.now = kNow + absl::Hours(1);
  const nlohmann::json second = ComputePolicyStatus(in);
  EXPECT_EQ(second, first);
  in.daemon_sets = {Ds("gpuop-device-plugin", 1, 0, 1), Ds("gpuop-exporter", 1, 1, 1),
                    Ds("gpuop-mps-daemon", 0, 0, 0)};
  const nlohmann::json third = ComputePolicyStatus(in);
  EXPECT_NE((*Condition(third, "Ready"))["lastTransitionTime"],
            (*Condition(first, "Ready"))["lastTransitionTime"]);
}

TEST(PolicyStatusTest, DriverDaemonSetsIncludeEveryPoolWithItsOwnDriver) {
  NodePool a{.name = "a100", .driver_version = "550.1"};
  NodePool b{.name = "mig-only", .mig_layout = "all-1g.10gb"};
  PolicySpec fixed;
  fixed.driver.os_tag = "ubuntu22.04";
  EXPECT_EQ(ComponentDaemonSets(Component::kDriver, fixed, {a, b}, {}),
            (std::vector<std::string>{"gpuop-driver", "gpuop-driver-a100"}));
  EXPECT_EQ(ComponentDaemonSets(Component::kExporter, fixed, {a, b}, {}),
            std::vector<std::string>{"gpuop-exporter"});
  // Without osTag, one per OS its nodes run; a pool without nodes has none.
  const PolicySpec per_os;
  EXPECT_EQ(ComponentDaemonSets(Component::kDriver, per_os, {a, b},
                                {{"", {"rhel9.4", "ubuntu22.04"}}, {"mig-only", {"ubuntu22.04"}}}),
            (std::vector<std::string>{"gpuop-driver-rhel9.4", "gpuop-driver-ubuntu22.04"}));
}

}  // namespace
}  // namespace gpuop::op
