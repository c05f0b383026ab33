// The operator at fleet scale: convergence time, resident memory and the API requests it makes
// while idle, with N GPU nodes on a real kube-apiserver (the test control plane).
//
// The nodes are Node objects as kwok would create them (NFD's NVIDIA label, the agent's GPU
// labels and inventory annotation for 8 x H100), but kwok, the controller-manager and the
// scheduler do not run: at 5,000 nodes the 8 component DaemonSets would mean 40,000 pods, whose
// creation and heartbeats are the control plane's work, not the operator's, and would saturate a
// small machine. The operator process is the real `gpuop-operator run`.
//
// Converged means: every node labelled gpuop.io/managed=true, a GPUNode per node, the operands
// applied, and the policy's status counting every node.
//
//   operator_scale_bench [nodes=1000] [idle_seconds=600] [operator_qps=200]
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "bench/proc.h"
#include "common/process.h"
#include "kube/transport/curl_http_client.h"
#include "test/cluster/control_plane.h"
#include "test/cluster/test_api.h"

namespace gpuop::bench {
namespace {

nlohmann::json GpuNode(int i) {
  const std::string name = absl::StrCat("gpu-node-", i);
  std::string gpus;
  for (int g = 0; g < 8; ++g) {
    absl::StrAppend(&gpus, g > 0 ? "," : "", "{\"index\":", g, ",\"uuid\":\"GPU-", i, "-", g,
                    "\",\"memoryMiB\":81559,\"pciBusId\":\"0000:", 17 + g,
                    ":00.0\",\"migEnabled\":false,\"migDevices\":[]}");
  }
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"annotations",
         {{"kwok.x-k8s.io/node", "fake"},
          {"gpuop.io/gpu-inventory",
           absl::StrCat("{\"driver\":\"570.86.15\",\"cuda\":\"12.8\",\"gpus\":[", gpus, "]}")}}},
        {"labels",
         {{"kubernetes.io/hostname", name},
          {"kubernetes.io/os", "linux"},
          {"feature.node.kubernetes.io/pci-10de.present", "true"},
          {"nvidia.com/gpu.present", "true"},
          {"nvidia.com/gpu.count", "8"},
          {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}}}},
      {"status",
       {{"capacity", {{"cpu", "192"}, {"memory", "2Ti"}, {"nvidia.com/gpu", "8"}}},
        {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

// The number of objects a LIST would return, from one object and remainingItemCount.
int64_t Count(test::TestApi& api, const std::string& path) {
  auto r = api.Request(
      "GET", absl::StrCat(path, path.find('?') == std::string::npos ? "?" : "&", "limit=1"));
  if (!r.ok() || r->status != 200 || !r->body.is_object()) return -1;
  const nlohmann::json& items = r->body["items"];
  const nlohmann::json& meta = r->body["metadata"];
  return static_cast<int64_t>(items.size()) + meta.value("remainingItemCount", int64_t{0});
}

// Sum of gpuop_kube_requests_total in a /metrics text.
double Requests(const std::string& metrics) {
  double total = 0;
  for (absl::string_view line : absl::StrSplit(metrics, '\n')) {
    if (!absl::ConsumePrefix(&line, "gpuop_kube_requests_total{")) continue;
    double v = 0;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) total += v;
  }
  return total;
}

int Run(int nodes, int idle_seconds, int qps) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  auto cp = test::ControlPlane::Start({});
  if (!cp.ok()) {
    std::fprintf(stderr, "control plane: %s\n", cp.status().ToString().c_str());
    return 1;
  }
  auto api = test::TestApi::Connect(**cp);
  if (!api.ok()) return 1;
  if (!api->Create("/api/v1/namespaces", {{"metadata", {{"name", "gpuop-system"}}}}).ok()) {
    return 1;
  }

  const absl::Time create_start = absl::Now();
  std::atomic<int> next{0}, failed{0};
  std::vector<std::thread> creators;
  for (int t = 0; t < 8; ++t) {
    creators.emplace_back([&] {
      auto own = test::TestApi::Connect(**cp);
      for (int i = next++; i < nodes; i = next++) {
        if (!own.ok() || !own->Create("/api/v1/nodes", GpuNode(i)).ok()) ++failed;
      }
    });
  }
  for (auto& t : creators) t.join();
  if (failed > 0) {
    std::fprintf(stderr, "%d nodes could not be created\n", failed.load());
    return 1;
  }
  std::printf("%d GPU nodes created in %.1f s\n", nodes,
              absl::ToDoubleSeconds(absl::Now() - create_start));

  // The operator, as deployed (leader election on), with the policy already there so that the
  // measurement starts at the operator's start. The CRDs come from the operator itself.
  const std::filesystem::path log = (*cp)->work_dir() / "operator.log";
  const absl::Time start = absl::Now();
  auto op = common::Subprocess::Spawn(
      {.argv = {GPUOP_OPERATOR_BINARY, "run", "--kubeconfig", (*cp)->kubeconfig().string(),
                "--namespace", "gpuop-system", "--listen", "127.0.0.1:18080", "--leader-elect",
                "--identity", "bench", "--qps", std::to_string(qps), "--burst",
                std::to_string(2 * qps), "--node-workers", "8"},
       .output_path = log});
  if (!op.ok()) return 1;
  if (!test::WaitUntil("the CRDs", absl::Seconds(60), [&]() -> absl::StatusOr<bool> {
         return Count(*api, "/apis/gpuop.io/v1alpha1/gpuclusterpolicies") >= 0;
       }).ok()) {
    return 1;
  }
  if (!api->Create("/apis/gpuop.io/v1alpha1/gpuclusterpolicies",
                   {{"apiVersion", "gpuop.io/v1alpha1"},
                    {"kind", "GPUClusterPolicy"},
                    {"metadata", {{"name", "default"}}},
                    {"spec", {{"driver", {{"version", "570.86.15"}}}}}})
           .ok()) {
    return 1;
  }
  const absl::Status converged =
      test::WaitUntil("convergence", absl::Minutes(30), [&]() -> absl::StatusOr<bool> {
        // Cheap checks first; the labelled nodes need a full LIST (a LIST with a label
        // selector carries no remainingItemCount).
        auto policy = api->Get("/apis/gpuop.io/v1alpha1/gpuclusterpolicies/default");
        if (!policy.ok() || !policy->contains("status") ||
            (*policy)["status"]["nodes"].value("total", 0) != nodes) {
          return false;
        }
        if (Count(*api, "/apis/gpuop.io/v1alpha1/gpunodes") < nodes) return false;
        auto labelled = api->Get("/api/v1/nodes?labelSelector=gpuop.io%2Fmanaged%3Dtrue");
        return labelled.ok() && static_cast<int>((*labelled)["items"].size()) == nodes;
      });
  if (!converged.ok()) {
    std::fprintf(stderr, "%s (operator log: %s)\n", converged.ToString().c_str(), log.c_str());
    (*cp)->KeepWorkDir();
    return 1;
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const pid_t pid = op->pid();
  std::printf("converged in %.1f s from the operator's start (%.0f nodes/s); operator CPU %.1f s\n",
              seconds, nodes / seconds, CpuSeconds(pid));
  std::printf("operator RSS after convergence %.1f MiB (anonymous %.1f), peak %.1f MiB\n",
              StatusMib(pid, "VmRSS"), StatusMib(pid, "RssAnon"), StatusMib(pid, "VmHWM"));

  auto http = kube::CurlHttpClient::Create({});
  if (!http.ok()) return 1;
  auto scrape = [&]() -> std::string {
    auto r = (*http)->Send({.url = "http://127.0.0.1:18080/metrics"});
    return r.ok() ? r->body : "";
  };
  absl::SleepFor(absl::Seconds(5));  // let the last status writes land
  const double before = Requests(scrape());
  const double cpu_before = CpuSeconds(pid);
  absl::SleepFor(absl::Seconds(idle_seconds));
  const std::string after_text = scrape();
  const double idle_requests = Requests(after_text) - before;
  std::printf(
      "idle %d s: %.0f API requests (%.2f/min; Lease renewals every 2 s are %d of them), "
      "CPU %.2f s\n",
      idle_seconds, idle_requests, idle_requests / (idle_seconds / 60.0), idle_seconds / 2,
      CpuSeconds(pid) - cpu_before);
  std::printf("operator RSS after idle %.1f MiB (anonymous %.1f)\n", StatusMib(pid, "VmRSS"),
              StatusMib(pid, "RssAnon"));
  std::printf("\nrequests by verb and code over the whole run:\n");
  for (absl::string_view line : absl::StrSplit(after_text, '\n')) {
    if (absl::StartsWith(line, "gpuop_kube_requests_total{")) {
      std::printf("  %s\n", std::string(line).c_str());
    }
  }
  (void)op->Stop(absl::Seconds(20));
  return 0;
}

}  // namespace
}  // namespace gpuop::bench

int main(int argc, char** argv) {
  const int nodes = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int idle = argc > 2 ? std::atoi(argv[2]) : 600;
  const int qps = argc > 3 ? std::atoi(argv[3]) : 200;
  return gpuop::bench::Run(nodes, idle, qps);
}
