// What the real node reports in the node tier: the user pod's gpu-probe, the kubelet's
// PodResources API and the device plugin's log, as the tests read them.
#include "test/node/node_e2e_reports.h"

#include <cctype>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/podresources/pod_resources.h"
#include "common/files.h"
#include "test/node/node_e2e_util.h"

namespace gpuop::test {

namespace fs = std::filesystem;
using nlohmann::json;

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

absl::StatusOr<json> ProbeReport(const fs::path& pod_logs, const std::string& ns,
                                 const std::string& pod) {
  absl::StatusOr<std::string> log = ContainerLog(pod_logs, ns, pod, "probe");
  if (!log.ok()) return log.status();
  const size_t end = log->find('\n');
  json report = json::parse(log->substr(0, end), nullptr, false);
  if (report.is_discarded()) return absl::InvalidArgumentError("probe output is not JSON: " + *log);
  return report;
}

// The nvidia.com/gpu device IDs the kubelet's PodResources API lists for pod `ns`/`pod`, and
// the NUMA nodes it lists for them.
absl::StatusOr<std::set<std::string>> KubeletDevicesOf(const NodeLayout& node,
                                                       const std::string& ns,
                                                       const std::string& pod,
                                                       std::vector<std::vector<int64_t>>* numa) {
  auto lister = agent::podresources::NewKubeletPodLister(node.var_lib_kubelet / "pod-resources" /
                                                         "kubelet.sock");
  absl::StatusOr<std::vector<agent::podresources::PodDevice>> devices =
      lister->List(absl::Seconds(10));
  if (!devices.ok()) return devices.status();
  std::set<std::string> ids;
  for (const auto& d : *devices) {
    if (d.pod_namespace == ns && d.pod == pod && d.resource == "nvidia.com/gpu") {
      ids.insert(d.device_id);
      if (numa != nullptr) numa->push_back(d.numa_nodes);
    }
  }
  return ids;
}

absl::Status CheckProbe(const NodeLayout& node, const std::string& ns, const std::string& pod) {
  absl::StatusOr<json> report = ProbeReport(node.pod_logs, ns, pod);
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
  std::vector<std::vector<int64_t>> numa;
  absl::StatusOr<std::set<std::string>> kubelet = KubeletDevicesOf(node, ns, pod, &numa);
  if (!kubelet.ok()) {
    problems.push_back(absl::StrCat("PodResources: ", kubelet.status().ToString()));
  } else if (*kubelet != uuids) {
    problems.push_back(absl::StrCat("PodResources lists ", absl::StrJoin(*kubelet, ","),
                                    " but NVML shows ", absl::StrJoin(uuids, ",")));
  }
  // The NUMA affinity from the node's PCI sysfs reached the kubelet, and the preferred
  // allocation kept the pair on one socket of the simulated HGX board.
  std::set<int64_t> sockets;
  for (const auto& nodes : numa) {
    if (nodes.size() != 1) {
      problems.push_back(
          absl::StrCat("PodResources lists ", nodes.size(), " NUMA nodes for a GPU, want 1"));
    }
    sockets.insert(nodes.begin(), nodes.end());
  }
  if (sockets.size() != 1) {
    problems.push_back(
        absl::StrCat("the two GPUs are on NUMA nodes ", absl::StrJoin(sockets, ","), ", want one"));
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(absl::StrJoin(problems, "; "), "; report: ", report->dump()));
}

std::optional<absl::Time> DevicePluginServingAt(const fs::path& pod_logs, const std::string& ns) {
  std::error_code ec;
  for (const auto& pod : fs::directory_iterator(pod_logs, ec)) {
    const std::string dir = pod.path().filename().string();
    if (!absl::StartsWith(dir, absl::StrCat(ns, "_gpuop-device-plugin"))) continue;
    absl::StatusOr<std::string> log = common::ReadFile(pod.path() / "device-plugin" / "0.log");
    if (!log.ok()) continue;
    for (absl::string_view line : absl::StrSplit(*log, '\n')) {
      if (!absl::StrContains(line, "device-plugin: serving nvidia.com/gpu")) continue;
      absl::Time at;
      std::string error;
      if (absl::ParseTime(absl::RFC3339_full, std::string(line.substr(0, line.find(' '))), &at,
                          &error)) {
        return at;
      }
    }
  }
  return std::nullopt;
}

}  // namespace gpuop::test
