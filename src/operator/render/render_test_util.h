#ifndef GPUOP_OPERATOR_RENDER_RENDER_TEST_UTIL_H_
#define GPUOP_OPERATOR_RENDER_RENDER_TEST_UTIL_H_

// The render tests' scenarios (each has a golden file in testdata/) and readers of what was
// rendered.

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "operator/render/render.h"

namespace gpuop::op::render_test {

using Json = nlohmann::json;

inline PolicySpec DefaultPolicy() {
  PolicySpec p;
  p.driver.version = "570.86.15";
  return p;
}

inline NodePool Pool(const char* json) {
  auto pool = ParseNodePool(Json::parse(json));
  EXPECT_TRUE(pool.ok()) << pool.status();
  return *pool;
}

struct Scenario {
  const char* name;
  RenderInput input;
};

inline std::vector<Scenario> Scenarios() {
  PolicySpec everything = DefaultPolicy();
  everything.components.mig_manager = true;
  everything.components.mig_with_reboot = true;
  everything.components.power_manager = true;
  everything.components.runtime_kind = "containerd";
  everything.image_pull_secrets = {"registry"};
  everything.node_selector = {{"team", "ml"}};
  everything.components.exporter_service_monitor = true;
  everything.components.exporter_virtual_gpus = true;
  everything.components.exporter_scrape_interval = absl::Seconds(90);
  everything.components.exporter_service_monitor_labels = {{"release", "prometheus"}};
  everything.driver.os_tag = "ubuntu22.04";  // one driver image for every node
  std::vector<NodePool> pools = {
      Pool(R"({"metadata": {"name": "a100"}, "spec": {"nodeSelector": {"matchLabels":
              {"gpu": "a100"}}, "migLayout": "all-balanced"}})"),
      Pool(R"({"metadata": {"name": "h100"}, "spec": {"nodeSelector": {"matchLabels":
              {"gpu": "h100"}}, "driver": {"version": "580.65.06"},
              "timeSlicing": {"replicas": 4, "renameByDefault": true}}})")};
  PolicySpec minimal = DefaultPolicy();
  minimal.driver.enabled = false;
  minimal.components.runtime = false;
  minimal.components.cdi = false;
  minimal.components.exporter = false;
  minimal.components.validator = false;
  minimal.components.labels = false;
  minimal.components.discovery = false;
  minimal.components.device_plugin_config = "my-plugin-configs";
  // No pod network, no kube-proxy: the node test's cluster.
  PolicySpec host_network = DefaultPolicy();
  host_network.host_network = true;
  host_network.api_server = ApiServerSpec{.host = "127.0.0.1", .port = 6443};
  host_network.image_pull_policy = "Never";
  host_network.components.exporter_port = 19400;
  host_network.driver.image = "driver-custom";
  host_network.driver.env = {{"NODE_NAME", "overridden"}, {"NVIDIA_DRIVER_DEBUG", "1"}};
  host_network.driver.args = {"init", "--accept-license"};
  host_network.driver.kernel_module_type = "open";
  host_network.driver.resources =
      ResourceRequirements{.requests = {{"cpu", "1"}}, .limits = {{"memory", "4Gi"}}};
  host_network.driver.use_precompiled = true;  // one image per kernel and OS
  // Without osTag the driver image follows each node's OS (gpuop.io/driver.os).
  return {{"default", {.policy = DefaultPolicy(), .driver_os = {{"", {"ubuntu22.04"}}}}},
          {"pools", {.policy = everything, .pools = pools, .ns = "gpu-operators"}},
          {"minimal", {.policy = minimal}},
          {"hostnetwork",
           {.policy = host_network,
            .pools = pools,
            .driver_os = {{"", {"5.15.0-1043-azure-ubuntu22.04"}},
                          {"h100", {"6.8.0-1015-aws-ubuntu24.04"}}}}}};
}

inline std::vector<Json> Render(const RenderInput& input) {
  auto objects = RenderOperands(input);
  EXPECT_TRUE(objects.ok()) << objects.status();
  return objects.ok() ? *objects : std::vector<Json>{};
}

inline std::string Id(const Json& o) {
  return o["kind"].get<std::string>() + "/" + o["metadata"]["name"].get<std::string>();
}

inline const Json* Find(const std::vector<Json>& objects, const std::string& id) {
  for (const auto& o : objects) {
    if (Id(o) == id) return &o;
  }
  return nullptr;
}

inline std::optional<std::string> EnvValue(const Json& container, const std::string& name) {
  for (const auto& e : container["env"]) {
    if (e["name"] == name) return e.value("value", "");
  }
  return std::nullopt;
}

}  // namespace gpuop::op::render_test

#endif  // GPUOP_OPERATOR_RENDER_RENDER_TEST_UTIL_H_
