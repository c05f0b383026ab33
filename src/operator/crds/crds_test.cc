// The embedded CRDs parse, and their defaults are the ones the C++ types assume.
#include "operator/crds/crds.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/api/policy.h"

namespace gpuop::op {
namespace {

// Applies a structural schema's defaults to `value` the way the API server does: a missing
// property with a default gets it, then defaults apply inside objects.
void ApplyDefaults(const nlohmann::json& schema, nlohmann::json& value) {
  if (!value.is_object() || !schema.contains("properties")) return;
  for (const auto& [name, property] : schema["properties"].items()) {
    if (!value.contains(name) && property.contains("default")) value[name] = property["default"];
    if (value.contains(name)) ApplyDefaults(property, value[name]);
  }
}

const nlohmann::json& Crd(const std::string& name) {
  for (const auto& crd : Crds()) {
    if (crd["metadata"]["name"] == name) return crd;
  }
  static const nlohmann::json none;
  ADD_FAILURE() << "no CRD " << name;
  return none;
}

TEST(CrdsTest, ThreeCrdsInTheGpuopGroup) {
  ASSERT_EQ(Crds().size(), 3u);
  for (const auto& crd : Crds()) {
    EXPECT_EQ(crd["kind"], "CustomResourceDefinition");
    EXPECT_EQ(crd["spec"]["group"], "gpuop.io");
    EXPECT_EQ(crd["spec"]["scope"], "Cluster");
    EXPECT_EQ(crd["spec"]["versions"][0]["name"], "v1alpha1");
    EXPECT_TRUE(crd["spec"]["versions"][0]["subresources"].contains("status"));
  }
}

TEST(CrdsTest, PolicyDefaultsAgreeWithTheParser) {
  const nlohmann::json& schema =
      Crd("gpuclusterpolicies.gpuop.io")["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
  nlohmann::json object = {{"metadata", {{"name", "default"}}},
                           {"spec", {{"driver", {{"version", "570.86.15"}}}}}};
  ApplyDefaults(schema, object);
  auto from_crd = ParseClusterPolicy(object);
  ASSERT_TRUE(from_crd.ok()) << from_crd.status();
  nlohmann::json bare = {{"metadata", {{"name", "default"}}},
                         {"spec", {{"driver", {{"version", "570.86.15"}}}}}};
  auto from_parser = ParseClusterPolicy(bare);
  ASSERT_TRUE(from_parser.ok()) << from_parser.status();
  const PolicySpec& a = from_crd->spec;
  const PolicySpec& b = from_parser->spec;
  EXPECT_EQ(a.image, b.image);
  EXPECT_EQ(a.driver.repository, b.driver.repository);
  for (Component c : kAllComponents) {
    EXPECT_EQ(a.Enabled(c), b.Enabled(c)) << ComponentName(c);
  }
  EXPECT_EQ(a.components.exporter_port, b.components.exporter_port);
  EXPECT_EQ(a.components.exporter_interval, b.components.exporter_interval);
  EXPECT_EQ(a.components.ignored_xids, b.components.ignored_xids);
  EXPECT_EQ(a.components.recover_after, b.components.recover_after);
  EXPECT_EQ(a.components.power_floor_percent, b.components.power_floor_percent);
  EXPECT_EQ(a.components.device_plugin_default_config, b.components.device_plugin_default_config);
  EXPECT_EQ(a.components.mig_strategy, b.components.mig_strategy);
  EXPECT_EQ(a.driver.os_tag, b.driver.os_tag);
  EXPECT_EQ(a.upgrade.max_parallel, b.upgrade.max_parallel);
  EXPECT_EQ(a.upgrade.max_unavailable.value, b.upgrade.max_unavailable.value);
  EXPECT_EQ(a.upgrade.max_unavailable.percent, b.upgrade.max_unavailable.percent);
  EXPECT_EQ(a.upgrade.pod_deletion_timeout, b.upgrade.pod_deletion_timeout);
  EXPECT_EQ(a.upgrade.drain_timeout, b.upgrade.drain_timeout);
  EXPECT_EQ(a.upgrade.pod_restart_timeout, b.upgrade.pod_restart_timeout);
  EXPECT_EQ(a.upgrade.validation_timeout, b.upgrade.validation_timeout);
  EXPECT_EQ(a.remediation.steps, b.remediation.steps);
  EXPECT_EQ(a.remediation.max_attempts, b.remediation.max_attempts);
  EXPECT_EQ(a.remediation.window, b.remediation.window);
  EXPECT_EQ(a.remediation.step_timeout, b.remediation.step_timeout);
  EXPECT_EQ(a.remediation.reboot_annotation, b.remediation.reboot_annotation);
}

TEST(CrdsTest, GpuNodesPrintTheFleetTable) {
  const nlohmann::json& columns =
      Crd("gpunodes.gpuop.io")["spec"]["versions"][0]["additionalPrinterColumns"];
  std::vector<std::string> names;
  for (const auto& c : columns) names.push_back(c["name"].get<std::string>());
  EXPECT_THAT(names, ::testing::ElementsAre("GPUs", "Model", "Driver", "Health", "State", "Age"));
}

}  // namespace
}  // namespace gpuop::op
