// The node tier: gpuop installed with its Helm chart onto a real node (kubelet, containerd and
// runc of the `node` profile), its own image run as real containers, a simulated NVIDIA driver
// container (SIMULATED: the fake NVML with 8 x H100) providing the driver, and a user pod using
// two GPUs through the real kubelet's device manager.
//
// The tests run in order and build on each other, as a person installing gpuop would: install,
// the operator runs, the node is found, the components run, GPUs become allocatable, a pod gets
// two of them, the kubelet and containerd restart, the chart is uninstalled. A step whose
// prerequisite failed is skipped, naming it.
#include <cctype>
#include <fstream>
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

// What the probe in the user pod reported (one JSON object on its first line of output).
absl::StatusOr<json> ProbeReport() {
  absl::StatusOr<std::string> log =
      ContainerLog(Cluster().node().pod_logs, kWorkloads, kProbePod, "probe");
  if (!log.ok()) return log.status();
  const size_t end = log->find('\n');
  json report = json::parse(log->substr(0, end), nullptr, false);
  if (report.is_discarded()) return absl::InvalidArgumentError("probe output is not JSON: " + *log);
  return report;
}

// The device IDs the kubelet's PodResources API lists for the probe's container.
absl::StatusOr<std::set<std::string>> ProbeDevicesFromKubelet() {
  auto lister = agent::podresources::NewKubeletPodLister(Cluster().node().var_lib_kubelet /
                                                         "pod-resources" / "kubelet.sock");
  absl::StatusOr<std::vector<agent::podresources::PodDevice>> devices =
      lister->List(absl::Seconds(10));
  if (!devices.ok()) return devices.status();
  std::set<std::string> ids;
  for (const auto& d : *devices) {
    if (d.pod_namespace == kWorkloads && d.pod == kProbePod && d.resource == "nvidia.com/gpu") {
      ids.insert(d.device_id);
    }
  }
  return ids;
}

absl::Status CheckProbe() {
  absl::StatusOr<json> report = ProbeReport();
  if (!report.ok()) return report.status();
  std::vector<std::string> problems;
  int gpu_nodes = 0;
  for (const json& dev : report->value("dev_nodes", json::array())) {
    const std::string name = dev.is_string() ? dev.get<std::string>() : dev.dump();
    if (name.find("nvidia") != std::string::npos && std::isdigit(name.back())) ++gpu_nodes;
  }
  if (gpu_nodes != 2) problems.push_back(absl::StrCat(gpu_nodes, " /dev/nvidiaN nodes, want 2"));
  const json nvml = report->value("nvml", json::object());
  const json cuda = report->value("cuda", json::object());
  if (!nvml.value("loaded", false)) problems.push_back("libnvidia-ml.so.1 did not load");
  if (!cuda.value("loaded", false)) problems.push_back("libcuda.so.1 did not load");
  std::set<std::string> uuids;
  for (const json& u : nvml.value("uuids", json::array())) {
    if (u.is_string()) uuids.insert(u.get<std::string>());
  }
  if (uuids.size() != 2) problems.push_back(absl::StrCat("NVML shows ", uuids.size(), " GPUs"));
  absl::StatusOr<std::set<std::string>> kubelet = ProbeDevicesFromKubelet();
  if (!kubelet.ok()) {
    problems.push_back(absl::StrCat("PodResources: ", kubelet.status().ToString()));
  } else if (*kubelet != uuids) {
    problems.push_back(absl::StrCat("PodResources lists ", absl::StrJoin(*kubelet, ","),
                                    " but NVML shows ", absl::StrJoin(uuids, ",")));
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(absl::StrJoin(problems, "; "), "; report: ", report->dump()));
}

TEST_F(NodeE2ETest, AUserPodGetsExactlyTwoGpus) {
  if (!S().allocatable) GTEST_SKIP() << "needs EightGpusBecomeAllocatableThroughTheRealKubelet";
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", kProbePod}, {"namespace", kWorkloads}}},
      {"spec",
       {{"hostNetwork", true},
        {"restartPolicy", "Never"},
        {"terminationGracePeriodSeconds", 1},
        {"containers",
         {{{"name", "probe"},
           {"image", kProbeImage},
           {"imagePullPolicy", "Never"},
           {"command", {"/usr/local/bin/gpu-probe", "--sleep"}},
           {"resources", {{"limits", {{"nvidia.com/gpu", 2}}}}}}}}}}};
  ASSERT_TRUE(Api()->Create(absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods"), pod).ok());
  absl::Status running = AwaitDone("the probe pod Running", absl::Minutes(2),
                                   [&]() -> absl::StatusOr<std::string> {
    absl::StatusOr<json> p = Get(absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods/", kProbePod));
    if (!p.ok()) return p.status();
    if ((*p)["status"].value("phase", "") == "Running") return std::string();
    return PodSummary(*p);
  });
  ASSERT_TRUE(running.ok()) << running;
  S().probe_running = true;
  absl::Status probed = WaitUntil("the probe's report", absl::Seconds(30),
                                  [&]() -> absl::StatusOr<bool> { return ProbeReport().ok(); });
  ASSERT_TRUE(probed.ok()) << probed;
  GPUOP_EXPECTED_FAILURE("issue 13 (CDI that runs CUDA)", CheckProbe());
}

absl::Status AwaitAllocatable(absl::Duration timeout) {
  return AwaitDone("nvidia.com/gpu: 8 allocatable again", timeout,
                   [&]() -> absl::StatusOr<std::string> {
    absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
    if (!node.ok()) return node.status();
    const std::string count = Allocatable(*node, "nvidia.com/gpu");
    if (count == "8" && ConditionStatus(*node, "Ready") == "True") return std::string();
    return absl::StrCat("allocatable \"", count, "\", Ready ", ConditionStatus(*node, "Ready"));
  });
}

TEST_F(NodeE2ETest, AfterAKubeletRestartThePluginRegistersAgain) {
  if (!S().allocatable) GTEST_SKIP() << "needs EightGpusBecomeAllocatableThroughTheRealKubelet";
  ASSERT_TRUE(Cluster().StopComponent(Component::kKubelet).ok());
  ASSERT_TRUE(Cluster().StartComponent(Component::kKubelet).ok());
  EXPECT_TRUE(AwaitAllocatable(absl::Minutes(2)).ok());
}

TEST_F(NodeE2ETest, AfterAContainerdRestartRunningPodsKeepRunning) {
  if (!S().probe_running) GTEST_SKIP() << "needs AUserPodGetsExactlyTwoGpus";
  const std::string path = absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods/", kProbePod);
  absl::StatusOr<json> before = Get(path);
  ASSERT_TRUE(before.ok()) << before.status();
  const std::string id = (*before)["status"]["containerStatuses"][0].value("containerID", "");
  ASSERT_TRUE(Cluster().StopComponent(Component::kContainerd).ok());
  ASSERT_TRUE(Cluster().StartComponent(Component::kContainerd).ok());
  // The kubelet notices the runtime came back; the container is the same one, never restarted.
  absl::Status same = AwaitDone("the probe container still running", absl::Minutes(1),
                                [&]() -> absl::StatusOr<std::string> {
    absl::StatusOr<json> after = Get(path);
    if (!after.ok()) return after.status();
    const json& c = (*after)["status"]["containerStatuses"][0];
    if (c.value("containerID", "") == id && c.value("restartCount", -1) == 0 &&
        c["state"].contains("running")) {
      return std::string();
    }
    return PodSummary(*after);
  });
  EXPECT_TRUE(same.ok()) << same;
  EXPECT_TRUE(AwaitAllocatable(absl::Minutes(1)).ok());
}

TEST_F(NodeE2ETest, TheRuntimeComponentConfiguresContainerd) {
  if (!S().operator_running) GTEST_SKIP() << "needs OperatorRunsAsAPodWithItsServiceAccount";
  absl::Status configured = AwaitDone("/etc/containerd edited by the runtime component",
                                      absl::Minutes(2), [&]() -> absl::StatusOr<std::string> {
    const std::string diff = DescribeTreeDifference(
        S().containerd_before, SnapshotTree(Cluster().node().etc_containerd));
    return diff.empty() ? "unchanged" : "";
  });
  GPUOP_EXPECTED_FAILURE("issue 13 (runtime configuration on a real containerd)", configured);
}

TEST_F(NodeE2ETest, HelmUninstallLeavesTheNodeAsItWas) {
  if (!S().installed) GTEST_SKIP() << "needs HelmInstallsTheOperator";
  (void)Api()->Delete(absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods/", kProbePod));
  absl::StatusOr<ToolResult> helm =
      RunTool({Tool("helm"), "uninstall", "gpuop", "--namespace", kNamespace, "--wait",
               "--timeout", "3m"},
              KubeEnv(), absl::Minutes(4));
  ASSERT_TRUE(helm.ok()) << helm.status();
  ASSERT_EQ(helm->exit_code, 0) << helm->output;
  absl::Status gone = AwaitDone("gpuop's pods gone", absl::Minutes(3),
                                [&]() -> absl::StatusOr<std::string> {
    absl::StatusOr<std::vector<json>> pods = Pods(kNamespace);
    if (!pods.ok()) return pods.status();
    std::vector<std::string> left;
    for (const json& pod : *pods) left.push_back(PodSummary(pod));
    return absl::StrJoin(left, "; ");
  });
  EXPECT_TRUE(gone.ok()) << gone;
  const std::string containerd = DescribeTreeDifference(
      S().containerd_before, SnapshotTree(Cluster().node().etc_containerd));
  const std::string cdi = DescribeTreeDifference(S().cdi_before, CdiSnapshot());
  absl::Status restored = containerd.empty() && cdi.empty()
                              ? absl::OkStatus()
                              : absl::FailedPreconditionError(absl::StrCat(
                                    "/etc/containerd: ", containerd, "; CDI: ", cdi));
  GPUOP_EXPECTED_FAILURE("issue 12 (uninstall restores node files)", restored);
}

}  // namespace
}  // namespace gpuop::test
