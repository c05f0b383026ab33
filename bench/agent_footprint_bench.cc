// The node agent's footprint with every module on, deployed as the operator deploys it: one
// `gpuop-agent <module>` process per component, on a simulated 8 x H100 node (the fake NVML)
// whose kubelet (the fake kubelet, with a device plugin serving it in this process) runs ~100
// pods holding GPUs, against a real kube-apiserver (the test control plane) where the Node
// lives.
//
// Per process: resident memory (RSS, and its anonymous part), proportional set size (PSS:
// shared library pages split among the processes that map them, so the column adds up to what
// the node really spends) and CPU while idle. Nothing is asserted.
//
//   agent_footprint_bench [pods=100] [settle_seconds=20] [idle_seconds=30]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/exporter/fake_node.h"
#include "bench/proc.h"
#include "common/process.h"
#include "test/cluster/control_plane.h"
#include "test/cluster/test_api.h"

namespace gpuop::bench {
namespace {

using agent::exporter::testing::FakeNode;

struct Module {
  std::string name;
  std::vector<std::string> args;
  std::optional<common::Subprocess> process;
  double idle_cpu_start = 0;
};

int Run(int pods, int settle_seconds, int idle_seconds) {
  auto control_plane = test::ControlPlane::Start({});
  if (!control_plane.ok()) {
    std::fprintf(stderr, "control plane: %s\n", control_plane.status().ToString().c_str());
    return 1;
  }
  auto api = test::TestApi::Connect(**control_plane);
  if (!api.ok()) return 1;
  const std::string node_name = "bench-gpu-node";
  if (!api->Create("/api/v1/nodes",
                   {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", node_name}}}})
           .ok()) {
    return 1;
  }

  const int replicas = FakeNode::ReplicasForPods(pods);
  auto node = FakeNode::StartWithPods(pods);
  if (!node.ok()) {
    std::fprintf(stderr, "fake node: %s\n", node.status().ToString().c_str());
    return 1;
  }

  const std::filesystem::path dir = (*node)->dir();
  std::ofstream(dir / "mig.yaml") << "version: v1\nmig-configs:\n  all-disabled:\n"
                                     "    - devices: all\n      mig-enabled: false\n";
  const std::string nvml = "--nvml-library=" + agent::exporter::testing::FakeNvmlLibrary();
  const std::string kubeconfig = "--kubeconfig=" + (*control_plane)->kubeconfig().string();
  const std::string node_flag = "--node-name=" + node_name;
  const std::string socket = "--pod-resources-socket=" + (*node)->pod_resources_socket().string();
  const std::string sysfs = "--sysfs-root=" + (dir / "no-sysfs").string();
  const std::vector<std::pair<std::string, std::vector<std::string>>> specs = {
      {"device-plugin",
       {"device-plugin", "--plugin-dir=" + (dir / "device-plugins").string(),
        "--health-file=" + (dir / "health.json").string(), node_flag, kubeconfig}},
      {"labels", {"labels", node_flag, kubeconfig, "--host-proc=" + dir.string()}},
      {"health",
       {"health", node_flag, kubeconfig, "--health-file=" + (dir / "health.json").string()}},
      {"exporter", {"exporter", "--listen=127.0.0.1:0", "--interval=10", socket, node_flag}},
      {"validate",
       {"validate", "--keep-running", "--checks=driver", node_flag, kubeconfig,
        "--status-dir=" + (dir / "validations").string()}},
      {"mig",
       {"mig", node_flag, kubeconfig, "--config-file=" + (dir / "mig.yaml").string(),
        "--layout-file=" + (dir / "mig-layout").string()}},
      {"power", {"power", "--idle-after=900", "--floor-percent=40", socket}},
  };
  std::vector<Module> modules;
  for (const auto& [name, args] : specs) {
    modules.push_back(Module{.name = name, .args = args});
    Module& m = modules.back();
    std::vector<std::string> argv = {GPUOP_AGENT_BINARY};
    argv.insert(argv.end(), m.args.begin(), m.args.end());
    argv.push_back(nvml);
    argv.push_back(sysfs);
    auto spawned = common::Subprocess::Spawn({.argv = argv,
                                              .env = {"GPUOP_FAKE_NVML_SCENARIO=h100-8x-nvswitch"},
                                              .output_path = dir / (m.name + ".log")});
    if (!spawned.ok()) {
      std::fprintf(stderr, "%s: %s\n", m.name.c_str(), spawned.status().ToString().c_str());
      return 1;
    }
    m.process = *std::move(spawned);
  }
  absl::SleepFor(absl::Seconds(settle_seconds));
  for (Module& m : modules) m.idle_cpu_start = CpuSeconds(m.process->pid());
  absl::SleepFor(absl::Seconds(idle_seconds));

  std::printf("%d pods holding GPUs (%d replicas per GPU), 8 fake H100s, settled %d s\n", pods,
              replicas, settle_seconds);
  std::printf("%-14s %9s %9s %9s %9s %14s\n", "module", "RSS MiB", "anon MiB", "PSS MiB",
              "peak MiB", "idle CPU ms/s");
  double rss = 0, anon = 0, pss = 0, cpu = 0;
  for (Module& m : modules) {
    const pid_t pid = m.process->pid();
    const std::string status = ReadFile(absl::StrCat("/proc/", pid, "/status"));
    const std::string rollup = ReadFile(absl::StrCat("/proc/", pid, "/smaps_rollup"));
    if (status.empty()) {
      std::printf("%-14s exited early; see %s\n", m.name.c_str(),
                  (dir / (m.name + ".log")).c_str());
      continue;
    }
    const double m_rss = KibField(status, "VmRSS") / 1024.0;
    const double m_anon = KibField(status, "RssAnon") / 1024.0;
    const double m_pss = KibField(rollup, "Pss") / 1024.0;
    const double m_cpu = (CpuSeconds(pid) - m.idle_cpu_start) / idle_seconds * 1e3;
    std::printf("%-14s %9.1f %9.1f %9.1f %9.1f %14.2f\n", m.name.c_str(), m_rss, m_anon, m_pss,
                KibField(status, "VmHWM") / 1024.0, m_cpu);
    rss += m_rss;
    anon += m_anon;
    pss += m_pss;
    cpu += m_cpu;
  }
  std::printf("%-14s %9.1f %9.1f %9.1f %9s %14.2f\n", "all modules", rss, anon, pss, "", cpu);
  std::printf("\nwhat each module said last:\n");
  for (Module& m : modules) {
    const std::string log = ReadFile(dir / (m.name + ".log"));
    std::vector<absl::string_view> lines = absl::StrSplit(log, '\n', absl::SkipEmpty());
    std::printf("  %-13s %s\n", m.name.c_str(),
                lines.empty() ? "(nothing)" : std::string(lines.back().substr(0, 110)).c_str());
  }
  for (Module& m : modules) (void)m.process->Stop(absl::Seconds(10));
  return 0;
}

}  // namespace
}  // namespace gpuop::bench

int main(int argc, char** argv) {
  const int pods = argc > 1 ? std::atoi(argv[1]) : 100;
  const int settle = argc > 2 ? std::atoi(argv[2]) : 20;
  const int idle = argc > 3 ? std::atoi(argv[3]) : 30;
  return gpuop::bench::Run(pods, settle, idle);
}
