// The node tier: gpuop installed with its Helm chart onto a real node (kubelet, containerd and
// runc of the `node` profile), its own image run as real containers, a simulated NVIDIA driver
// container (SIMULATED: the fake NVML with 8 x H100) providing the driver, and a user pod using
// two GPUs through the real kubelet's device manager.
//
// The tests run in order and build on each other, as a person installing gpuop would: install,
// the operator runs, the node is found, the components run, GPUs become allocatable, a pod gets
// two of them, the kubelet and containerd restart, the runtime component edits containerd, a
// driver upgrade runs through the state machine, a driver pod deleted by hand waits for a safe
// load, the chart is uninstalled. A step whose
// prerequisite failed is skipped, naming it.
#include <fstream>
#include <functional>
#include <optional>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/process.h"
#include "kube/types/object_meta.h"
#include "test/cluster/cluster_environment.h"
#include "test/cluster/ports.h"
#include "test/cluster/test_api.h"
#include "test/e2e/operator_e2e_util.h"
#include "test/node/node_e2e_driver_steps.h"
#include "test/node/node_e2e_fixture.h"
#include "test/node/node_e2e_health_steps.h"
#include "test/node/node_e2e_mig_steps.h"
#include "test/node/node_e2e_privilege_steps.h"
#include "test/node/node_e2e_reports.h"
#include "test/node/node_e2e_util.h"

namespace gpuop::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The simulated driver container on its own, as the operator's driver DaemonSet runs it
// (privileged, hostPID, /run/nvidia Bidirectional): it publishes the driver root and the device
// nodes on the node, and, like the real `rmmod`, refuses to unload while a process holds a device.
TEST_F(NodeE2ETest, TheSimulatedDriverPublishesTheDriverAndRefusesToUnloadWhileHeld) {
  SimulatedDriverAloneStep();
}

TEST_F(NodeE2ETest, HelmInstallsTheOperator) {
  const fs::path values = Cluster().work_dir() / "gpuop-values.yaml";
  // Every port opens on the machine (hostNetwork): free ones, never the defaults.
  absl::StatusOr<std::vector<int>> ports = PickFreeLoopbackPorts(2);
  ASSERT_TRUE(ports.ok()) << ports.status();
  {
    std::ofstream out(values);
    // Everything on the host network, reaching the API server on loopback: no Service IP is
    // ever dialled, and no traffic leaves the machine.
    out << "image:\n  repository: localhost/gpuop\n  tag: \"0.1.0\"\n  pullPolicy: Never\n"
        << "hostNetwork: true\n"
        << "operator:\n  metricsPort: " << (*ports)[0] << "\n"
        << "apiServer:\n  host: 127.0.0.1\n  port: "
        << Cluster().server().substr(Cluster().server().rfind(':') + 1) << "\n"
        << "clusterPolicy:\n  spec:\n"
        // No osTag: the image follows the node's OS (this machine's os-release, through gpuop's
        // discovery), so the simulated image's -debian12 tag is the one a Debian 12 node gets.
        << "    driver:\n      repository: localhost/simulated\n      version: \"570.86.15\"\n"
        << "      env:\n        - {name: GPUOP_SIMULATED_DRIVER_SCENARIO, value: "
           "h100-8x-nvswitch}\n"
        << "        - {name: GPUOP_SIMULATED_PROC_DRIVER, value: " << NodeLayout::kNodeProcDriver
        << "}\n"
        << "    components:\n      exporter:\n        port: " << (*ports)[1] << "\n";
  }
  absl::StatusOr<ToolResult> helm =
      RunTool({Tool("helm"), "install", "gpuop", GPUOP_SOURCE_DIR "/deploy/helm/gpuop",
               "--namespace", kNamespace, "--create-namespace", "--values", values.string()},
              KubeEnv(), absl::Minutes(3));
  ASSERT_TRUE(helm.ok()) << helm.status();
  ASSERT_EQ(helm->exit_code, 0) << helm->output;
  S().installed = true;
  S().installed_at = absl::Now();
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
      AwaitDone("node labelled gpuop.io/managed=true", absl::Minutes(2),
                [&]() -> absl::StatusOr<std::string> {
                  absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
                  if (!node.ok()) return node.status();
                  if (LabelOf(*node, "gpuop.io/managed") == "true") return std::string();
                  return "labels: " + (*node)["metadata"].value("labels", json::object()).dump();
                });
  S().node_found = found.ok();
  ASSERT_TRUE(found.ok()) << found;
  // Found by gpuop's own discovery (PCI sysfs, the node's SIMULATED HGX bus), not by NFD.
  absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(LabelOf(*node, "gpuop.io/gpu.present"), "true");
  EXPECT_EQ(LabelOf(*node, "gpuop.io/gpu.vendor"), "nvidia");
  // And the host's OS, from its os-release, for the driver image.
  EXPECT_NE(LabelOf(*node, "gpuop.io/os-release.ID"), "");
  EXPECT_NE(LabelOf(*node, "gpuop.io/os-release.VERSION_ID"), "");
}

TEST_F(NodeE2ETest, EveryComponentRunsAndThePolicyGoesReady) {
  if (!S().node_found) GTEST_SKIP() << "needs NodeIsFoundAsAGpuNodeWithoutLabelsAddedByHand";
  absl::Status ready = AwaitDone(
      "every component Ready and the policy Ready", absl::Minutes(4),
      [&]() -> absl::StatusOr<std::string> {
        // Note when the GPUs first show, for the timing in the next test.
        if (!S().allocatable_at.has_value()) {
          absl::StatusOr<json> gpus = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
          if (gpus.ok() && Allocatable(*gpus, "nvidia.com/gpu") == "8") {
            S().allocatable_at = absl::Now();
          }
        }
        std::vector<std::string> missing;
        // The driver's DaemonSet is the one for the node's OS (gpuop.io/driver.os, from this
        // machine's os-release through gpuop's discovery).
        absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
        if (!node.ok()) return node.status();
        const std::string os = LabelOf(*node, "gpuop.io/driver.os");
        if (os.empty()) return std::string("the node has no gpuop.io/driver.os yet");
        for (const std::string& component : kComponents) {
          const std::string name = component == "driver" ? absl::StrCat("gpuop-driver-", os)
                                                         : absl::StrCat("gpuop-", component);
          absl::StatusOr<json> ds =
              Get(absl::StrCat("/apis/apps/v1/namespaces/", kNamespace, "/daemonsets/", name));
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
  S().components_ready = ready.ok();
  EXPECT_TRUE(ready.ok()) << ready;
}

TEST_F(NodeE2ETest, EightGpusBecomeAllocatableThroughTheRealKubelet) {
  if (!S().node_found) GTEST_SKIP() << "needs NodeIsFoundAsAGpuNodeWithoutLabelsAddedByHand";
  absl::Status allocatable = AwaitDone(
      "nvidia.com/gpu: 8 allocatable", absl::Minutes(3), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
        if (!node.ok()) return node.status();
        const std::string count = Allocatable(*node, "nvidia.com/gpu");
        if (count == "8") return std::string();
        return absl::StrCat("allocatable nvidia.com/gpu: \"", count, "\"");
      });
  S().allocatable = allocatable.ok();
  ASSERT_TRUE(allocatable.ok()) << allocatable;
  const absl::Time seen = S().allocatable_at.value_or(absl::Now());
  std::printf(
      "[node] helm install -> nvidia.com/gpu: 8 allocatable: %s (the driver container "
      "started by the install)\n",
      absl::FormatDuration(seen - S().installed_at).c_str());
  // Where that went: the driver pod's creation (its DaemonSet is rendered once the node's OS is
  // known) and its start.
  if (absl::StatusOr<std::vector<json>> pods = Pods(kNamespace); pods.ok()) {
    if (const json* driver = DriverPod(*pods); driver != nullptr) {
      absl::StatusOr<absl::Time> created =
          kube::ParseTimestamp((*driver)["metadata"].value("creationTimestamp", ""));
      absl::StatusOr<absl::Time> started = kube::ParseTimestamp(
          FirstContainerStatus(*driver)["state"]["running"].value("startedAt", ""));
      if (created.ok() && started.ok()) {
        std::printf("[node]   install -> driver pod created: %s; -> driver container started: %s\n",
                    absl::FormatDuration(*created - S().installed_at).c_str(),
                    absl::FormatDuration(*started - *created).c_str());
      }
      const json init = (*driver)["status"].value("initContainerStatuses", json::array());
      if (created.ok() && !init.empty()) {
        const json& ran = init[0]["state"].value("terminated", json::object());
        absl::StatusOr<absl::Time> from = kube::ParseTimestamp(ran.value("startedAt", ""));
        absl::StatusOr<absl::Time> to = kube::ParseTimestamp(ran.value("finishedAt", ""));
        if (from.ok() && to.ok()) {
          std::printf("[node]   driver pod created -> safe-load step started: %s, ran %s\n",
                      absl::FormatDuration(*from - *created).c_str(),
                      absl::FormatDuration(*to - *from).c_str());
        }
      }
      // A first driver waits for nothing: its safe-load step finds no driver loaded.
      absl::StatusOr<std::string> safe_load =
          ContainerLog(Cluster().node().pod_logs, kNamespace,
                       (*driver)["metadata"].value("name", ""), "safe-load");
      EXPECT_TRUE(safe_load.ok()) << safe_load.status();
      if (safe_load.ok()) {
        EXPECT_THAT(*safe_load, ::testing::HasSubstr("no driver is loaded")) << *safe_load;
      }
    }
  }
  // With the driver present: from the validator's driver check passing (its ready file) to the
  // GPUs allocatable. Printed for the notes, never asserted.
  struct stat ready {};
  const fs::path ready_file = Cluster().NodeView("/run/gpuop/validations/driver-ready");
  if (::stat(ready_file.c_str(), &ready) == 0) {
    const absl::Time driver_ready = absl::TimeFromTimespec(ready.st_mtim);
    std::printf("[node] driver answering (driver-ready) -> nvidia.com/gpu: 8 allocatable: %s\n",
                absl::FormatDuration(seen - driver_ready).c_str());
    // Split at the device plugin's registration (its log line, stamped by the kubelet's CRI log).
    if (std::optional<absl::Time> serving =
            DevicePluginServingAt(Cluster().node().pod_logs, kNamespace);
        serving.has_value()) {
      std::printf(
          "[node]   driver-ready -> device plugin registered: %s; registered -> Node "
          "allocatable (the kubelet's node status sync): %s\n",
          absl::FormatDuration(*serving - driver_ready).c_str(),
          absl::FormatDuration(seen - *serving).c_str());
    }
  } else {
    std::printf("[node] no %s to time from\n", ready_file.c_str());
  }
}

TEST_F(NodeE2ETest, AUserPodGetsExactlyTwoGpus) {
  if (!S().allocatable) GTEST_SKIP() << "needs EightGpusBecomeAllocatableThroughTheRealKubelet";
  const json pod = ProbePod(kProbePod);
  ASSERT_TRUE(Api()->Create(absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods"), pod).ok());
  absl::Status running =
      AwaitDone("the probe pod Running", absl::Minutes(2), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<json> p =
            Get(absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods/", kProbePod));
        if (!p.ok()) return p.status();
        if ((*p)["status"].value("phase", "") == "Running") return std::string();
        return PodSummary(*p);
      });
  ASSERT_TRUE(running.ok()) << running;
  S().probe_running = true;
  absl::Status probed =
      WaitUntil("the probe's report", absl::Seconds(30), [&]() -> absl::StatusOr<bool> {
        return ProbeReport(Cluster().node().pod_logs, kWorkloads, kProbePod).ok();
      });
  ASSERT_TRUE(probed.ok()) << probed;
  const absl::Status probe = CheckProbe(Cluster().node(), kWorkloads, kProbePod);
  EXPECT_TRUE(probe.ok()) << probe;
}

TEST_F(NodeE2ETest, TheGpuManagersRunUnprivilegedUnderGpuopsRuntimeClass) {
  if (!S().allocatable) GTEST_SKIP() << "needs EightGpusBecomeAllocatableThroughTheRealKubelet";
  GpuManagersRunUnprivilegedStep();
}

TEST_F(NodeE2ETest, GpuopsRuntimeGivesTheMigMonitorOnlyWithSysAdmin) {
  if (!S().allocatable) GTEST_SKIP() << "needs EightGpusBecomeAllocatableThroughTheRealKubelet";
  MigMonitorNeedsSysAdminStep();
}

// Restarts `component` and expects the watched pod's container to be the same one, never
// restarted, once the node has it back; `after_start` runs as soon as the component is started.
void RestartKeepsTheWatchedPod(Component component,
                               const std::function<void(absl::Time)>& after_start = nullptr) {
  absl::StatusOr<std::string> path = WatchedPodPath();
  ASSERT_TRUE(path.ok()) << path.status();
  absl::StatusOr<json> before = Get(*path);
  ASSERT_TRUE(before.ok()) << before.status();
  const std::string id = FirstContainerStatus(*before).value("containerID", "");
  ASSERT_TRUE(Cluster().StopComponent(component).ok());
  const absl::Time restarted = absl::Now();
  ASSERT_TRUE(Cluster().StartComponent(component).ok());
  if (after_start) after_start(restarted);
  EXPECT_TRUE(AwaitSameContainer(*path, id).ok()) << *path;
}

TEST_F(NodeE2ETest, AfterAKubeletRestartTheNodeAndItsPodsComeBack) {
  if (!S().operator_running) GTEST_SKIP() << "needs OperatorRunsAsAPodWithItsServiceAccount";
  absl::Time restarted;
  RestartKeepsTheWatchedPod(Component::kKubelet, [&](absl::Time at) { restarted = at; });
  // The device plugin notices the new kubelet and registers again.
  if (!S().allocatable) {
    GTEST_SKIP() << "GPUs re-registering needs EightGpusBecomeAllocatableThroughTheRealKubelet";
  }
  EXPECT_TRUE(AwaitAllocatable(absl::Minutes(2)).ok());
  std::printf("[node] kubelet restart -> Ready with nvidia.com/gpu: 8 allocatable: %s\n",
              absl::FormatDuration(absl::Now() - restarted).c_str());
}

// The plugin's socket deleted on a live kubelet: gpuop serves on a new one, which ends the old
// stream, and registers again only after the kubelet has seen that end. The kubelet's device
// manager disconnects whichever registration is current when any stream of the resource ends,
// so a registration made first would be dropped moments later and the node would show 0 GPUs
// at its next status update (every 10 s).
TEST_F(NodeE2ETest, APluginSocketDeletedOnALiveKubeletComesBackAndStays) {
  if (!S().allocatable) {
    GTEST_SKIP() << "needs EightGpusBecomeAllocatableThroughTheRealKubelet";
  }
  ASSERT_TRUE(AwaitAllocatable(absl::Minutes(2)).ok());
  const fs::path socket =
      Cluster().node().var_lib_kubelet / "device-plugins" / "gpuop-nvidia.com-gpu.sock";
  ASSERT_TRUE(fs::exists(socket)) << socket;
  const absl::Time deleted = absl::Now();
  fs::remove(socket);
  ASSERT_TRUE(
      AwaitDone("the plugin socket served again", absl::Seconds(30),
                [&]() -> absl::StatusOr<std::string> { return fs::exists(socket) ? "" : "absent"; })
          .ok());
  const absl::Duration served = absl::Now() - deleted;
  EXPECT_TRUE(AwaitAllocatable(absl::Minutes(1)).ok());
  // Two node status updates later the GPUs are still there.
  absl::SleepFor(absl::Seconds(21));
  absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(Allocatable(*node, "nvidia.com/gpu"), "8");
  // The Node may not show the dip to 0 (its status is written every 10 s): what counts is that
  // the count holds after the re-registration.
  std::printf(
      "[node] plugin socket deleted on a live kubelet -> served again after %s, "
      "nvidia.com/gpu: 8 allocatable 21 s later\n",
      absl::FormatDuration(served).c_str());
}

TEST_F(NodeE2ETest, AfterAContainerdRestartRunningPodsKeepRunning) {
  if (!S().operator_running) GTEST_SKIP() << "needs OperatorRunsAsAPodWithItsServiceAccount";
  RestartKeepsTheWatchedPod(Component::kContainerd);
  if (S().allocatable) {
    EXPECT_TRUE(AwaitAllocatable(absl::Minutes(1)).ok());
  }
}

TEST_F(NodeE2ETest, TheRuntimeComponentConfiguresContainerd) {
  if (!S().node_found) GTEST_SKIP() << "needs NodeIsFoundAsAGpuNodeWithoutLabelsAddedByHand";
  absl::Status configured =
      AwaitDone("/etc/containerd edited by the runtime component", absl::Minutes(2),
                [&]() -> absl::StatusOr<std::string> {
                  const std::string diff = DescribeTreeDifference(
                      S().containerd_before, SnapshotTree(Cluster().node().etc_containerd));
                  return diff.empty() ? "unchanged" : "";
                });
  S().runtime_configured = configured.ok();
  EXPECT_TRUE(configured.ok()) << configured;
}

// A driver change rolled out by the upgrade state machine on the real node: gpuop pauses its
// own GPU clients and waits until their pods are gone before it deletes the driver pod, so the
// simulated driver unloads (it refuses while anything holds it, as NVIDIA's does) and the new
// driver pod starts without a single restart; the clients come back, a validator that started
// after the new driver validates it, and the node returns to service.
TEST_F(NodeE2ETest, ADriverUpgradeStopsTheGpuClientsFirstAndNeverCrashLoops) {
  if (!S().components_ready) GTEST_SKIP() << "needs EveryComponentRunsAndThePolicyGoesReady";
  DriverUpgradeStep();
  S().upgraded = !HasFailure();
}

// A driver pod deleted by hand while gpuop's clients hold the driver: the simulated driver
// refuses to unload (as NVIDIA's does in use), so the replacement pod's safe-load step finds a
// driver loaded and waits; the operator takes the node through the upgrade (cordon, the user's
// GPU pod deleted, the clients stopped), lets the pod load, and the node returns to service.
TEST_F(NodeE2ETest, ADriverPodStartedOverALoadedDriverWaitsUntilTheNodeIsSafe) {
  if (!S().upgraded)
    GTEST_SKIP() << "needs ADriverUpgradeStopsTheGpuClientsFirstAndNeverCrashLoops";
  SafeLoadStep();
}

// NVIDIA's MPS sharing on the real kubelet: a configuration with sharing.mps makes the labels
// component mark the node MPS-capable, the MPS daemon component start there (the SIMULATED
// driver's nvidia-cuda-mps-control), and the plugin serve two replicas of each GPU once the
// daemon is ready; a container given one finds the daemon's control socket in the pipe directory
// it was told. The default configuration comes back after.
TEST_F(NodeE2ETest, MpsSharingServesReplicasOnceItsDaemonRuns) {
  if (!S().components_ready) GTEST_SKIP() << "needs EveryComponentRunsAndThePolicyGoesReady";
  const std::string configs = absl::StrCat("/api/v1/namespaces/", kNamespace, "/configmaps");
  const json cm = {{"apiVersion", "v1"},
                   {"kind", "ConfigMap"},
                   {"metadata", {{"name", "mps-configs"}}},
                   {"data",
                    {{"default",
                      "version: v1\nsharing:\n  mps:\n    resources:\n"
                      "    - name: nvidia.com/gpu\n      replicas: 2\n"}}}};
  ASSERT_TRUE(Api()->Create(configs, cm).ok());
  auto use_config = [](const json& name) {
    const json patch = {{"spec", {{"components", {{"devicePlugin", {{"config", name}}}}}}}};
    return Api()
        ->Request("PATCH", "/apis/gpuop.io/v1alpha1/gpuclusterpolicies/default", &patch,
                  "application/merge-patch+json")
        .status();
  };
  ASSERT_TRUE(use_config("mps-configs").ok());
  absl::Status shared =
      AwaitDone("MPS-capable, the daemon Ready, 16 replicas", absl::Minutes(4),
                [&]() -> absl::StatusOr<std::string> {
                  absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
                  if (!node.ok()) return node.status();
                  std::vector<std::string> missing;
                  if (LabelOf(*node, "nvidia.com/mps.capable") != "true") {
                    missing.push_back("nvidia.com/mps.capable not true");
                  }
                  absl::StatusOr<json> ds = Get(absl::StrCat(
                      "/apis/apps/v1/namespaces/", kNamespace, "/daemonsets/gpuop-mps-daemon"));
                  if (!ds.ok() || (*ds)["status"].value("numberReady", 0) != 1) {
                    missing.push_back("gpuop-mps-daemon not Ready");
                  }
                  if (Allocatable(*node, "nvidia.com/gpu") != "16") {
                    missing.push_back("allocatable " + Allocatable(*node, "nvidia.com/gpu"));
                  }
                  return absl::StrJoin(missing, "; ");
                });
  EXPECT_TRUE(shared.ok()) << shared;
  if (shared.ok()) {
    json pod = ProbePod("mps-client");
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 1;
    ASSERT_TRUE(Api()->Create(absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods"), pod).ok());
    absl::StatusOr<json> report;
    absl::Status reported =
        WaitUntil("the MPS client's report", absl::Minutes(2), [&]() -> absl::StatusOr<bool> {
          report = ProbeReport(Cluster().node().pod_logs, kWorkloads, "mps-client");
          return report.ok();
        });
    ASSERT_TRUE(reported.ok()) << reported;
    const json mps = report->value("mps", json());
    EXPECT_EQ(mps.value("pipe_dir", ""), "/mps/nvidia.com/gpu/pipe") << report->dump();
    EXPECT_TRUE(mps.value("control", false)) << "the daemon's socket, mounted from the host";
    EXPECT_TRUE(
        Api()->Delete(absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods/mps-client")).ok());
  }
  ASSERT_TRUE(use_config(nullptr).ok());
  absl::Status back = AwaitDone(
      "the default configuration back", absl::Minutes(4), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
        if (!node.ok()) return node.status();
        if (LabelOf(*node, "nvidia.com/mps.capable") == "false" &&
            Allocatable(*node, "nvidia.com/gpu") == "8") {
          return std::string();
        }
        return absl::StrCat("mps.capable ", LabelOf(*node, "nvidia.com/mps.capable"),
                            ", allocatable ", Allocatable(*node, "nvidia.com/gpu"));
      });
  EXPECT_TRUE(back.ok()) << back;
  EXPECT_TRUE(Api()->Delete(configs + "/mps-configs").ok());
}

// XIDs act by class on the real kubelet (node_e2e_health_steps.h): an application XID leaves
// its GPU allocatable; a reset XID withdraws its GPU until remediation restarted the driver.
TEST_F(NodeE2ETest, AResetXidWithdrawsTheGpuUntilRemediationRestartsTheDriver) {
  if (!S().components_ready) GTEST_SKIP() << "needs EveryComponentRunsAndThePolicyGoesReady";
  XidRemediationStep();
}

TEST_F(NodeE2ETest, MigProfilesResourcesAndInstanceMemoryAreRightFromInsideThePods) {
  if (!S().upgraded) GTEST_SKIP() << "needs the driver upgrade step (a new driver pod template)";
  MigLayoutFromInsideThePodsStep();
  S().mig_mixed = !HasFatalFailure();
}

TEST_F(NodeE2ETest, AMigLayoutChangeStopsEveryGpuClientAndIsRefusedWhileAGpuIsHeld) {
  if (!S().mig_mixed) GTEST_SKIP() << "needs the MIG layout step (eight A100s, mixed strategy)";
  MigManagerResetsTheGpusStep();
}

TEST_F(NodeE2ETest, HelmUninstallLeavesTheNodeAsItWas) {
  if (!S().installed) GTEST_SKIP() << "needs HelmInstallsTheOperator";
  (void)Api()->Delete(absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods/", kProbePod));
  absl::StatusOr<ToolResult> helm = RunTool(
      {Tool("helm"), "uninstall", "gpuop", "--namespace", kNamespace, "--wait", "--timeout", "5m"},
      KubeEnv(), absl::Minutes(6));
  ASSERT_TRUE(helm.ok()) << helm.status();
  ASSERT_EQ(helm->exit_code, 0) << helm->output;
  absl::Status gone =
      AwaitDone("gpuop's pods gone", absl::Minutes(3), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<std::vector<json>> pods = Pods(kNamespace);
        if (!pods.ok()) return pods.status();
        std::vector<std::string> left;
        for (const json& pod : *pods) left.push_back(PodSummary(pod));
        return absl::StrJoin(left, "; ");
      });
  EXPECT_TRUE(gone.ok()) << gone;
  // Nothing of gpuop is left on the Node.
  absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
  ASSERT_TRUE(node.ok()) << node.status();
  const json labels = (*node)["metadata"].value("labels", json::object());
  for (const auto& [key, value] : labels.items()) {
    EXPECT_FALSE(absl::StartsWith(key, "gpuop.io/") || absl::StartsWith(key, "nvidia.com/"))
        << "label left: " << key;
  }
  // Restoring needs something to restore: the runtime component's edit of containerd's config.
  if (!S().runtime_configured) {
    GTEST_SKIP()
        << "the node files were never edited: needs TheRuntimeComponentConfiguresContainerd";
  }
  const std::string containerd =
      DescribeTreeDifference(S().containerd_before, SnapshotTree(Cluster().node().etc_containerd));
  const std::string cdi = DescribeTreeDifference(S().cdi_before, CdiSnapshot());
  EXPECT_EQ(containerd, "") << "/etc/containerd differs from before the install";
  EXPECT_EQ(cdi, "") << "/etc/cdi or /var/run/cdi differs from before the install";
  std::error_code ec;
  EXPECT_FALSE(fs::exists(Cluster().node().var_lib_gpuop / "bin" / "gpuop-cdi-hook", ec))
      << "the CDI hook was left on the node";
  EXPECT_FALSE(fs::exists(Cluster().node().var_lib_gpuop / "bin" / "gpuop-container-runtime", ec))
      << "the runc wrapper of the RuntimeClass gpuop was left on the node";
}

}  // namespace
}  // namespace gpuop::test
