// The exporter's Service and ServiceMonitor, checked against what Prometheus needs of them: a
// headless Service whose named port selects the exporter pods, and a ServiceMonitor that selects
// that Service in the operator's namespace.
#include "operator/render/monitoring.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/render/render.h"

namespace gpuop::op::render {
namespace {

using Json = nlohmann::json;

const Json kLabels = {{"app.kubernetes.io/managed-by", "gpuop-operator"},
                      {"app.kubernetes.io/component", "exporter"},
                      {"app.kubernetes.io/part-of", "gpuop"},
                      {"app.kubernetes.io/name", "gpuop-exporter"}};

TEST(MonitoringTest, AHeadlessServiceSelectsTheExporterPodsOnTheirPort) {
  PolicySpec policy;
  policy.components.exporter_port = 19400;
  const std::vector<Json> objects = ExporterMonitoring(policy, "gpu", kLabels);
  ASSERT_EQ(objects.size(), 1u) << "no ServiceMonitor unless asked for";
  const Json& service = objects[0];
  EXPECT_EQ(service["kind"], "Service");
  EXPECT_EQ(service["metadata"]["namespace"], "gpu");
  EXPECT_EQ(service["spec"]["clusterIP"], "None");
  EXPECT_EQ(service["spec"]["selector"], (Json{{"app.kubernetes.io/name", "gpuop-exporter"}}));
  EXPECT_EQ(service["spec"]["ports"][0]["name"], "metrics");
  EXPECT_EQ(service["spec"]["ports"][0]["port"], 19400);
  EXPECT_EQ(service["spec"]["ports"][0]["targetPort"], 19400);
}

TEST(MonitoringTest, TheServiceMonitorScrapesTheServicesPortAtTheIntervalAsked) {
  PolicySpec policy;
  policy.components.exporter_service_monitor = true;
  policy.components.exporter_interval = absl::Seconds(15);
  policy.components.exporter_service_monitor_labels = {
      {"release", "prometheus"}, {"app.kubernetes.io/managed-by", "someone-else"}};
  std::vector<Json> objects = ExporterMonitoring(policy, "gpu", kLabels);
  ASSERT_EQ(objects.size(), 2u);
  const Json& monitor = objects[1];
  EXPECT_EQ(monitor["apiVersion"], "monitoring.coreos.com/v1");
  EXPECT_EQ(monitor["kind"], "ServiceMonitor");
  EXPECT_EQ(monitor["metadata"]["labels"]["release"], "prometheus");
  EXPECT_EQ(monitor["metadata"]["labels"]["app.kubernetes.io/managed-by"], "gpuop-operator")
      << "the operator's own labels win: pruning finds the object by them";
  EXPECT_EQ(monitor["spec"]["selector"]["matchLabels"], objects[0]["spec"]["selector"]);
  EXPECT_EQ(monitor["spec"]["namespaceSelector"]["matchNames"], (Json{"gpu"}));
  EXPECT_EQ(monitor["spec"]["endpoints"][0]["port"], "metrics");
  EXPECT_EQ(monitor["spec"]["endpoints"][0]["interval"], "15s") << "the sampling interval";

  policy.components.exporter_scrape_interval = absl::Seconds(90);
  objects = ExporterMonitoring(policy, "gpu", kLabels);
  EXPECT_EQ(objects[1]["spec"]["endpoints"][0]["interval"], "1m30s");
}

TEST(MonitoringTest, RenderedWithTheExporterOnly) {
  PolicySpec policy;
  policy.driver.version = "570.86.15";
  auto with = RenderOperands({.policy = policy});
  ASSERT_TRUE(with.ok()) << with.status();
  auto service = [](const std::vector<Json>& objects) {
    return std::count_if(objects.begin(), objects.end(),
                         [](const Json& o) { return o["kind"] == "Service"; });
  };
  EXPECT_EQ(service(*with), 1);
  policy.components.exporter = false;
  auto without = RenderOperands({.policy = policy});
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_EQ(service(*without), 0);
}

}  // namespace
}  // namespace gpuop::op::render
