#include "test/node/node_e2e_privilege_steps.h"

#include <fstream>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "kube/transport/curl_http_client.h"
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

  // The monitor capability without CAP_SYS_ADMIN: runc is never asked to create the container
  // (containerd's task create fails with the wrapper's message), and the kubelet says why.
  const std::string both = absl::StrCat(kAllDevice, ",", kMonitorDevice);
  ASSERT_TRUE(Api()->Create(path, ManagementProbePod("managed-no-admin", both)).ok());
  absl::Status refused = WaitUntil(
      "managed-no-admin refused for lack of CAP_SYS_ADMIN", absl::Minutes(2),
      [&]() -> absl::StatusOr<bool> {
        absl::StatusOr<json> p = Get(PodPath("managed-no-admin"));
        if (!p.ok()) return p.status();
        // Terminated with StartError (restartPolicy Never), or waiting to be tried again.
        const json status = FirstContainerStatus(*p);
        if (!status.is_object() || !status.contains("state")) return false;
        const json& state = status["state"];
        const json why = state.contains("terminated") ? state["terminated"]
                                                      : state.value("waiting", json::object());
        const std::string reason = why.value("reason", "");
        return (reason == "StartError" || reason == "CreateContainerError" ||
                reason == "RunContainerError") &&
               absl::StrContains(why.value("message", ""), "nvidia-cap2 requires CAP_SYS_ADMIN");
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

namespace {

// The exporter's Prometheus text, from its host port on loopback.
absl::StatusOr<std::string> ExporterMetrics() {
  absl::StatusOr<json> ds =
      Get(absl::StrCat("/apis/apps/v1/namespaces/", kNamespace, "/daemonsets/gpuop-exporter"));
  if (!ds.ok()) return ds.status();
  const int port =
      (*ds)["spec"]["template"]["spec"]["containers"][0]["ports"][0].value("containerPort", 0);
  static std::unique_ptr<kube::CurlHttpClient> client = *kube::CurlHttpClient::Create({});
  absl::StatusOr<kube::HttpResponse> response =
      client->Send({.url = absl::StrCat("http://127.0.0.1:", port, "/metrics")});
  if (!response.ok()) return response.status();
  if (response->status != 200) {
    return absl::UnavailableError(absl::StrCat("exporter: HTTP ", response->status));
  }
  return response->body;
}

// The lines of `metric` whose labels contain `label`.
std::vector<std::string> Series(const std::string& text, const std::string& metric,
                                const std::string& label) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, metric + "{") && absl::StrContains(line, label)) {
      out.emplace_back(line);
    }
  }
  return out;
}

// What the a100-8x-mig scenario's layout gives (its header): GPU 0 seven 1g.5gb, GPU 1 two
// 3g.20gb, GPU 2 a 4g.20gb split into two 2-slice compute instances (named 2c.4g.20gb, as
// NVIDIA's device plugin names them), a 2g.10gb and a 1g.5gb, GPU 3 MIG without instances, GPUs
// 4-7 whole.
const std::map<std::string, std::string> kMixedResources = {{"nvidia.com/gpu", "4"},
                                                            {"nvidia.com/mig-1g.5gb", "8"},
                                                            {"nvidia.com/mig-2g.10gb", "1"},
                                                            {"nvidia.com/mig-3g.20gb", "2"},
                                                            {"nvidia.com/mig-2c.4g.20gb", "2"}};

}  // namespace

void MigLayoutFromInsideThePodsStep() {
  const json patch = {
      {"spec",
       {{"driver",
         {{"env",
           {{{"name", "GPUOP_SIMULATED_DRIVER_SCENARIO"}, {"value", "a100-8x-mig"}},
            {{"name", "GPUOP_SIMULATED_PROC_DRIVER"}, {"value", NodeLayout::kNodeProcDriver}}}}}},
        {"components", {{"devicePlugin", {{"migStrategy", "mixed"}}}}},
        {"upgrade", {{"podDeletion", {{"force", true}}}}}}}};
  absl::StatusOr<ApiResponse> patched =
      Api()->Request("PATCH", "/apis/gpuop.io/v1alpha1/gpuclusterpolicies/default", &patch,
                     "application/merge-patch+json");
  ASSERT_TRUE(patched.ok()) << patched.status();
  ASSERT_EQ(patched->status, 200) << patched->raw;

  // The device plugin, from inside its pod: the mixed strategy's resources.
  absl::Status served = AwaitDone(
      "the MIG resources allocatable", absl::Minutes(8), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
        if (!node.ok()) return node.status();
        std::vector<std::string> wrong;
        for (const auto& [resource, count] : kMixedResources) {
          const std::string have = Allocatable(*node, resource);
          if (have != count) wrong.push_back(absl::StrCat(resource, ": ", have, ", want ", count));
        }
        return absl::StrJoin(wrong, "; ");
      });
  ASSERT_TRUE(served.ok()) << served;

  // The labels component: the profiles, as GPU feature discovery names them.
  absl::Status labelled =
      AwaitDone("the MIG labels", absl::Minutes(2), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
        if (!node.ok()) return node.status();
        const std::map<std::string, std::string> want = {{"nvidia.com/mig.strategy", "mixed"},
                                                         {"nvidia.com/mig-1g.5gb.count", "8"},
                                                         {"nvidia.com/mig-3g.20gb.count", "2"},
                                                         {"nvidia.com/mig-2g.10gb.count", "1"},
                                                         {"nvidia.com/mig-2c.4g.20gb.count", "2"}};
        std::vector<std::string> wrong;
        for (const auto& [key, value] : want) {
          if (LabelOf(*node, key) != value) {
            wrong.push_back(absl::StrCat(key, "=", LabelOf(*node, key), ", want ", value));
          }
        }
        return absl::StrJoin(wrong, "; ");
      });
  EXPECT_TRUE(labelled.ok()) << labelled;

  // A user's pod asking for one MIG device gets it through the real containerd: its parent GPU's
  // node and the instance's access capabilities (the CDI spec resolves their minors from the
  // driver's /proc/driver files), and nothing else.
  json mig_pod = ProbePod("mig-probe");
  mig_pod["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/mig-1g.5gb", 1}}}};
  ASSERT_TRUE(
      Api()->Create(absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods"), mig_pod).ok());
  absl::StatusOr<std::set<std::string>> mig_devices = DevicesOfRunningProbe("mig-probe");
  EXPECT_TRUE(mig_devices.ok()) << mig_devices.status();
  if (mig_devices.ok()) {
    int gpus = 0, caps = 0;
    for (const std::string& node : *mig_devices) {
      if (absl::StartsWith(node, "/dev/nvidia-caps/")) ++caps;
      if (node.size() > 11 && absl::StartsWith(node, "/dev/nvidia") &&
          absl::ascii_isdigit(static_cast<unsigned char>(node.back())) &&
          !absl::StartsWith(node, "/dev/nvidia-")) {
        ++gpus;
      }
    }
    EXPECT_EQ(gpus, 1) << absl::StrJoin(*mig_devices, ", ");
    EXPECT_EQ(caps, 2) << "the GPU and compute instance's access capabilities: "
                       << absl::StrJoin(*mig_devices, ", ");
    // NVML inside shows the parent GPU and, of its seven MIG devices, the one given.
    absl::StatusOr<json> report = ProbeReport(Cluster().node().pod_logs, kWorkloads, "mig-probe");
    ASSERT_TRUE(report.ok()) << report.status();
    const json& nvml = (*report)["nvml"];
    EXPECT_EQ(nvml.value("count", 0), 1) << report->dump();
    ASSERT_TRUE(nvml.contains("mig_uuids")) << report->dump();
    EXPECT_EQ(nvml["mig_uuids"].size(), 1u) << report->dump();
  }
  (void)Api()->Delete(PodPath("mig-probe"));

  // The exporter: one series per GPU instance, with the instance's own memory.
  absl::StatusOr<std::string> metrics;
  absl::Status scraped = WaitUntil("per-instance series", absl::Minutes(1), [&] {
    metrics = ExporterMetrics();
    return absl::StatusOr<bool>(
        metrics.ok() &&
        Series(*metrics, "DCGM_FI_DEV_FB_FREE", "GPU_I_PROFILE=\"1g.5gb\"").size() == 8);
  });
  ASSERT_TRUE(scraped.ok()) << scraped << (metrics.ok() ? *metrics : metrics.status().ToString());
  EXPECT_EQ(Series(*metrics, "DCGM_FI_DEV_FB_FREE", "GPU_I_PROFILE=\"3g.20gb\"").size(), 2u);
  EXPECT_EQ(Series(*metrics, "DCGM_FI_DEV_FB_FREE", "GPU_I_PROFILE=\"2g.10gb\"").size(), 1u);
  // Free plus used is the instance's memory, not the whole GPU's 40 GiB.
  for (const std::string& line :
       Series(*metrics, "DCGM_FI_DEV_FB_FREE", "GPU_I_PROFILE=\"1g.5gb\"")) {
    const std::string labels = line.substr(line.find('{'), line.rfind('}') - line.find('{') + 1);
    const std::vector<std::string> used = Series(*metrics, "DCGM_FI_DEV_FB_USED", labels);
    double free_mib = 0, used_mib = 0;
    ASSERT_TRUE(absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &free_mib)) << line;
    ASSERT_EQ(used.size(), 1u) << labels;
    ASSERT_TRUE(absl::SimpleAtod(used[0].substr(used[0].rfind(' ') + 1), &used_mib)) << used[0];
    EXPECT_LE(free_mib + used_mib, 5 * 1024) << line;
    EXPECT_GT(free_mib + used_mib, 4 * 1024) << line;
  }
}

}  // namespace gpuop::test
