// The node tier: gpuop installed with its Helm chart onto a real node (kubelet, containerd and
// runc of the `node` profile), its own image run as real containers, a simulated NVIDIA driver
// container (SIMULATED: the fake NVML with 8 x H100) providing the driver, and a user pod using
// two GPUs through the real kubelet's device manager.
//
// The tests run in order and build on each other, as a person installing gpuop would: install,
// the operator runs, the node is found, the components run, GPUs become allocatable, a pod gets
// two of them, the kubelet and containerd restart, the chart is uninstalled. A step whose
// prerequisite failed is skipped, naming it.
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "agent/podresources/pod_resources.h"
#include "test/cluster/cluster_environment.h"
#include "test/cluster/test_api.h"
#include "test/e2e/operator_e2e_util.h"
#include "test/node/node_e2e_util.h"

namespace gpuop::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kNamespace[] = "gpuop-system";
constexpr char kWorkloads[] = "default";
constexpr char kProbePod[] = "gpu-probe";
constexpr char kGpuImage[] = "localhost/gpuop:0.1.0";
constexpr char kProbeImage[] = "localhost/gpu-probe:1";
constexpr char kDriverImage[] = "localhost/simulated/driver:570.86.15-debian12";
// The components the default policy enables, as DaemonSets gpuop-<name>.
const std::vector<std::string> kComponents = {"driver",        "runtime", "cdi",      "labels",
                                              "device-plugin", "health",  "exporter", "validator"};

ControlPlane& Cluster() { return ClusterEnvironment::Get(); }

std::string Tool(const std::string& name) { return (Cluster().bin_dir() / name).string(); }

std::vector<std::string> KubeEnv() {
  return {absl::StrCat("KUBECONFIG=", Cluster().kubeconfig().string()), "HOME=/tmp"};
}

// What the earlier steps established; later steps need it.
struct State {
  bool images = false;
  bool installed = false;
  bool operator_running = false;
  bool allocatable = false;
  bool probe_running = false;
  std::map<std::string, std::string> containerd_before;  // /etc/containerd before the install
  std::map<std::string, std::string> cdi_before;         // /etc/cdi and /var/run/cdi
  absl::Time node_ready_at;
};
State& S() {
  static State state;
  return state;
}

std::map<std::string, std::string> CdiSnapshot() {
  std::map<std::string, std::string> all;
  for (const auto& [path, text] : SnapshotTree(Cluster().node().etc_cdi))
    all["etc/cdi/" + path] = text;
  for (const auto& [path, text] : SnapshotTree(Cluster().node().run / "cdi")) {
    all["var/run/cdi/" + path] = text;
  }
  return all;
}

absl::StatusOr<TestApi>& Api() {
  static absl::StatusOr<TestApi> api = TestApi::Connect(Cluster());
  return api;
}

absl::StatusOr<json> Get(const std::string& path) {
  if (!Api().ok()) return Api().status();
  return Api()->Get(path);
}

std::string Describe(const absl::StatusOr<json>& object, const char* what) {
  if (!object.ok()) return absl::StrCat(what, ": ", object.status().ToString());
  return "";
}

// Pods of `ns` whose name starts with `prefix`, as "name: phase ready/not ready" lines.
absl::StatusOr<std::vector<json>> Pods(const std::string& ns) {
  absl::StatusOr<json> list = Get(absl::StrCat("/api/v1/namespaces/", ns, "/pods"));
  if (!list.ok()) return list.status();
  std::vector<json> out;
  for (const json& pod : (*list)["items"]) out.push_back(pod);
  return out;
}

std::string PodSummary(const json& pod) {
  std::string out =
      absl::StrCat(pod["metadata"].value("name", "?"), " ", pod["status"].value("phase", "?"));
  if (pod["status"].contains("containerStatuses")) {
    for (const json& c : pod["status"]["containerStatuses"]) {
      const json& state = c.value("state", json::object());
      for (const auto& [kind, detail] : state.items()) {
        absl::StrAppend(&out, " [", c.value("name", "?"), " ", kind);
        if (detail.contains("reason")) absl::StrAppend(&out, " ", detail.value("reason", ""));
        if (detail.contains("message")) absl::StrAppend(&out, ": ", detail.value("message", ""));
        absl::StrAppend(&out, " restarts=", c.value("restartCount", 0), "]");
      }
    }
  }
  return out;
}

std::string Allocatable(const json& node, const std::string& resource) {
  const json& alloc = node["status"].value("allocatable", json::object());
  return alloc.value(resource, "");
}

class NodeE2ETest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!Api().ok()) return;
    // The images: gpuop's own, the user workload and the simulated driver container. Nothing is
    // ever pulled.
    for (const auto& [archive, ref] :
         std::vector<std::pair<std::string, std::string>>{{"gpuop.tar", kGpuImage},
                                                          {"gpu-probe.tar", kProbeImage},
                                                          {"driver.tar", kDriverImage}}) {
      absl::Status imported =
          Cluster().ImportImage({.archive = DefaultImagesDir() / archive, .ref = ref});
      if (!imported.ok()) {
        ADD_FAILURE() << imported;
        return;
      }
    }
    S().images = true;
    S().containerd_before = SnapshotTree(Cluster().node().etc_containerd);
    S().cdi_before = CdiSnapshot();
    S().node_ready_at = absl::Now();
  }

  void SetUp() override {
    ASSERT_TRUE(Api().ok()) << Api().status();
    if (!S().images) GTEST_SKIP() << "needs the images imported (see the suite's set-up failure)";
  }
};

TEST_F(NodeE2ETest, HelmInstallsTheOperator) {
  const fs::path values = Cluster().work_dir() / "gpuop-values.yaml";
  {
    std::ofstream out(values);
    // Everything on the host network, reaching the API server on loopback: no Service IP is
    // ever dialled, and no traffic leaves the machine.
    out << "image:\n  repository: localhost/gpuop\n  tag: \"0.1.0\"\n  pullPolicy: Never\n"
        << "hostNetwork: true\n"
        << "apiServer:\n  host: 127.0.0.1\n  port: "
        << Cluster().server().substr(Cluster().server().rfind(':') + 1) << "\n"
        << "clusterPolicy:\n  spec:\n"
        << "    driver:\n      repository: localhost/simulated\n      version: \"570.86.15\"\n"
        << "      osTag: debian12\n"
        << "      env:\n        - {name: GPUOP_FAKE_NVML_SCENARIO, value: h100-8x-nvswitch}\n";
  }
  absl::StatusOr<ToolResult> helm =
      RunTool({Tool("helm"), "install", "gpuop", GPUOP_SOURCE_DIR "/deploy/helm/gpuop",
               "--namespace", kNamespace, "--create-namespace", "--values", values.string()},
              KubeEnv(), absl::Minutes(3));
  ASSERT_TRUE(helm.ok()) << helm.status();
  ASSERT_EQ(helm->exit_code, 0) << helm->output;
  S().installed = true;
}

TEST_F(NodeE2ETest, OperatorRunsAsAPodWithItsServiceAccount) {
  if (!S().installed) GTEST_SKIP() << "needs HelmInstallsTheOperator";
  absl::Status running =
      AwaitDone("the operator pod Running and Ready on the node", absl::Minutes(3),
                [&]() -> absl::StatusOr<std::string> {
                  absl::StatusOr<std::vector<json>> pods = Pods(kNamespace);
                  if (!pods.ok()) return pods.status();
                  std::vector<std::string> seen;
                  for (const json& pod : *pods) {
                    const std::string name = pod["metadata"].value("name", "");
                    if (!absl::StartsWith(name, "gpuop-operator")) continue;
                    if (PodRunningAndReady(pod) && pod["spec"].value("nodeName", "") == kNodeName &&
                        pod["spec"].value("serviceAccountName", "") == "gpuop-operator") {
                      return std::string();
                    }
                    seen.push_back(PodSummary(pod));
                  }
                  return seen.empty() ? "no operator pod yet" : absl::StrJoin(seen, "; ");
                });
  ASSERT_TRUE(running.ok()) << running;
  S().operator_running = true;
}

TEST_F(NodeE2ETest, NodeIsFoundAsAGpuNodeWithoutLabelsAddedByHand) {
  if (!S().operator_running) GTEST_SKIP() << "needs OperatorRunsAsAPodWithItsServiceAccount";
  absl::Status found =
      AwaitDone("node labelled gpuop.io/managed=true", absl::Minutes(3),
                [&]() -> absl::StatusOr<std::string> {
                  absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
                  if (!node.ok()) return node.status();
                  if (LabelOf(*node, "gpuop.io/managed") == "true") return std::string();
                  return "labels: " + (*node)["metadata"].value("labels", json::object()).dump();
                });
  GPUOP_EXPECTED_FAILURE("issue 12 (GPU nodes found on a stock cluster, no NFD)", found);
}

TEST_F(NodeE2ETest, EveryComponentRunsAndThePolicyGoesReady) {
  if (!S().operator_running) GTEST_SKIP() << "needs OperatorRunsAsAPodWithItsServiceAccount";
  absl::Status ready = AwaitDone(
      "every component Ready and the policy Ready", absl::Minutes(4),
      [&]() -> absl::StatusOr<std::string> {
        std::vector<std::string> missing;
        for (const std::string& component : kComponents) {
          absl::StatusOr<json> ds = Get(absl::StrCat("/apis/apps/v1/namespaces/", kNamespace,
                                                     "/daemonsets/gpuop-", component));
          if (!ds.ok()) {
            missing.push_back(component + ": no DaemonSet");
            continue;
          }
          const json& st = (*ds)["status"];
          if (st.value("numberReady", 0) < 1 ||
              st.value("numberReady", 0) != st.value("desiredNumberScheduled", -1)) {
            missing.push_back(absl::StrCat(component, ": ", st.value("numberReady", 0), "/",
                                           st.value("desiredNumberScheduled", 0), " ready"));
          }
        }
        absl::StatusOr<json> policy = Get("/apis/gpuop.io/v1alpha1/gpuclusterpolicies/default");
        if (!policy.ok() || ConditionStatus(*policy, "Ready") != "True") {
          missing.push_back("policy not Ready");
        }
        if (missing.empty()) return std::string();
        absl::StatusOr<std::vector<json>> pods = Pods(kNamespace);
        if (pods.ok()) {
          for (const json& pod : *pods) {
            if (!PodRunningAndReady(pod)) missing.push_back(PodSummary(pod));
          }
        }
        return absl::StrJoin(missing, "; ");
      });
  GPUOP_EXPECTED_FAILURE("issues 12 and 13 (runtime class, CDI, device plugin defaults)", ready);
}

TEST_F(NodeE2ETest, EightGpusBecomeAllocatableThroughTheRealKubelet) {
  if (!S().operator_running) GTEST_SKIP() << "needs OperatorRunsAsAPodWithItsServiceAccount";
  absl::Status allocatable = AwaitDone(
      "nvidia.com/gpu: 8 allocatable", absl::Minutes(3), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
        if (!node.ok()) return node.status();
        const std::string count = Allocatable(*node, "nvidia.com/gpu");
        if (count == "8") return std::string();
        return absl::StrCat("allocatable nvidia.com/gpu: \"", count, "\"");
      });
  if (allocatable.ok()) {
    S().allocatable = true;
    std::printf("[node] node Ready -> nvidia.com/gpu allocatable after install: %s\n",
                absl::FormatDuration(absl::Now() - S().node_ready_at).c_str());
  }
  GPUOP_EXPECTED_FAILURE("issues 12 and 13 (GPU components on a real node)", allocatable);
}

}  // namespace
}  // namespace gpuop::test
