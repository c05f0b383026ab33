// The driver's DaemonSets: one per pool and OS (or kernel), the image and settings from the
// policy, the safe-load step, anti-affinity, and no owner, so the garbage collector never takes
// a driver away.
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/render/render.h"
#include "operator/render/render_test_util.h"

namespace gpuop::op {
namespace {

using Json = nlohmann::json;
using render_test::EnvValue;
using render_test::Find;
using render_test::Id;
using render_test::Render;
using render_test::Scenarios;

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
    EXPECT_FALSE(pod["affinity"].contains("nodeAffinity")) << "its nodeSelector says the OS";
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
  // One image for every node: the DaemonSet lets go of a node that gets one of its own.
  EXPECT_EQ(pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
               ["nodeSelectorTerms"][0]["matchExpressions"],
            Json::parse(R"([{"key": "gpuop.io/driver.os", "operator": "DoesNotExist"}])"));
  // The policy's nodeSelector (team=ml) is node labelling's: a node relabelled out of it keeps
  // its driver until the upgrade takes it away.
  EXPECT_FALSE(pod["nodeSelector"].contains("team"));
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

}  // namespace
}  // namespace gpuop::op
