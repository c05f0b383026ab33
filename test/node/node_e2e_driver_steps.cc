#include "test/node/node_e2e_driver_steps.h"

#include <filesystem>
#include <optional>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "test/cluster/node_config.h"
#include "test/e2e/operator_e2e_util.h"
#include "test/node/node_e2e_fixture.h"
#include "test/node/node_e2e_reports.h"
#include "test/node/node_e2e_util.h"

namespace gpuop::test {

namespace fs = std::filesystem;
using nlohmann::json;

void SimulatedDriverAloneStep() {
  const std::string pod_name = "simulated-driver";
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", pod_name}, {"namespace", kWorkloads}}},
              {"spec",
               {{"hostNetwork", true},
                {"hostPID", true},
                {"restartPolicy", "Never"},
                {"terminationGracePeriodSeconds", 5},
                {"containers",
                 {{{"name", "driver"},
                   {"image", kDriverImage},
                   {"imagePullPolicy", "Never"},
                   {"command", {"nvidia-driver", "init"}},
                   {"env",
                    {{{"name", "GPUOP_SIMULATED_DRIVER_SCENARIO"}, {"value", "h100-8x-nvswitch"}},
                     {{"name", "NODE_NAME"}, {"value", kNodeName}}}},
                   {"securityContext", {{"privileged", true}}},
                   {"volumeMounts",
                    {{{"name", "run-nvidia"},
                      {"mountPath", "/run/nvidia"},
                      {"mountPropagation", "Bidirectional"}}}}}}},
                {"volumes",
                 {{{"name", "run-nvidia"},
                   {"hostPath", {{"path", "/run/nvidia"}, {"type", "DirectoryOrCreate"}}}}}}}}};
  absl::StatusOr<json> created =
      Api()->Create(absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods"), pod);
  ASSERT_TRUE(created.ok()) << created.status();
  // The driver root is a mount inside the node: seen through the node's own view.
  const fs::path root = Cluster().NodeView("/run/nvidia/driver");
  const fs::path lib = root / "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1";
  absl::Status published =
      AwaitDone("the driver root published on the node", absl::Minutes(2),
                [&]() -> absl::StatusOr<std::string> {
                  std::error_code ec;
                  if (fs::exists(lib, ec) && fs::exists(root / "dev" / "nvidia7", ec) &&
                      fs::exists(root / "dev" / "nvidiactl", ec)) {
                    return std::string();
                  }
                  absl::StatusOr<json> p =
                      Get(absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods/", pod_name));
                  return p.ok() ? PodSummary(*p) : p.status().ToString();
                });
  ASSERT_TRUE(published.ok()) << published;
  struct stat st {};
  ASSERT_EQ(::stat((root / "dev" / "nvidia0").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/run/nvidia/driver/dev/nvidia0 is not a character device";
  // A process on the node holds GPU 3's device node; unloading must be refused.
  std::error_code removed;
  fs::remove(Cluster().node().run / "holder-ready", removed);
  absl::StatusOr<common::Subprocess> holder = Cluster().StartInNode(
      {"/bin/sh", "-c",
       "exec 3<>/run/nvidia/driver/dev/nvidia3; echo held >/run/holder-ready; exec sleep 600"});
  ASSERT_TRUE(holder.ok()) << holder.status();
  ASSERT_TRUE(WaitUntil("the holder holding", absl::Seconds(30), [&]() -> absl::StatusOr<bool> {
                return fs::exists(Cluster().node().run / "holder-ready");
              }).ok());
  const std::vector<std::string> exec = {Tool("kubectl"), "exec",  "-n",     kWorkloads,
                                         pod_name,        "-c",    "driver", "--",
                                         "nvidia-driver", "uninit"};
  absl::StatusOr<ToolResult> refused = RunTool(exec, KubeEnv(), absl::Minutes(1));
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_NE(refused->exit_code, 0) << refused->output;
  EXPECT_THAT(
      refused->output,
      ::testing::HasSubstr("Could not unload NVIDIA driver kernel modules, driver is in use"));
  EXPECT_TRUE(fs::exists(lib)) << "a refused unload removed the driver root";
  // Released, it unloads: the driver root and the device nodes go.
  ASSERT_TRUE(holder->Stop(absl::Seconds(5)).ok());
  absl::Status unloaded = AwaitDone(
      "the driver unloaded once released", absl::Minutes(1), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<ToolResult> again = RunTool(exec, KubeEnv(), absl::Seconds(30));
        if (!again.ok()) return again.status();
        std::error_code ec;
        if (!fs::exists(lib, ec)) return std::string();
        return absl::StrCat("uninit exit ", again->exit_code, ": ", again->output);
      });
  EXPECT_TRUE(unloaded.ok()) << unloaded;
  (void)Api()->Delete(absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods/", pod_name));
}

json ProbePod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", kWorkloads}}},
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
}

namespace {

// The Node, with its upgrade message added to `messages` (the messages it goes through, in
// turn, for a failure's report).
absl::StatusOr<json> NodeNoting(std::set<std::string>& messages) {
  absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
  if (node.ok()) {
    if (std::string m = AnnotationOf(*node, "gpuop.io/driver-upgrade-message"); !m.empty()) {
      messages.insert(m);
    }
  }
  return node;
}

}  // namespace

void DriverUpgradeStep() {
  absl::StatusOr<std::vector<json>> before = Pods(kNamespace);
  ASSERT_TRUE(before.ok()) << before.status();
  const json* old_driver = DriverPod(*before);
  ASSERT_NE(old_driver, nullptr);
  const std::string old_uid = (*old_driver)["metadata"].value("uid", "");
  ASSERT_FALSE(ClientPods(*before).empty());

  // A new pod template for the driver DaemonSet (an environment variable), as a new driver
  // version would give; the simulated image stays the one imported. The user's probe pod has no
  // controller: pod deletion takes it only with podDeletion.force, as kubectl drain --force.
  const json patch = {
      {"spec",
       {{"driver",
         {{"env",
           {{{"name", "GPUOP_SIMULATED_DRIVER_SCENARIO"}, {"value", "h100-8x-nvswitch"}},
            {{"name", "GPUOP_SIMULATED_PROC_DRIVER"}, {"value", NodeLayout::kNodeProcDriver}},
            {{"name", "GPUOP_TEST_DRIVER_GENERATION"}, {"value", "2"}}}}}},
        {"upgrade", {{"podDeletion", {{"force", true}}}}}}}};
  absl::StatusOr<ApiResponse> patched =
      Api()->Request("PATCH", "/apis/gpuop.io/v1alpha1/gpuclusterpolicies/default", &patch,
                     "application/merge-patch+json");
  ASSERT_TRUE(patched.ok()) << patched.status();
  ASSERT_EQ(patched->status, 200) << patched->raw;
  const absl::Time started = absl::Now();

  std::set<std::string> messages;  // the node's upgrade messages, in turn
  std::set<std::string> paused;    // deploy labels seen paused
  std::optional<std::vector<std::string>> clients_at_driver_deletion;
  std::string failure;  // the node's message once the upgrade failed
  absl::Status done =
      AwaitDone("upgrade-done with a new driver pod Ready", absl::Minutes(6),
                [&]() -> absl::StatusOr<std::string> {
                  absl::StatusOr<json> node = NodeNoting(messages);
                  if (!node.ok()) return node.status();
                  const json labels = (*node)["metadata"].value("labels", json::object());
                  for (const auto& [key, value] : labels.items()) {
                    if (value == "paused-for-driver-upgrade") paused.insert(key);
                  }
                  absl::StatusOr<std::vector<json>> pods = Pods(kNamespace);
                  if (!pods.ok()) return pods.status();
                  const json* driver = DriverPod(*pods);
                  const bool old_going = driver == nullptr ||
                                         (*driver)["metadata"].value("uid", "") != old_uid ||
                                         (*driver)["metadata"].contains("deletionTimestamp");
                  if (old_going && !clients_at_driver_deletion.has_value()) {
                    // Client pods created once the new driver pod exists are the ones brought back
                    // after it (seen when a slow poll first notices the old driver gone late): not
                    // counted.
                    const std::string new_driver_created =
                        driver != nullptr && (*driver)["metadata"].value("uid", "") != old_uid
                            ? (*driver)["metadata"].value("creationTimestamp", "")
                            : "";
                    std::vector<json> before_new_driver;
                    for (const json& pod : *pods) {
                      if (new_driver_created.empty() ||
                          pod["metadata"].value("creationTimestamp", "") < new_driver_created) {
                        before_new_driver.push_back(pod);
                      }
                    }
                    clients_at_driver_deletion = ClientPods(before_new_driver);
                  }
                  const std::string state = LabelOf(*node, "gpuop.io/driver-upgrade-state");
                  if (state == "upgrade-failed") {
                    failure = AnnotationOf(*node, "gpuop.io/driver-upgrade-message");
                    return std::string();
                  }
                  if (driver == nullptr || (*driver)["metadata"].value("uid", "") == old_uid) {
                    return absl::StrCat("state ", state, "; the old driver pod still there");
                  }
                  if (state != "upgrade-done" || !PodRunningAndReady(*driver)) {
                    return absl::StrCat("state ", state, "; ", PodSummary(*driver));
                  }
                  return std::string();
                });
  ASSERT_TRUE(done.ok()) << done << "\nmessages seen: " << absl::StrJoin(messages, " | ");
  ASSERT_EQ(failure, "") << "the upgrade failed; messages seen: " << absl::StrJoin(messages, " | ");
  std::printf("[node] driver upgrade (policy change -> upgrade-done, one node): %s\n",
              absl::FormatDuration(absl::Now() - started).c_str());

  EXPECT_THAT(paused,
              ::testing::IsSupersetOf({"gpuop.io/deploy.device-plugin", "gpuop.io/deploy.validator",
                                       "gpuop.io/deploy.exporter"}));
  ASSERT_TRUE(clients_at_driver_deletion.has_value());
  EXPECT_THAT(*clients_at_driver_deletion, ::testing::IsEmpty())
      << "GPU clients still on the node when the driver pod was deleted";
  EXPECT_THAT(absl::StrJoin(messages, " | "),
              ::testing::HasSubstr("GPU clients to stop before restarting the driver"));

  absl::StatusOr<std::vector<json>> after = Pods(kNamespace);
  ASSERT_TRUE(after.ok()) << after.status();
  const json* driver = DriverPod(*after);
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(FirstContainerStatus(*driver).value("restartCount", -1), 0)
      << "the new driver pod restarted: " << PodSummary(*driver);
  // The node is back: uncordoned, no pause left, every component Ready, the GPUs allocatable,
  // and the validator that passed started after the new driver pod.
  absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_FALSE(Cordoned(*node));
  const json labels = (*node)["metadata"].value("labels", json::object());
  for (const auto& [key, value] : labels.items()) {
    EXPECT_NE(value, "paused-for-driver-upgrade") << key;
  }
  absl::Status back = AwaitDone("every component Ready again", absl::Minutes(3),
                                [&]() -> absl::StatusOr<std::string> {
                                  absl::StatusOr<std::vector<json>> pods = Pods(kNamespace);
                                  if (!pods.ok()) return pods.status();
                                  std::vector<std::string> waiting;
                                  std::set<std::string> ready;
                                  for (const json& pod : *pods) {
                                    if (PodRunningAndReady(pod)) {
                                      ready.insert(LabelOf(pod, "app.kubernetes.io/component"));
                                    } else {
                                      waiting.push_back(PodSummary(pod));
                                    }
                                  }
                                  for (const std::string& c : kComponents) {
                                    if (!ready.contains(c)) waiting.push_back(c + " not Ready");
                                  }
                                  return absl::StrJoin(waiting, "; ");
                                });
  EXPECT_TRUE(back.ok()) << back;
  EXPECT_TRUE(AwaitAllocatable(absl::Minutes(2)).ok());
  absl::StatusOr<std::vector<json>> last = Pods(kNamespace);
  ASSERT_TRUE(last.ok()) << last.status();
  for (const json& pod : *last) {
    if (LabelOf(pod, "app.kubernetes.io/component") != "validator") continue;
    EXPECT_GE(pod["metadata"].value("creationTimestamp", ""),
              (*driver)["metadata"].value("creationTimestamp", ""))
        << "the validator predates the driver it is taken to validate";
  }
}

void SafeLoadStep() {
  // A GPU workload on the node again (the upgrade deleted the first probe pod).
  const std::string workload = std::string(kProbePod) + "-safe-load";
  const std::string workload_path =
      absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods/", workload);
  ASSERT_TRUE(
      Api()
          ->Create(absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods"), ProbePod(workload))
          .ok());
  absl::Status running =
      AwaitDone("the workload Running", absl::Minutes(2), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<json> p = Get(workload_path);
        if (!p.ok()) return p.status();
        return (*p)["status"].value("phase", "") == "Running" ? std::string() : PodSummary(*p);
      });
  ASSERT_TRUE(running.ok()) << running;

  absl::StatusOr<std::vector<json>> before = Pods(kNamespace);
  ASSERT_TRUE(before.ok()) << before.status();
  const json* old_driver = DriverPod(*before);
  ASSERT_NE(old_driver, nullptr);
  const std::string old_name = (*old_driver)["metadata"].value("name", "");
  ASSERT_FALSE(ClientPods(*before).empty()) << "the clients hold the driver";
  // What a person or a tool outside gpuop might do.
  ASSERT_TRUE(
      Api()->Delete(absl::StrCat("/api/v1/namespaces/", kNamespace, "/pods/", old_name)).ok());
  const absl::Time started = absl::Now();

  std::string waiting_pod;  // the pod named by the safe-load request
  bool main_started_while_waiting = false;
  bool released = false;
  std::optional<std::vector<std::string>> clients_at_release;
  std::optional<bool> workload_at_release;
  std::set<std::string> messages;
  std::string failure;
  absl::Status done = AwaitDone(
      "the new driver pod loaded after a safe load", absl::Minutes(6),
      [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<json> node = NodeNoting(messages);
        if (!node.ok()) return node.status();
        absl::StatusOr<std::vector<json>> pods = Pods(kNamespace);
        if (!pods.ok()) return pods.status();
        const json* driver = DriverPod(*pods);
        const std::string request = AnnotationOf(*node, "gpuop.io/driver-wait-for-safe-load");
        if (!request.empty() && request != old_name) {
          waiting_pod = request;
          if (driver != nullptr && (*driver)["metadata"].value("name", "") == request &&
              FirstContainerStatus(*driver).value("state", json::object()).contains("running")) {
            main_started_while_waiting = true;
          }
        }
        if (!waiting_pod.empty() && request.empty() && !released) {
          released = true;
          clients_at_release = ClientPods(*pods);
          workload_at_release = Get(workload_path).ok();
        }
        const std::string state = LabelOf(*node, "gpuop.io/driver-upgrade-state");
        if (state == "upgrade-failed") {
          failure = AnnotationOf(*node, "gpuop.io/driver-upgrade-message");
          return std::string();
        }
        if (driver == nullptr || (*driver)["metadata"].value("name", "") == old_name) {
          return absl::StrCat("state ", state, "; the old driver pod still there");
        }
        if (!released || state != "upgrade-done" || !PodRunningAndReady(*driver)) {
          return absl::StrCat("state ", state, ", request \"", request, "\"; ",
                              PodSummary(*driver));
        }
        return std::string();
      });
  // What the replacement pod's two steps printed, for a failure.
  const auto logs = [&]() {
    absl::StatusOr<std::vector<json>> pods = Pods(kNamespace);
    const json* driver = pods.ok() ? DriverPod(*pods) : nullptr;
    if (driver == nullptr) return std::string("no driver pod");
    const std::string name = (*driver)["metadata"].value("name", "");
    std::string out;
    for (const char* container : {"safe-load", "driver"}) {
      absl::StatusOr<std::string> log =
          ContainerLog(Cluster().node().pod_logs, kNamespace, name, container);
      absl::StrAppend(&out, "\n--- ", name, "/", container, ":\n",
                      log.ok() ? *log : log.status().ToString());
    }
    return out;
  };
  ASSERT_TRUE(done.ok()) << done << "\nmessages seen: " << absl::StrJoin(messages, " | ") << logs();
  ASSERT_EQ(failure, "") << "the upgrade failed; messages seen: " << absl::StrJoin(messages, " | ")
                         << logs();
  std::printf("[node] safe driver load (driver pod deleted by hand -> upgrade-done): %s\n",
              absl::FormatDuration(absl::Now() - started).c_str());

  EXPECT_FALSE(main_started_while_waiting) << "the driver container started before the release";
  // The reason the upgrade started, from its Event (the state's message lasts one pass).
  absl::StatusOr<json> events =
      Get(absl::StrCat("/api/v1/events?fieldSelector=involvedObject.name%3D", kNodeName));
  ASSERT_TRUE(events.ok()) << events.status();
  std::vector<std::string> notes;
  for (const json& e : (*events).value("items", json::array()))
    notes.push_back(e.value("message", ""));
  EXPECT_THAT(notes, ::testing::Contains(
                         ::testing::HasSubstr("upgrade-required: driver pod " + waiting_pod +
                                              " waits to load until the node is drained")));
  ASSERT_TRUE(clients_at_release.has_value());
  EXPECT_THAT(*clients_at_release, ::testing::IsEmpty())
      << "GPU clients still on the node when the driver was let in";
  EXPECT_EQ(workload_at_release, false) << "the GPU workload was still there at the release";

  absl::StatusOr<std::vector<json>> after = Pods(kNamespace);
  ASSERT_TRUE(after.ok()) << after.status();
  const json* driver = DriverPod(*after);
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ((*driver)["metadata"].value("name", ""), waiting_pod);
  EXPECT_EQ(FirstContainerStatus(*driver).value("restartCount", -1), 0)
      << "the new driver pod restarted: " << PodSummary(*driver);
  absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_FALSE(Cordoned(*node));
  EXPECT_TRUE(AwaitAllocatable(absl::Minutes(2)).ok());
}

}  // namespace gpuop::test
