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
#include "operator/render/component_spec.h"
#include "operator/render/render_test_util.h"

namespace gpuop::op {
namespace {

using Json = nlohmann::json;
using render_test::DefaultPolicy;
using render_test::EnvValue;
using render_test::Find;
using render_test::Id;
using render_test::Render;
using render_test::Scenarios;

// The components that read and manage the GPUs (ComponentSpec::gpu_management).
const std::set<std::string> kGpuManagers = {"labels", "device-plugin", "health", "exporter",
                                            "power-manager"};

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
  // Those that edit the host or the GPUs beyond reading them (NVIDIA's equivalents are
  // privileged too; docs/deploy.md has the table), and, without gpuop's runtime handler, those
  // that read and manage the GPUs. Discovery reads world-readable sysfs files only.
  const std::set<std::string> privileged = {"driver",    "runtime",     "cdi",
                                            "validator", "mig-manager", "mps-daemon"};
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
      const bool managed = kGpuManagers.contains(component);
      if (managed && !render::ManagementRuntime(scenario.input.policy)) {
        EXPECT_EQ(security["privileged"], true) << scenario.name << " " << Id(o);
      } else if (!privileged.contains(component)) {
        EXPECT_FALSE(security.value("privileged", false)) << Id(o);
        EXPECT_EQ(security["capabilities"]["drop"], Json({"ALL"})) << Id(o);
        // Of all capabilities, the GPU managers get CAP_SYS_ADMIN alone, as NVIDIA's device
        // plugin and dcgm-exporter for MIG; everything else none.
        EXPECT_EQ(security["capabilities"].value("add", Json::array()),
                  managed ? Json({"SYS_ADMIN"}) : Json::array())
            << Id(o);
        EXPECT_EQ(security["readOnlyRootFilesystem"], true) << Id(o);
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
      // The driver's DaemonSets leave the policy's nodeSelector to node labelling
      // (driver_render_test.cc).
      for (const auto& [k, v] : scenario.input.policy.node_selector) {
        if (component == "driver") continue;
        EXPECT_EQ(pod["nodeSelector"][k], v) << Id(o) << ": the policy's nodeSelector";
      }
      EXPECT_EQ(o["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"],
                o["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"]);
    }
  }
}

// The value of the container's variable `name`, or nullopt when it has none.

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

// NVIDIA's mps-control-daemon: only where the labels component found MPS selected, with the
// device plugin's configurations, the MPS root at /mps and its shm as /dev/shm, and the API
// access of the configuration label only.
TEST(RenderTest, TheMpsDaemonRunsOnMpsCapableNodesWithTheMpsRoot) {
  for (const auto& scenario : Scenarios()) {
    const std::vector<Json> objects = Render(scenario.input);
    const Json* ds = Find(objects, "DaemonSet/gpuop-mps-daemon");
    if (!scenario.input.policy.components.device_plugin) {
      EXPECT_EQ(ds, nullptr) << scenario.name;
      continue;
    }
    ASSERT_NE(ds, nullptr) << scenario.name;
    const Json& pod = (*ds)["spec"]["template"]["spec"];
    EXPECT_EQ(pod["nodeSelector"]["nvidia.com/mps.capable"], "true") << scenario.name;
    EXPECT_EQ(pod["nodeSelector"]["gpuop.io/deploy.mps-daemon"], "true") << scenario.name;
    const Json& container = pod["containers"][0];
    EXPECT_EQ(container["command"][1], "mps-daemon");
    std::map<std::string, std::string> mounts;
    for (const Json& m : container["volumeMounts"]) mounts[m["mountPath"]] = m["name"];
    std::map<std::string, std::string> host_paths;
    for (const Json& v : pod["volumes"]) {
      if (v.contains("hostPath")) host_paths[v["name"]] = v["hostPath"]["path"];
    }
    EXPECT_EQ(host_paths[mounts["/mps"]], "/run/nvidia/mps");
    EXPECT_EQ(host_paths[mounts["/dev/shm"]], "/run/nvidia/mps/shm");
    EXPECT_FALSE(pod.contains("hostPID")) << "clients meet it through the pipe and shm";
    const Json* role = Find(objects, "ClusterRole/gpuop-mps-daemon");
    ASSERT_NE(role, nullptr);
    EXPECT_EQ((*role)["rules"], Json::parse(R"([{"apiGroups":[""],"resources":["nodes"],
                                               "verbs":["get","list","watch"]}])"));
  }
}

// The GPU clients start once the validator saw the driver answer; the driver, the runtime, CDI,
// the validator and discovery do not wait; without a validator nothing waits (nothing would
// write the file).
TEST(RenderTest, GpuClientsWaitForTheDriverValidationWhileAValidatorRuns) {
  const std::set<std::string> waiting = {
      "gpuop-labels",      "gpuop-device-plugin", "gpuop-health",    "gpuop-exporter",
      "gpuop-mig-manager", "gpuop-power-manager", "gpuop-mps-daemon"};
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
    Json command = {"gpuop-agent", "validate",        "--probe",
                    "--wait",      "--checks=driver", "--status-dir=/run/gpuop/validations"};
    // The GPU managers also wait for the management spec their devices come from.
    if (kGpuManagers.contains(o["metadata"]["labels"][kComponentLabel])) {
      command.push_back("--wait-file=/var/run/cdi/gpuop-management.json");
      EXPECT_EQ(init["volumeMounts"][1],
                Json({{"name", "cdi-specs"}, {"mountPath", "/var/run/cdi"}, {"readOnly", true}}))
          << name;
    }
    EXPECT_EQ(init["command"], command) << name;
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

TEST(RenderTest, TheDevicePluginAcceptsTheRenderedConfigurations) {
  const std::vector<Json> objects = Render(Scenarios()[1].input);
  const Json* cm = Find(objects, "ConfigMap/gpuop-device-plugin-config");
  ASSERT_NE(cm, nullptr);
  ASSERT_TRUE(cm->at("data").contains("pool-h100"));
  for (const auto& [name, yaml] : cm->at("data").items()) {
    auto config = agent::ParseDevicePluginConfig(yaml.get<std::string>(), name);
    ASSERT_TRUE(config.ok()) << name << ": " << config.status();
    if (name == "pool-h100") {
      ASSERT_EQ(config->sharing.size(), 1u);
      EXPECT_EQ(config->sharing[0].replicas, 4);
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

// The GPU managers get their devices through gpuop's RuntimeClass where gpuop configures the
// runtime and writes the CDI specs; nothing else names a RuntimeClass, and nothing depends on
// NVIDIA's runtime.
TEST(RenderTest, OnlyTheGpuManagersUseGpuopsRuntimeClassAndNoneTheNvidiaRuntime) {
  for (const auto& scenario : Scenarios()) {
    const bool management = render::ManagementRuntime(scenario.input.policy);
    for (const auto& o : Render(scenario.input)) {
      if (o["kind"] != "DaemonSet") continue;
      const Json& pod = o["spec"]["template"]["spec"];
      const Json& container = pod["containers"][0];
      const std::string component = o["metadata"]["labels"][kComponentLabel];
      const bool managed = management && kGpuManagers.contains(component);
      if (managed) {
        EXPECT_EQ(pod["runtimeClassName"], "gpuop") << scenario.name << " " << Id(o);
        EXPECT_EQ(EnvValue(container, "GPUOP_CDI_DEVICES"),
                  "management.gpuop.io/gpu=all,management.gpuop.io/gpu=mig-monitor")
            << Id(o);
      } else {
        EXPECT_FALSE(pod.contains("runtimeClassName")) << scenario.name << " " << Id(o);
        EXPECT_EQ(EnvValue(container, "GPUOP_CDI_DEVICES"), std::nullopt) << Id(o);
      }
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
      EXPECT_EQ(container["securityContext"].value("privileged", false), !managed) << Id(o);
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

// gpuop's own RuntimeClass, and the runtime component defining its handler, exactly when both
// the runtime and the CDI component run; without either the GPU managers are privileged.
TEST(RenderTest, GpuopsRuntimeClassNeedsTheRuntimeAndCdiComponents) {
  auto runtime_command = [](const std::vector<Json>& objects) {
    const Json* ds = Find(objects, "DaemonSet/gpuop-runtime");
    return ds == nullptr ? Json()
                         : ds->at("spec").at("template").at("spec")["containers"][0]["command"];
  };
  const std::vector<Json> defaults = Render({.policy = DefaultPolicy()});
  const Json* runtime_class = Find(defaults, "RuntimeClass/gpuop");
  ASSERT_NE(runtime_class, nullptr);
  EXPECT_EQ(runtime_class->at("handler"), "gpuop");
  EXPECT_TRUE(HasArg(Find(defaults, "DaemonSet/gpuop-runtime")
                         ->at("spec")
                         .at("template")
                         .at("spec")["containers"][0],
                     "--gpuop-runtime"));
  PolicySpec no_cdi = DefaultPolicy();
  no_cdi.components.cdi = false;
  const std::vector<Json> objects = Render({.policy = no_cdi});
  EXPECT_EQ(Find(objects, "RuntimeClass/gpuop"), nullptr);
  const Json command = runtime_command(objects);
  ASSERT_TRUE(command.is_array());
  EXPECT_EQ(std::find(command.begin(), command.end(), "--gpuop-runtime"), command.end());
  const Json* plugin = Find(objects, "DaemonSet/gpuop-device-plugin");
  ASSERT_NE(plugin, nullptr);
  EXPECT_EQ(plugin->at("spec")
                .at("template")
                .at("spec")["containers"][0]["securityContext"]["privileged"],
            true);
}

TEST(RenderTest, WithoutTheCdiComponentTheDevicePluginLeavesCdi) {
  auto plugin_command = [](const PolicySpec& policy) {
    const std::vector<Json> objects = Render({.policy = policy});
    const Json* ds = Find(objects, "DaemonSet/gpuop-device-plugin");
    return ds == nullptr ? Json()
                         : ds->at("spec").at("template").at("spec")["containers"][0]["command"];
  };
  auto has = [](const Json& command, const std::string& arg) {
    return std::find(command.begin(), command.end(), arg) != command.end();
  };
  PolicySpec policy = DefaultPolicy();
  EXPECT_FALSE(has(plugin_command(policy), "--cdi-enabled=false"));
  policy.components.cdi = false;
  const Json command = plugin_command(policy);
  ASSERT_TRUE(command.is_array());
  EXPECT_TRUE(has(command, "--cdi-enabled=false")) << command.dump();
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
