// What the exporter costs on a simulated 8 x H100 node with ~100 pods holding time-sliced
// replicas: CPU per collection cycle and per scrape, and resident memory, measured on an
// exporter running in a process of its own (this binary re-executed with --serve) that reads
// PodResources from the fake kubelet in this process, as it would from the real one.
//
//   gpuop_exporter_bench [pods=100] [scrapes=2000]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/exporter/collector.h"
#include "agent/exporter/exporter.h"
#include "agent/exporter/fake_node.h"
#include "agent/exporter/process_stats.h"
#include "bench/proc.h"
#include "common/process.h"
#include "kube/transport/curl_http_client.h"

namespace gpuop::agent::exporter {
namespace {

using testing::FakeNode;

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

ProcessStats StatsOf(pid_t pid) {
  const std::string dir = absl::StrCat("/proc/", pid, "/");
  return ParseProcessStats(bench::ReadFile(dir + "stat"), bench::ReadFile(dir + "statm"),
                           sysconf(_SC_PAGESIZE), sysconf(_SC_CLK_TCK))
      .value_or(ProcessStats{});
}

// The child: an exporter alone, as the agent runs it.
int Serve(const std::string& socket, const std::string& port_file) {
  auto nvml = hw::NvmlAccelerator::Open({.library_path = testing::FakeNvmlLibrary()});
  if (!nvml.ok()) return 1;
  Exporter exporter({.listen_address = "127.0.0.1:0",
                     .interval = absl::Seconds(1),
                     .pod_resources_socket = socket,
                     .node_name = "bench-node",
                     .accelerators = {nvml->get()}});
  if (!exporter.Start().ok()) return 1;
  std::ofstream(port_file + ".tmp") << exporter.port();
  std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  while (true) pause();  // until the parent's SIGTERM
}

int Run(int pods, int scrapes) {
  const int replicas = FakeNode::ReplicasForPods(pods);
  auto node = FakeNode::StartWithPods(pods);
  if (!node.ok()) {
    std::fprintf(stderr, "fake node: %s\n", node.status().ToString().c_str());
    return 1;
  }

  // In process: one cycle's CPU on the collecting thread (NVML calls, the PodResources call,
  // attribution, energy, rendering).
  {
    std::unique_ptr<podresources::PodLister> lister =
        podresources::NewKubeletPodLister((*node)->pod_resources_socket());
    Collector collector({.accelerators = {&(*node)->exporter_nvml()}, .pods = lister.get()});
    collector.CollectOnce();
    constexpr int kCycles = 50;
    const double start = ThreadCpuSeconds();
    for (int i = 0; i < kCycles; ++i) collector.CollectOnce();
    const double per_cycle = (ThreadCpuSeconds() - start) / kCycles;
    const std::string text = *collector.Exposition();
    int64_t series = 0;
    for (char c : text) series += c == '\n';
    std::printf("pods holding GPUs             %d (%d replicas per GPU)\n", pods, replicas);
    std::printf("exposition                    %zu bytes, ~%lld lines\n", text.size(),
                static_cast<long long>(series));
    std::printf("collection cycle, thread CPU  %.3f ms\n", per_cycle * 1e3);
  }

  // Out of process: the exporter as the agent runs it.
  const std::string port_file = ((*node)->dir() / "port").string();
  auto child = common::Subprocess::Spawn(
      {.argv = {"/proc/self/exe", "--serve", (*node)->pod_resources_socket().string(), port_file},
       .env = {"GPUOP_FAKE_NVML_SCENARIO=h100-8x-nvswitch"}});
  if (!child.ok()) return 1;
  int port = 0;
  for (int i = 0; i < 500 && port == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
    absl::SimpleAtoi(bench::ReadFile(port_file), &port);
  }
  if (port == 0) return 1;
  auto client = *kube::CurlHttpClient::Create({});
  const std::string url = absl::StrCat("http://127.0.0.1:", port, "/metrics");
  absl::SleepFor(absl::Seconds(3));

  constexpr absl::Duration kIdle = absl::Seconds(10);  // 10 cycles at 1 s
  const double idle_start = bench::CpuSeconds(child->pid());
  absl::SleepFor(kIdle);
  const double cpu_per_second =
      (bench::CpuSeconds(child->pid()) - idle_start) / absl::ToDoubleSeconds(kIdle);
  std::printf(
      "exporter process, all threads %.2f ms CPU per second (1 s interval: one cycle, "
      "two event waits, gRPC timers)\n",
      cpu_per_second * 1e3);

  const absl::Time scrape_start = absl::Now();
  const double before = bench::CpuSeconds(child->pid());
  size_t bytes = 0;
  for (int i = 0; i < scrapes; ++i) {
    auto response = client->Send({.url = url});
    if (!response.ok() || response->status != 200) return 1;
    bytes = response->body.size();
  }
  const double after = bench::CpuSeconds(child->pid());
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - scrape_start);
  const double scrape_cpu = (after - before - cpu_per_second * elapsed) / scrapes;
  const ProcessStats memory = StatsOf(child->pid());
  std::printf("scrape, exporter CPU          %.3f ms (%d scrapes of %zu bytes, %.0f/s)\n",
              scrape_cpu * 1e3, scrapes, bytes, scrapes / elapsed);
  std::printf(
      "exporter RSS                  %.1f MiB now (anonymous %.1f, files %.1f), "
      "%.1f MiB peak\n",
      memory.resident_memory_bytes / (1 << 20), bench::StatusMib(child->pid(), "RssAnon"),
      bench::StatusMib(child->pid(), "RssFile"), bench::StatusMib(child->pid(), "VmHWM"));
  (void)child->Stop(absl::Seconds(5));
  return 0;
}

}  // namespace
}  // namespace gpuop::agent::exporter

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--serve") {
    return gpuop::agent::exporter::Serve(argv[2], argv[3]);
  }
  int pods = 100, scrapes = 2000;
  if (argc > 1) pods = std::atoi(argv[1]);
  if (argc > 2) scrapes = std::atoi(argv[2]);
  return gpuop::agent::exporter::Run(pods, scrapes);
}
