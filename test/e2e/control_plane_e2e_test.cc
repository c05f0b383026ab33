// End-to-end proof that the test control plane is a real Kubernetes: custom resources are
// validated by the API server, a DaemonSet's pods are created by the controller-manager, bound
// by the scheduler to a kwok node that advertises GPUs, and run there.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "test/cluster/cluster_environment.h"
#include "test/cluster/test_api.h"

namespace gpuop::test {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

class ControlPlaneE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<TestApi> api = TestApi::Connect(ClusterEnvironment::Get());
    ASSERT_TRUE(api.ok()) << api.status();
    api_.emplace(*std::move(api));
  }

  // Creates a CRD "widgets.<group>" with a schema: spec.replicas an integer in [0, 10] and
  // spec.mode one of "fast"/"safe", both required. Waits until it is Established.
  void CreateWidgetCrd(const std::string& group) {
    json crd = json::parse(R"json({
      "apiVersion": "apiextensions.k8s.io/v1",
      "kind": "CustomResourceDefinition",
      "spec": {
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                  "listKind": "WidgetList"},
        "versions": [{
          "name": "v1", "served": true, "storage": true,
          "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {"spec": {
              "type": "object",
              "required": ["replicas", "mode"],
              "properties": {
                "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                "mode": {"type": "string", "enum": ["fast", "safe"]}
              }
            }}
          }}
        }]
      }
    })json");
    crd["metadata"]["name"] = "widgets." + group;
    crd["spec"]["group"] = group;
    ASSERT_TRUE(api_->Create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd).ok());
    cleanups_.push_back("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets." + group);
    const absl::Status established =
        WaitUntil("CRD established", absl::Seconds(30), [&]() -> absl::StatusOr<bool> {
          auto got =
              api_->Get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets." + group);
          if (!got.ok()) return got.status();
          for (const auto& c : (*got)["status"].value("conditions", json::array())) {
            if (c["type"] == "Established" && c["status"] == "True") return true;
          }
          return false;
        });
    ASSERT_TRUE(established.ok()) << established;
    // Established can precede the discovery of the new resource by a moment.
    ASSERT_TRUE(WaitUntil("widgets served", absl::Seconds(30), [&]() -> absl::StatusOr<bool> {
                  auto r = api_->Request("GET", "/apis/" + group + "/v1");
                  if (!r.ok()) return r.status();
                  return r->status == 200;
                }).ok());
  }

  std::string CreateNamespace() {
    const std::string name = UniqueName("e2e");
    auto created =
        api_->Create("/api/v1/namespaces",
                     {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}});
    EXPECT_TRUE(created.ok()) << created.status();
    cleanups_.push_back("/api/v1/namespaces/" + name);
    return name;
  }

  void TearDown() override {
    for (auto it = cleanups_.rbegin(); it != cleanups_.rend(); ++it) {
      const absl::Status deleted = api_->Delete(*it);
      EXPECT_TRUE(deleted.ok()) << deleted;
    }
  }

  std::optional<TestApi> api_;
  std::vector<std::string> cleanups_;
};

TEST_F(ControlPlaneE2eTest, DaemonSetPodsRequestingGpusRunOnKwokGpuNode) {
  const std::string ns = CreateNamespace();
  const std::string group = UniqueName("w") + ".e2e.gpuop.io";
  CreateWidgetCrd(group);

  // A custom resource that satisfies the schema is stored and read back.
  const json widget = {{"apiVersion", group + "/v1"},
                       {"kind", "Widget"},
                       {"metadata", {{"name", "w1"}}},
                       {"spec", {{"replicas", 3}, {"mode", "fast"}}}};
  const std::string widgets = "/apis/" + group + "/v1/namespaces/" + ns + "/widgets";
  auto created = api_->Create(widgets, widget);
  ASSERT_TRUE(created.ok()) << created.status();
  auto read = api_->Get(widgets + "/w1");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)["spec"]["replicas"], 3);
  EXPECT_EQ((*read)["spec"]["mode"], "fast");
  EXPECT_FALSE((*read)["metadata"]["uid"].get<std::string>().empty());

  // A simulated node with 8 GPUs; kwok manages nodes with this annotation.
  const std::string node = UniqueName("gpu-node");
  json node_object = json::parse(R"json({
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
      "annotations": {"kwok.x-k8s.io/node": "fake"},
      "labels": {"kubernetes.io/os": "linux", "type": "kwok"}
    },
    "status": {
      "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"},
      "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"},
      "addresses": [{"type": "InternalIP", "address": "10.240.0.10"}]
    }
  })json");
  node_object["metadata"]["name"] = node;
  node_object["metadata"]["labels"]["kubernetes.io/hostname"] = node;
  node_object["metadata"]["labels"]["e2e.gpuop.io/node"] = node;
  auto node_created = api_->Create("/api/v1/nodes", node_object);
  ASSERT_TRUE(node_created.ok()) << node_created.status();
  cleanups_.insert(cleanups_.begin(), "/api/v1/nodes/" + node);  // Deleted last.
  EXPECT_EQ((*node_created)["status"]["capacity"]["nvidia.com/gpu"], "8");

  // A DaemonSet confined to that node whose pods each ask for one GPU.
  json daemonset = json::parse(R"json({
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "gpu-workload"},
    "spec": {
      "selector": {"matchLabels": {"app": "gpu-workload"}},
      "template": {
        "metadata": {"labels": {"app": "gpu-workload"}},
        "spec": {
          "containers": [{
            "name": "cuda",
            "image": "example.invalid/cuda:never-pulled",
            "resources": {"limits": {"nvidia.com/gpu": "1"}}
          }]
        }
      }
    }
  })json");
  daemonset["spec"]["template"]["spec"]["nodeSelector"]["e2e.gpuop.io/node"] = node;
  auto ds = api_->Create("/apis/apps/v1/namespaces/" + ns + "/daemonsets", daemonset);
  ASSERT_TRUE(ds.ok()) << ds.status();

  json pods;
  const absl::Status running =
      WaitUntil("DaemonSet pod Running", absl::Seconds(90), [&]() -> absl::StatusOr<bool> {
        auto list =
            api_->Get("/api/v1/namespaces/" + ns + "/pods?labelSelector=app%3Dgpu-workload");
        if (!list.ok()) return list.status();
        pods = (*list)["items"];
        if (pods.size() != 1) return false;
        const json& pod = pods[0];
        return pod["spec"].value("nodeName", "") == node &&
               pod["status"].value("phase", "") == "Running";
      });
  ASSERT_TRUE(running.ok()) << running << "\npods: " << pods.dump(2);

  const json& pod = pods[0];
  EXPECT_EQ(pod["spec"]["nodeName"], node);
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "1");
  bool ready = false;
  for (const auto& c : pod["status"]["conditions"]) {
    if (c["type"] == "Ready") ready = c["status"] == "True";
  }
  EXPECT_TRUE(ready) << pod["status"].dump(2);
  EXPECT_THAT(pod["status"].value("podIP", ""), ::testing::StartsWith("10.244."));

  // The DaemonSet controller sees its pod available.
  const absl::Status available =
      WaitUntil("DaemonSet available", absl::Seconds(60), [&]() -> absl::StatusOr<bool> {
        auto got = api_->Get("/apis/apps/v1/namespaces/" + ns + "/daemonsets/gpu-workload");
        if (!got.ok()) return got.status();
        const json& status = (*got)["status"];
        return status.value("desiredNumberScheduled", 0) == 1 &&
               status.value("numberAvailable", 0) == 1;
      });
  EXPECT_TRUE(available.ok()) << available;
}

TEST_F(ControlPlaneE2eTest, CustomResourceViolatingSchemaIsRejectedNamingTheField) {
  const std::string ns = CreateNamespace();
  const std::string group = UniqueName("w") + ".e2e.gpuop.io";
  CreateWidgetCrd(group);
  const std::string widgets = "/apis/" + group + "/v1/namespaces/" + ns + "/widgets";

  const json too_many = {{"apiVersion", group + "/v1"},
                         {"kind", "Widget"},
                         {"metadata", {{"name", "too-many"}}},
                         {"spec", {{"replicas", 50}, {"mode", "fast"}}}};
  auto response = api_->Request("POST", widgets, &too_many);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 422) << response->raw;
  EXPECT_EQ(response->body.value("reason", ""), "Invalid") << response->raw;
  EXPECT_THAT(response->body.value("message", ""), HasSubstr("spec.replicas")) << response->raw;
  ASSERT_TRUE(response->body["details"]["causes"].is_array()) << response->raw;
  EXPECT_EQ(response->body["details"]["causes"][0].value("field", ""), "spec.replicas")
      << response->raw;

  const json bad_mode = {{"apiVersion", group + "/v1"},
                         {"kind", "Widget"},
                         {"metadata", {{"name", "bad-mode"}}},
                         {"spec", {{"replicas", 1}, {"mode", "reckless"}}}};
  response = api_->Request("POST", widgets, &bad_mode);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 422) << response->raw;
  EXPECT_THAT(response->body.value("message", ""), HasSubstr("spec.mode")) << response->raw;

  // Nothing invalid was stored.
  auto list = api_->Get(widgets);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE((*list)["items"].empty()) << list->dump(2);
}

}  // namespace
}  // namespace gpuop::test
