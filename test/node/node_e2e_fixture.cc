#include "test/node/node_e2e_fixture.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "test/e2e/operator_e2e_util.h"
#include "test/node/node_e2e_reports.h"
#include "test/node/node_e2e_util.h"

namespace gpuop::test {

using nlohmann::json;

ControlPlane& Cluster() { return ClusterEnvironment::Get(); }

std::string Tool(const std::string& name) { return (Cluster().bin_dir() / name).string(); }

std::vector<std::string> KubeEnv() {
  return {absl::StrCat("KUBECONFIG=", Cluster().kubeconfig().string()), "HOME=/tmp"};
}

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

// Every pod of `ns`.
absl::StatusOr<std::vector<json>> Pods(const std::string& ns) {
  absl::StatusOr<json> list = Get(absl::StrCat("/api/v1/namespaces/", ns, "/pods"));
  if (!list.ok()) return list.status();
  std::vector<json> out;
  for (const json& pod : (*list)["items"]) out.push_back(pod);
  return out;
}

absl::Status AwaitAllocatable(absl::Duration timeout) {
  return AwaitDone(
      "nvidia.com/gpu: 8 allocatable again", timeout, [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
        if (!node.ok()) return node.status();
        const std::string count = Allocatable(*node, "nvidia.com/gpu");
        if (count == "8" && ConditionStatus(*node, "Ready") == "True") return std::string();
        return absl::StrCat("allocatable \"", count, "\", Ready ", ConditionStatus(*node, "Ready"));
      });
}

absl::StatusOr<std::string> WatchedPodPath() {
  if (S().probe_running) {
    return absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods/", kProbePod);
  }
  absl::StatusOr<std::vector<json>> pods = Pods(kNamespace);
  if (!pods.ok()) return pods.status();
  for (const json& pod : *pods) {
    const std::string name = pod["metadata"].value("name", "");
    if (absl::StartsWith(name, "gpuop-operator") && PodRunningAndReady(pod)) {
      return absl::StrCat("/api/v1/namespaces/", kNamespace, "/pods/", name);
    }
  }
  return absl::NotFoundError("no running pod to watch");
}

json FirstContainerStatus(const json& pod) {
  const json* status = pod.contains("status") ? &pod["status"] : nullptr;
  if (status == nullptr || !status->contains("containerStatuses")) return json::object();
  const json& list = (*status)["containerStatuses"];
  if (!list.is_array() || list.empty() || !list[0].is_object()) return json::object();
  return list[0];
}

absl::Status AwaitSameContainer(const std::string& path, const std::string& id) {
  return AwaitDone(
      "the same container still running", absl::Minutes(2), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<json> after = Get(path);
        if (!after.ok()) return after.status();
        const json c = FirstContainerStatus(*after);
        if (c.value("containerID", "") == id && c.value("restartCount", -1) == 0 &&
            c.contains("state") && c["state"].contains("running") && PodRunningAndReady(*after)) {
          return std::string();
        }
        return PodSummary(*after);
      });
}

std::vector<std::string> ClientPods(const std::vector<json>& pods) {
  std::vector<std::string> out;
  for (const json& pod : pods) {
    const std::string phase =
        pod.contains("status") ? pod["status"].value("phase", "") : std::string();
    if (phase == "Succeeded" || phase == "Failed") continue;
    const std::string component = LabelOf(pod, "app.kubernetes.io/component");
    if (component.empty() || component == "driver" || component == "runtime" ||
        component == "discovery" ||
        absl::StartsWith(pod["metadata"].value("name", ""), "gpuop-operator")) {
      continue;
    }
    out.push_back(pod["metadata"].value("name", ""));
  }
  return out;
}

const json* DriverPod(const std::vector<json>& pods) {
  for (const json& pod : pods) {
    if (LabelOf(pod, "app.kubernetes.io/component") == "driver") return &pod;
  }
  return nullptr;
}

void NodeE2ETest::SetUpTestSuite() {
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
}

void NodeE2ETest::SetUp() {
  ASSERT_TRUE(Api().ok()) << Api().status();
  if (!S().images) GTEST_SKIP() << "needs the images imported (see the suite's set-up failure)";
}

}  // namespace gpuop::test
