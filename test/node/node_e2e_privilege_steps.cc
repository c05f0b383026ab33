#include "test/node/node_e2e_privilege_steps.h"

#include <fstream>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "test/cluster/node_config.h"
#include "test/e2e/operator_e2e_util.h"
#include "test/node/node_e2e_driver_steps.h"
#include "test/node/node_e2e_fixture.h"
#include "test/node/node_e2e_reports.h"

namespace gpuop::test {

using nlohmann::json;

namespace {

constexpr char kAllDevice[] = "management.gpuop.io/gpu=all";
constexpr char kMonitorDevice[] = "management.gpuop.io/gpu=mig-monitor";

// The probe pod (ProbePod) under the RuntimeClass gpuop, asking that runtime for `devices` instead
// of the device plugin for GPUs, with every capability dropped and `add` added.
json ManagementProbePod(const std::string& name, const std::string& devices,
                        const json& add = json::array()) {
  json pod = ProbePod(name);
  pod["spec"]["runtimeClassName"] = "gpuop";
  json& container = pod["spec"]["containers"][0];
  container.erase("resources");  // no device plugin devices: the runtime's only
  container["env"] = {{{"name", "GPUOP_CDI_DEVICES"}, {"value", devices}}};
  container["securityContext"] = {{"capabilities", {{"drop", {"ALL"}}, {"add", add}}}};
  return pod;
}

std::string PodPath(const std::string& name) {
  return absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods/", name);
}

// The probe's /dev entries once pod `name` runs.
absl::StatusOr<std::set<std::string>> DevicesOfRunningProbe(const std::string& name) {
  absl::Status running = AwaitDone(absl::StrCat(name, " Running"), absl::Minutes(2),
                                   [&]() -> absl::StatusOr<std::string> {
                                     absl::StatusOr<json> p = Get(PodPath(name));
                                     if (!p.ok()) return p.status();
                                     if ((*p)["status"].value("phase", "") == "Running")
                                       return std::string();
                                     return PodSummary(*p);
                                   });
  if (!running.ok()) return running;
  absl::StatusOr<json> report;
  absl::Status reported = WaitUntil("the probe's report", absl::Seconds(30), [&] {
    report = ProbeReport(Cluster().node().pod_logs, kWorkloads, name);
    return absl::StatusOr<bool>(report.ok());
  });
  if (!reported.ok()) return reported;
  std::set<std::string> devices;
  for (const json& d : report->value("dev_nodes", json::array())) {
    if (d.is_string()) devices.insert(d.get<std::string>());
  }
  return devices;
}

std::vector<std::string> ManagedGpus() {
  std::vector<std::string> out = {"/dev/nvidiactl"};
  for (int i = 0; i < 8; ++i) out.push_back(absl::StrCat("/dev/nvidia", i));
  return out;
}

}  // namespace

void GpuManagersRunUnprivilegedStep() {
  absl::StatusOr<std::vector<json>> pods = Pods(kNamespace);
  ASSERT_TRUE(pods.ok()) << pods.status();
  std::set<std::string> seen;
  for (const json& pod : *pods) {
    const std::string component =
        pod["metadata"]["labels"].value("app.kubernetes.io/component", "");
    if (component != "labels" && component != "device-plugin" && component != "health" &&
        component != "exporter") {
      continue;
    }
    seen.insert(component);
    const std::string name = pod["metadata"]["name"];
    EXPECT_EQ(pod["spec"].value("runtimeClassName", ""), "gpuop") << name;
    const json& security = pod["spec"]["containers"][0]["securityContext"];
    EXPECT_FALSE(security.value("privileged", false)) << name;
    EXPECT_EQ(security["capabilities"]["drop"], json({"ALL"})) << name;
    EXPECT_EQ(security["capabilities"]["add"], json({"SYS_ADMIN"})) << name;
    EXPECT_EQ(pod["status"].value("phase", ""), "Running") << name << ": " << PodSummary(pod);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"labels", "device-plugin", "health", "exporter"}));

  // What they were given: the management spec the CDI component wrote on the node.
  std::ifstream in(Cluster().node().run / "cdi" / "gpuop-management.json");
  std::stringstream text;
  text << in.rdbuf();
  const json spec = json::parse(text.str(), nullptr, false);
  ASSERT_FALSE(spec.is_discarded()) << text.str();
  EXPECT_EQ(spec.value("kind", ""), "management.gpuop.io/gpu");
  std::map<std::string, std::vector<std::string>> nodes;  // device -> container paths
  for (const json& device : spec.value("devices", json::array())) {
    for (const json& node : device["containerEdits"].value("deviceNodes", json::array())) {
      nodes[device.value("name", "")].push_back(node.value("path", ""));
      // The simulated driver's nodes, under its root as a driver container's are.
      EXPECT_TRUE(absl::StartsWith(node.value("hostPath", ""), "/run/nvidia/driver/dev/"))
          << node.dump();
    }
  }
  for (const std::string& path : ManagedGpus()) {
    EXPECT_THAT(nodes["all"], ::testing::Contains(path)) << spec.dump();
  }
  EXPECT_THAT(nodes["mig-monitor"], ::testing::ElementsAre("/dev/nvidia-caps/nvidia-cap2"))
      << "the minor from the driver's /proc/driver/nvidia/capabilities/mig/monitor";
}

void MigMonitorNeedsSysAdminStep() {
  const std::string path = absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods");
  // No capability at all: every GPU, and no MIG capability.
  ASSERT_TRUE(Api()->Create(path, ManagementProbePod("managed-plain", kAllDevice)).ok());
  absl::StatusOr<std::set<std::string>> plain = DevicesOfRunningProbe("managed-plain");
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (const std::string& node : ManagedGpus()) EXPECT_TRUE(plain->contains(node)) << node;
  EXPECT_FALSE(plain->contains("/dev/nvidia-caps/nvidia-cap2"));

  // The monitor capability without CAP_SYS_ADMIN: the container is never created, and the
  // kubelet says why.
  const std::string both = absl::StrCat(kAllDevice, ",", kMonitorDevice);
  ASSERT_TRUE(Api()->Create(path, ManagementProbePod("managed-no-admin", both)).ok());
  absl::Status refused = WaitUntil(
      "managed-no-admin refused for lack of CAP_SYS_ADMIN", absl::Minutes(2),
      [&]() -> absl::StatusOr<bool> {
        absl::StatusOr<json> p = Get(PodPath("managed-no-admin"));
        if (!p.ok()) return p.status();
        const json waiting = FirstContainerStatus(*p)["state"].value("waiting", json::object());
        return waiting.value("reason", "") == "CreateContainerError" &&
               absl::StrContains(waiting.value("message", ""), "CAP_SYS_ADMIN");
      });
  EXPECT_TRUE(refused.ok()) << refused;
  absl::StatusOr<json> refused_pod = Get(PodPath("managed-no-admin"));
  if (refused_pod.ok()) {
    EXPECT_NE((*refused_pod)["status"].value("phase", ""), "Running");
  }

  // With CAP_SYS_ADMIN, as the GPU managers run: the monitor capability too.
  ASSERT_TRUE(
      Api()->Create(path, ManagementProbePod("managed-admin", both, json({"SYS_ADMIN"}))).ok());
  absl::StatusOr<std::set<std::string>> admin = DevicesOfRunningProbe("managed-admin");
  ASSERT_TRUE(admin.ok()) << admin.status();
  EXPECT_TRUE(admin->contains("/dev/nvidia-caps/nvidia-cap2"));
  EXPECT_TRUE(admin->contains("/dev/nvidia0"));

  for (const char* name : {"managed-plain", "managed-no-admin", "managed-admin"}) {
    (void)Api()->Delete(PodPath(name));
  }
}

}  // namespace gpuop::test
