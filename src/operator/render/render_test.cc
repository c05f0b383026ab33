// The renderer is a pure function: golden files pin its output, and properties every rendering
// must have are checked on each scenario. GPUOP_UPDATE_GOLDEN=1 rewrites the golden files.
#include "operator/render/render.h"

#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "agent/deviceplugin/config.h"

namespace gpuop::op {
namespace {

using Json = nlohmann::json;

PolicySpec DefaultPolicy() {
  PolicySpec p;
  p.driver.version = "570.86.15";
  return p;
}

NodePool Pool(const char* json) {
  auto pool = ParseNodePool(Json::parse(json));
  EXPECT_TRUE(pool.ok()) << pool.status();
  return *pool;
}

struct Scenario {
  const char* name;
  RenderInput input;
};

std::vector<Scenario> Scenarios() {
  PolicySpec everything = DefaultPolicy();
  everything.components.mig_manager = true;
  everything.components.power_manager = true;
  everything.components.runtime_kind = "containerd";
  everything.image_pull_secrets = {"registry"};
  everything.node_selector = {{"team", "ml"}};
  everything.components.exporter_service_monitor = true;
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

std::vector<Json> Render(const RenderInput& input) {
  auto objects = RenderOperands(input);
  EXPECT_TRUE(objects.ok()) << objects.status();
  return objects.ok() ? *objects : std::vector<Json>{};
}

std::string Id(const Json& o) {
  return o["kind"].get<std::string>() + "/" + o["metadata"]["name"].get<std::string>();
}

const Json* Find(const std::vector<Json>& objects, const std::string& id) {
  for (const auto& o : objects) {
    if (Id(o) == id) return &o;
  }
  return nullptr;
}

TEST(RenderTest, OutputMatchesTheGoldenFiles) {
  for (const auto& scenario : Scenarios()) {
    const std::string rendered = Json(Render(scenario.input)).dump(2) + "\n";
    const std::string path = std::string(GPUOP_RENDER_TESTDATA) + "/" + scenario.name + ".json";
    if (std::getenv("GPUOP_UPDATE_GOLDEN") != nullptr) {
      std::ofstream(path) << rendered;
      continue;
    }
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << "missing golden file " << path;
    std::stringstream golden;
    golden << in.rdbuf();
    EXPECT_EQ(rendered, golden.str())
        << scenario.name << ": rerun with GPUOP_UPDATE_GOLDEN=1 if the change is meant";
  }
}

TEST(RenderTest, EveryObjectIsLabelledForPruning) {
  for (const auto& scenario : Scenarios()) {
    for (const auto& o : Render(scenario.input)) {
      EXPECT_EQ(o["metadata"]["labels"][kManagedByLabel], kManagedByValue) << Id(o);
      EXPECT_TRUE(o["metadata"]["labels"].contains(kComponentLabel)) << Id(o);
    }
  }
}

TEST(RenderTest, RbacIsLeastPrivilegeAndConsistent) {
  // Those that open GPU device nodes or edit the host (NVIDIA's equivalents are privileged
  // too; docs/deploy.md has the table). Discovery reads world-readable sysfs files only.
  const std::set<std::string> may_be_privileged = {
      "driver", "runtime",  "cdi",       "labels",      "device-plugin",
      "health", "exporter", "validator", "mig-manager", "power-manager"};
  for (const auto& scenario : Scenarios()) {
    const std::vector<Json> objects = Render(scenario.input);
    for (const auto& o : objects) {
      if (o["kind"] == "ClusterRoleBinding") {
        EXPECT_NE(Find(objects, "ClusterRole/" + o["roleRef"]["name"].get<std::string>()), nullptr);
        EXPECT_NE(Find(objects, "ServiceAccount/" + o["subjects"][0]["name"].get<std::string>()),
                  nullptr);
        EXPECT_EQ(o["subjects"][0]["namespace"], scenario.input.ns);
      }
      if (o["kind"] == "ClusterRole") {
        for (const auto& rule : o["rules"]) {
          for (const auto& verb : rule["verbs"]) {
            EXPECT_NE(verb, "*") << Id(o);
            EXPECT_NE(verb, "delete") << Id(o) << ": no agent component deletes anything";
          }
          for (const auto& resource : rule["resources"]) EXPECT_NE(resource, "secrets") << Id(o);
        }
      }
      if (o["kind"] != "DaemonSet") continue;
      const Json& pod = o["spec"]["template"]["spec"];
      const std::string component = o["metadata"]["labels"][kComponentLabel];
      ASSERT_NE(Find(objects, "ServiceAccount/" + pod["serviceAccountName"].get<std::string>()),
                nullptr)
          << Id(o);
      const bool has_role =
          Find(objects, "ClusterRole/" + pod["serviceAccountName"].get<std::string>()) != nullptr;
      EXPECT_EQ(pod["automountServiceAccountToken"], has_role) << Id(o);
      const Json& security = pod["containers"][0]["securityContext"];
      if (!may_be_privileged.contains(component)) {
        EXPECT_FALSE(security.value("privileged", false)) << Id(o);
        EXPECT_EQ(security["capabilities"]["drop"][0], "ALL") << Id(o);
        EXPECT_FALSE(pod.value("hostPID", false)) << Id(o);
      }
      if (component == "discovery") {
        EXPECT_FALSE(
            pod.value("nodeSelector", Json::object()).contains("gpuop.io/deploy.discovery"))
            << Id(o);
        EXPECT_EQ(security["runAsNonRoot"], true) << Id(o);
      } else {
        EXPECT_EQ(pod["nodeSelector"]["gpuop.io/deploy." + component], "true") << Id(o);
      }
      for (const auto& [k, v] : scenario.input.policy.node_selector) {
        EXPECT_EQ(pod["nodeSelector"][k], v) << Id(o) << ": the policy's nodeSelector";
      }
      EXPECT_EQ(o["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"],
                o["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"]);
    }
  }
}

// The value of the container's variable `name`, or nullopt when it has none.
std::optional<std::string> EnvValue(const Json& container, const std::string& name) {
  for (const auto& e : container["env"]) {
    if (e["name"] == name) return e.value("value", "");
  }
  return std::nullopt;
}

TEST(RenderTest, HostNetworkAndTheApiServerAddressReachEveryPod) {
  for (const auto& scenario : Scenarios()) {
    const PolicySpec& policy = scenario.input.policy;
    const std::vector<Json> objects = Render(scenario.input);
    int daemon_sets = 0;
    for (const auto& o : objects) {
      if (o["kind"] != "DaemonSet") continue;
      ++daemon_sets;
      const Json& pod = o["spec"]["template"]["spec"];
      const Json& container = pod["containers"][0];
      if (policy.host_network) {
        EXPECT_EQ(pod.value("hostNetwork", false), true) << scenario.name << " " << Id(o);
        EXPECT_EQ(pod.value("dnsPolicy", ""), "ClusterFirstWithHostNet") << Id(o);
      } else {
        EXPECT_FALSE(pod.contains("hostNetwork")) << scenario.name << " " << Id(o);
        EXPECT_FALSE(pod.contains("dnsPolicy")) << scenario.name << " " << Id(o);
      }
      if (container.contains("readinessProbe") && container["readinessProbe"].contains("httpGet")) {
        EXPECT_EQ(container["readinessProbe"]["httpGet"].contains("host"), policy.host_network)
            << scenario.name << " " << Id(o);
        if (policy.host_network) {
          EXPECT_EQ(container["readinessProbe"]["httpGet"]["host"], "127.0.0.1") << Id(o);
        }
      }
      // The containers that talk to the API server are those with a token.
      const bool talks = pod["automountServiceAccountToken"].get<bool>();
      const std::optional<std::string> host = EnvValue(container, "KUBERNETES_SERVICE_HOST");
      const std::optional<std::string> port = EnvValue(container, "KUBERNETES_SERVICE_PORT");
      if (policy.api_server.has_value() && talks) {
        EXPECT_EQ(host, policy.api_server->host) << scenario.name << " " << Id(o);
        EXPECT_EQ(port, absl::StrCat(policy.api_server->port)) << scenario.name << " " << Id(o);
      } else {
        EXPECT_EQ(host, std::nullopt) << scenario.name << " " << Id(o);
        EXPECT_EQ(port, std::nullopt) << scenario.name << " " << Id(o);
      }
      EXPECT_EQ(container["imagePullPolicy"], policy.image_pull_policy) << Id(o);
    }
    EXPECT_GT(daemon_sets, 0) << scenario.name;
  }
  // At least one scenario has each setting, and one the opposite.
  int with = 0;
  int without = 0;
  for (const auto& scenario : Scenarios()) {
    (scenario.input.policy.host_network && scenario.input.policy.api_server ? with : without)++;
  }
  EXPECT_GT(with, 0);
  EXPECT_GT(without, 0);
}

TEST(RenderTest, PortsOnOneNodeAreDistinct) {
  // With hostNetwork every containerPort opens on the node: no two components may share one.
  for (const auto& scenario : Scenarios()) {
    std::set<int> ports;
    for (const auto& o : Render(scenario.input)) {
      if (o["kind"] != "DaemonSet") continue;
      for (const auto& c : o["spec"]["template"]["spec"]["containers"]) {
        for (const auto& p : c.value("ports", Json::array())) {
          EXPECT_TRUE(ports.insert(p["containerPort"].get<int>()).second)
              << scenario.name << " " << Id(o) << " port " << p["containerPort"];
        }
      }
    }
  }
  const std::vector<Json> objects = Render(Scenarios()[3].input);
  const Json* exporter = Find(objects, "DaemonSet/gpuop-exporter");
  ASSERT_NE(exporter, nullptr);
  const Json& container = exporter->at("spec").at("template").at("spec").at("containers")[0];
  EXPECT_EQ(container["ports"][0]["containerPort"], 19400);
  EXPECT_THAT(container["command"].get<std::vector<std::string>>(),
              ::testing::Contains("--listen=:19400"));
}

TEST(RenderTest, TheDriverContainerTakesTheSpecsImageEnvArgsAndResources) {
  const std::vector<Json> defaults = Render(Scenarios()[0].input);
  const Json* base = Find(defaults, "DaemonSet/gpuop-driver-ubuntu22.04");
  ASSERT_NE(base, nullptr);
  const Json& plain = base->at("spec").at("template").at("spec").at("containers")[0];
  EXPECT_EQ(plain["image"], "nvcr.io/nvidia/driver:570.86.15-ubuntu22.04");
  EXPECT_EQ(plain["command"], Json({"nvidia-driver"}));
  EXPECT_EQ(plain["args"], Json({"init"}));
  EXPECT_EQ(plain["imagePullPolicy"], "IfNotPresent");
  EXPECT_EQ(plain["resources"], Json::parse(R"({"requests": {"cpu": "10m", "memory": "16Mi"}})"));
  EXPECT_EQ(EnvValue(plain, "KERNEL_MODULE_TYPE"), "auto");

  const std::vector<Json> objects = Render(Scenarios()[3].input);
  // Precompiled: <branch>-<kernel>-<os>, one DaemonSet per kernel and OS.
  for (const char* name : {"DaemonSet/gpuop-driver-5.15.0-1043-azure-ubuntu22.04",
                           "DaemonSet/gpuop-driver-h100-6.8.0-1015-aws-ubuntu24.04"}) {
    const Json* driver = Find(objects, name);
    ASSERT_NE(driver, nullptr) << name;
    const Json& c = driver->at("spec").at("template").at("spec").at("containers")[0];
    EXPECT_EQ(c["image"],
              std::string(name) == "DaemonSet/gpuop-driver-5.15.0-1043-azure-ubuntu22.04"
                  ? "nvcr.io/nvidia/driver-custom:570-5.15.0-1043-azure-ubuntu22.04"
                  : "nvcr.io/nvidia/driver-custom:580-6.8.0-1015-aws-ubuntu24.04");
    EXPECT_EQ(c["command"], Json({"nvidia-driver"}));
    EXPECT_EQ(c["args"], Json({"init", "--accept-license"}));
    EXPECT_EQ(c["imagePullPolicy"], "Never");
    EXPECT_EQ(EnvValue(c, "NODE_NAME"), "overridden") << "the spec's value replaces gpuop's";
    EXPECT_EQ(EnvValue(c, "NVIDIA_DRIVER_DEBUG"), "1");
    EXPECT_EQ(EnvValue(c, "KERNEL_MODULE_TYPE"), "open") << "spec.driver.kernelModuleType";
    EXPECT_EQ(EnvValue(c, "POD_NAME"), "");
    int node_names = 0;
    for (const auto& e : c["env"]) node_names += e["name"] == "NODE_NAME" ? 1 : 0;
    EXPECT_EQ(node_names, 1);
    EXPECT_EQ(c["resources"],
              Json::parse(R"({"requests": {"cpu": "1"}, "limits": {"memory": "4Gi"}})"));
  }
  // Only the driver takes them.
  const Json* plugin = Find(objects, "DaemonSet/gpuop-device-plugin");
  ASSERT_NE(plugin, nullptr);
  const Json& c = plugin->at("spec").at("template").at("spec").at("containers")[0];
  EXPECT_EQ(EnvValue(c, "NVIDIA_DRIVER_DEBUG"), std::nullopt);
  EXPECT_FALSE(c.contains("args"));
}

TEST(RenderTest, DisabledComponentsAreNotRendered) {
  const std::vector<Json> minimal = Render(Scenarios()[2].input);
  EXPECT_EQ(Find(minimal, "DaemonSet/gpuop-driver"), nullptr);
  EXPECT_EQ(Find(minimal, "DaemonSet/gpuop-exporter"), nullptr);
  EXPECT_EQ(Find(minimal, "RuntimeClass/nvidia"), nullptr);
  EXPECT_EQ(Find(minimal, "ConfigMap/gpuop-device-plugin-config"), nullptr)
      << "the policy names its own configurations";
  const Json* plugin = Find(minimal, "DaemonSet/gpuop-device-plugin");
  ASSERT_NE(plugin, nullptr);
  EXPECT_FALSE(plugin->at("spec").at("template").at("spec").contains("runtimeClassName"));
  bool mounts_user_config = false;
  for (const auto& v : plugin->at("spec").at("template").at("spec").at("volumes")) {
    if (v.contains("configMap") && v["configMap"]["name"] == "my-plugin-configs") {
      mounts_user_config = true;
    }
  }
  EXPECT_TRUE(mounts_user_config);
}

// The GPU clients start once the validator saw the driver answer; the driver, the runtime, CDI,
// the validator and discovery do not wait; without a validator nothing waits (nothing would
// write the file).
TEST(RenderTest, GpuClientsWaitForTheDriverValidationWhileAValidatorRuns) {
  const std::set<std::string> waiting = {"gpuop-labels",      "gpuop-device-plugin",
                                         "gpuop-health",      "gpuop-exporter",
                                         "gpuop-mig-manager", "gpuop-power-manager"};
  std::set<std::string> seen;
  for (const Json& o : Render(Scenarios()[1].input)) {
    if (o["kind"] != "DaemonSet") continue;
    const std::string name = o["metadata"]["name"];
    const Json& pod = o["spec"]["template"]["spec"];
    const bool waits =
        pod.contains("initContainers") && pod["initContainers"][0]["name"] == "wait-for-driver";
    EXPECT_EQ(waits, waiting.contains(name)) << name;
    if (!waits) continue;
    seen.insert(name);
    const Json& init = pod["initContainers"][0];
    EXPECT_EQ(init["command"], Json({"gpuop-agent", "validate", "--probe", "--wait",
                                     "--checks=driver", "--status-dir=/run/gpuop/validations"}));
    EXPECT_EQ(init["volumeMounts"][0]["mountPath"], "/run/gpuop") << name;
    EXPECT_FALSE(init["securityContext"].contains("privileged")) << name;
    EXPECT_EQ(init["securityContext"]["capabilities"]["drop"], Json({"ALL"})) << name;
    bool has_volume = false;
    for (const Json& v : pod["volumes"]) has_volume = has_volume || v["name"] == "run-gpuop";
    EXPECT_TRUE(has_volume) << name;
  }
  EXPECT_EQ(seen, waiting) << "the scenario enables every component";
  RenderInput no_validator = Scenarios()[1].input;
  no_validator.policy.components.validator = false;
  for (const Json& o : Render(no_validator)) {
    if (o["kind"] != "DaemonSet") continue;
    for (const Json& init : o["spec"]["template"]["spec"].value("initContainers", Json::array())) {
      EXPECT_NE(init["name"], "wait-for-driver") << Id(o);
    }
  }
}

// The driver pod's first step waits for a safe load (agent/driver/safe_load.h): gpuop's image,
// unprivileged, the driver root read-only with the host's later mounts visible, and the RBAC to
// read and annotate its Node.
TEST(RenderTest, DriverPodsLoadOnlyOnceTheNodeIsSafe) {
  const std::vector<Json> objects = Render(Scenarios()[1].input);
  for (const char* name : {"DaemonSet/gpuop-driver", "DaemonSet/gpuop-driver-h100"}) {
    const Json* ds = Find(objects, name);
    ASSERT_NE(ds, nullptr) << name;
    const Json& pod = ds->at("spec").at("template").at("spec");
    ASSERT_EQ(pod["initContainers"].size(), 1u) << name;
    const Json& init = pod["initContainers"][0];
    EXPECT_EQ(init["name"], "safe-load");
    EXPECT_EQ(init["image"], Scenarios()[1].input.policy.image);
    EXPECT_EQ(init["command"], Json({"gpuop-agent", "driver-safe-load"}));
    EXPECT_EQ(init["securityContext"]["capabilities"]["drop"], Json({"ALL"}));
    EXPECT_EQ(init["volumeMounts"][0]["mountPath"], "/run/nvidia");
    EXPECT_EQ(init["volumeMounts"][0]["readOnly"], true);
    EXPECT_EQ(init["volumeMounts"][0]["mountPropagation"], "HostToContainer");
    std::set<std::string> env;
    for (const Json& e : init["env"]) env.insert(e["name"].get<std::string>());
    EXPECT_TRUE(env.contains("NODE_NAME") && env.contains("POD_NAME")) << name;
    EXPECT_EQ(pod["serviceAccountName"], "gpuop-driver");
    EXPECT_EQ(pod["automountServiceAccountToken"], true);
  }
  const Json* role = Find(objects, "ClusterRole/gpuop-driver");
  ASSERT_NE(role, nullptr);
  EXPECT_EQ(role->at("rules"),
            Json::parse(R"([{"apiGroups":[""],"resources":["nodes"],"verbs":["get","patch"]}])"));
}

// Everything but the driver belongs to the policy, so the garbage collector takes it with the
// policy; the driver's objects belong to nothing, so it never takes a driver away.
TEST(RenderTest, OperandsButTheDriversAreOwnedByThePolicy) {
  RenderInput input = Scenarios()[1].input;
  input.policy_uid = "0b5e8d7c-1111-4222-8333-944455556666";
  int owned = 0;
  for (const Json& o : Render(input)) {
    const Json& meta = o["metadata"];
    if (meta["labels"]["app.kubernetes.io/component"] == "driver") {
      EXPECT_FALSE(meta.contains("ownerReferences")) << Id(o);
      continue;
    }
    ASSERT_TRUE(meta.contains("ownerReferences")) << Id(o);
    EXPECT_EQ(meta["ownerReferences"],
              Json::parse(R"([{"apiVersion":"gpuop.io/v1alpha1","kind":"GPUClusterPolicy",
                "name":"default","uid":"0b5e8d7c-1111-4222-8333-944455556666",
                "controller":true,"blockOwnerDeletion":false}])"))
        << Id(o);
    ++owned;
  }
  EXPECT_GT(owned, 20);
  for (const Json& o : Render(Scenarios()[1].input)) {
    EXPECT_FALSE(o["metadata"].contains("ownerReferences")) << "no uid, no owner: " << Id(o);
  }
}

// Without driver.osTag each OS among the nodes gets its DaemonSet, selecting gpuop.io/driver.os
// and running <version>-<os>, as NVIDIA's operator runs one per OS; a pool without nodes has none.
TEST(RenderTest, TheDriverImageFollowsEachNodesOs) {
  RenderInput input = Scenarios()[0].input;
  input.driver_os = {{"", {"rhel9.4", "ubuntu22.04"}}, {"no-such-pool", {"ubuntu24.04"}}};
  std::vector<std::string> names;
  for (const Json& o : Render(input)) {
    if (o["kind"] != "DaemonSet" ||
        o["metadata"]["labels"]["app.kubernetes.io/component"] != "driver") {
      continue;
    }
    names.push_back(o["metadata"]["name"]);
    const Json& pod = o["spec"]["template"]["spec"];
    const std::string os = pod["nodeSelector"]["gpuop.io/driver.os"];
    EXPECT_EQ(pod["containers"][0]["image"], "nvcr.io/nvidia/driver:570.86.15-" + os);
    EXPECT_EQ(o["metadata"]["name"], "gpuop-driver-" + os);
  }
  EXPECT_THAT(names, ::testing::ElementsAre("gpuop-driver-rhel9.4", "gpuop-driver-ubuntu22.04"));
  input.driver_os.clear();
  for (const Json& o : Render(input)) {
    EXPECT_NE(o["metadata"]["labels"]["app.kubernetes.io/component"].get<std::string>() +
                  o["kind"].get<std::string>(),
              "driverDaemonSet")
        << "no node, no driver DaemonSet";
  }
}

TEST(RenderTest, DriverDaemonSetNamesFitALabelValue) {
  EXPECT_EQ(DriverDaemonSetName(""), "gpuop-driver");
  EXPECT_EQ(DriverDaemonSetName("h100", "RHCOS4.14_x"), "gpuop-driver-h100-rhcos4.14-x");
  const std::string name =
      DriverDaemonSetName("a-rather-long-pool-name", "5.15.0-1043-azure-fips-ubuntu22.04");
  EXPECT_EQ(name.size(), 63u);
  EXPECT_EQ(name,
            DriverDaemonSetName("a-rather-long-pool-name", "5.15.0-1043-azure-fips-ubuntu22.04"));
  EXPECT_NE(name,
            DriverDaemonSetName("a-rather-long-pool-name", "5.15.0-1044-azure-fips-ubuntu22.04"));
  EXPECT_EQ(DriverDaemonSetOfLabels("default", "ubuntu22.04"), "gpuop-driver-ubuntu22.04");
}

TEST(RenderTest, EachPoolWithItsOwnDriverGetsAnOnDeleteDaemonSet) {
  const std::vector<Json> objects = Render(Scenarios()[1].input);
  const Json* pool = Find(objects, "DaemonSet/gpuop-driver-h100");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->at("spec").at("updateStrategy").at("type"), "OnDelete");
  const Json& pod = pool->at("spec").at("template").at("spec");
  EXPECT_EQ(pod["containers"][0]["image"], "nvcr.io/nvidia/driver:580.65.06-ubuntu22.04");
  EXPECT_EQ(pod["nodeSelector"]["gpuop.io/driver.pool"], "h100");
  EXPECT_EQ(pod["nodeSelector"]["team"], "ml");
  const Json* base = Find(objects, "DaemonSet/gpuop-driver");
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(
      base->at("spec").at("template").at("spec").at("nodeSelector").at("gpuop.io/driver.pool"),
      "default");
  EXPECT_EQ(Find(objects, "DaemonSet/gpuop-driver-a100"), nullptr) << "a100 sets no driver";
  // Every driver DaemonSet keeps away from any other driver pod on the node.
  for (const Json* ds : {pool, base}) {
    const Json& terms =
        ds->at("spec")
            .at("template")
            .at("spec")
            .at("affinity")
            .at("podAntiAffinity")["requiredDuringSchedulingIgnoredDuringExecution"];
    ASSERT_EQ(terms.size(), 1u);
    EXPECT_EQ(terms[0]["topologyKey"], "kubernetes.io/hostname");
    EXPECT_EQ(terms[0]["labelSelector"]["matchLabels"]["app.kubernetes.io/component"], "driver");
  }
}

TEST(RenderTest, TheDevicePluginAcceptsTheRenderedConfigurations) {
  const std::vector<Json> objects = Render(Scenarios()[1].input);
  const Json* cm = Find(objects, "ConfigMap/gpuop-device-plugin-config");
  ASSERT_NE(cm, nullptr);
  ASSERT_TRUE(cm->at("data").contains("pool-h100"));
  for (const auto& [name, yaml] : cm->at("data").items()) {
    auto config = agent::ParseDevicePluginConfig(yaml.get<std::string>(), name);
    ASSERT_TRUE(config.ok()) << name << ": " << config.status();
    if (name == "pool-h100") {
      ASSERT_EQ(config->time_slicing.size(), 1u);
      EXPECT_EQ(config->time_slicing[0].replicas, 4);
      EXPECT_TRUE(config->rename_by_default) << "the pool's renameByDefault";
    }
    EXPECT_EQ(config->mig_strategy, agent::MigStrategy::kSingle);
  }
}

// The mount named `name` of the pod, with its volume: {volumeMount, volume}.
std::pair<Json, Json> MountOf(const Json& pod, const std::string& name) {
  Json mount;
  Json volume;
  for (const auto& m : pod["containers"][0]["volumeMounts"]) {
    if (m["name"] == name) mount = m;
  }
  for (const auto& v : pod["volumes"]) {
    if (v["name"] == name) volume = v;
  }
  return {mount, volume};
}

bool HasArg(const Json& container, const std::string& arg) {
  for (const auto& a : container["command"]) {
    if (a == arg) return true;
  }
  return false;
}

TEST(RenderTest, NoComponentDependsOnARuntimeClassOrTheNvidiaRuntime) {
  for (const auto& scenario : Scenarios()) {
    for (const auto& o : Render(scenario.input)) {
      if (o["kind"] != "DaemonSet") continue;
      const Json& pod = o["spec"]["template"]["spec"];
      const Json& container = pod["containers"][0];
      const std::string component = o["metadata"]["labels"][kComponentLabel];
      EXPECT_FALSE(pod.contains("runtimeClassName")) << scenario.name << " " << Id(o);
      // Only the NVIDIA runtime reads these; on a node whose default runtime is nvidia they
      // would make the container fail while no driver is loaded.
      EXPECT_EQ(EnvValue(container, "NVIDIA_VISIBLE_DEVICES"), std::nullopt) << Id(o);
      EXPECT_EQ(EnvValue(container, "NVIDIA_DRIVER_CAPABILITIES"), std::nullopt) << Id(o);
      for (const auto& v : pod["volumes"]) {
        if (!v.contains("hostPath")) continue;
        // /run/nvidia is created on the host by the driver alone, so that AMD nodes and nodes
        // with a host driver get no NVIDIA paths.
        if (v["hostPath"]["path"] == "/run/nvidia") {
          EXPECT_EQ(component, "driver") << Id(o);
        }
      }
      if (component == "driver" || component == "runtime" || component == "discovery") continue;
      // The others find the driver under the host's root, mounted so that a restarted driver
      // container's new root shows up.
      const auto [mount, volume] = MountOf(pod, "host-root");
      ASSERT_FALSE(mount.is_null()) << scenario.name << " " << Id(o);
      EXPECT_EQ(volume["hostPath"]["path"], "/") << Id(o);
      EXPECT_EQ(mount["mountPath"], "/host") << Id(o);
      EXPECT_EQ(mount["readOnly"], true) << Id(o);
      EXPECT_EQ(mount["mountPropagation"], "HostToContainer") << Id(o);
      EXPECT_TRUE(HasArg(container, "--host-root=/host")) << Id(o);
      EXPECT_EQ(container["securityContext"]["privileged"], true) << Id(o);
    }
  }
}

TEST(RenderTest, TheRuntimeClassOnlyWithTheRuntimeComponent) {
  const std::vector<Json> defaults = Render(Scenarios()[0].input);
  const Json* runtime_class = Find(defaults, "RuntimeClass/nvidia");
  ASSERT_NE(runtime_class, nullptr);
  EXPECT_EQ(runtime_class->at("handler"), "nvidia");
  EXPECT_EQ(runtime_class->at("metadata").at("labels").at(kManagedByLabel), kManagedByValue);
  EXPECT_EQ(Find(Render(Scenarios()[2].input), "RuntimeClass/nvidia"), nullptr);
  PolicySpec no_runtime = DefaultPolicy();
  no_runtime.components.runtime = false;
  for (const auto& o : Render({.policy = no_runtime})) {
    EXPECT_NE(o["kind"], "RuntimeClass") << Id(o);
  }
}

TEST(RenderTest, DiscoveryRunsOnUnknownLinuxNodesAndReadsOnlySysfsAndOsRelease) {
  const std::vector<Json> objects = Render(Scenarios()[1].input);
  const Json* ds = Find(objects, "DaemonSet/gpuop-discovery");
  ASSERT_NE(ds, nullptr);
  const Json& pod = ds->at("spec").at("template").at("spec");
  const Json& container = pod["containers"][0];
  EXPECT_EQ(pod["nodeSelector"], Json({{"team", "ml"}}));
  const Json& terms = pod["affinity"]["nodeAffinity"]
                         ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 1u) << "one term: its expressions are ANDed";
  EXPECT_EQ(terms[0]["matchExpressions"], Json::parse(R"([
      {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
      {"key": "gpuop.io/gpu.present", "operator": "DoesNotExist"}])"));
  EXPECT_EQ(container["command"], Json({"gpuop-agent", "discover-pci", "--sysfs-root=/host/sys",
                                        "--os-release=/host/etc/os-release", "--label-node"}));
  ASSERT_EQ(pod["volumes"].size(), 2u);
  EXPECT_EQ(pod["volumes"][0], Json::parse(R"({"name": "host-sys",
      "hostPath": {"path": "/sys", "type": "Directory"}})"));
  EXPECT_EQ(pod["volumes"][1], Json::parse(R"({"name": "host-os-release",
      "hostPath": {"path": "/etc/os-release", "type": "File"}})"));
  EXPECT_EQ(container["volumeMounts"], Json::parse(R"([{"name": "host-sys",
      "mountPath": "/host/sys", "readOnly": true}, {"name": "host-os-release",
      "mountPath": "/host/etc/os-release", "readOnly": true}])"));
  EXPECT_EQ(container["securityContext"]["readOnlyRootFilesystem"], true);
  EXPECT_EQ(container["securityContext"]["runAsUser"], 65532);
  EXPECT_EQ(container["resources"]["limits"]["memory"], "64Mi");
  // The tolerations of every component: GPU nodes are often tainted.
  EXPECT_EQ(pod["tolerations"], Find(objects, "DaemonSet/gpuop-device-plugin")
                                    ->at("spec")
                                    .at("template")
                                    .at("spec")
                                    .at("tolerations"));
  const Json* role = Find(objects, "ClusterRole/gpuop-discovery");
  ASSERT_NE(role, nullptr);
  EXPECT_EQ(role->at("rules"), Json::parse(R"([{"apiGroups": [""], "resources": ["nodes"],
      "verbs": ["get", "patch"]}])"));
  ASSERT_NE(Find(objects, "ClusterRoleBinding/gpuop-discovery"), nullptr);
  EXPECT_EQ(Find(objects, "ServiceAccount/gpuop-discovery")->at("automountServiceAccountToken"),
            true);

  // hostNetwork and the API server's address, like every component.
  const std::vector<Json> host = Render(Scenarios()[3].input);
  const Json& host_pod =
      Find(host, "DaemonSet/gpuop-discovery")->at("spec").at("template").at("spec");
  EXPECT_EQ(host_pod["hostNetwork"], true);
  EXPECT_EQ(EnvValue(host_pod["containers"][0], "KUBERNETES_SERVICE_HOST"), "127.0.0.1");

  // Off with its switch.
  EXPECT_EQ(Find(Render(Scenarios()[2].input), "DaemonSet/gpuop-discovery"), nullptr);
  EXPECT_EQ(Find(Render(Scenarios()[2].input), "ClusterRole/gpuop-discovery"), nullptr);
}

}  // namespace
}  // namespace gpuop::op
