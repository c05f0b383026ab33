// Latency of the device plugin's Allocate and GetPreferredAllocation as the kubelet sees them:
// real gRPC calls over the plugin's unix socket, for 8 whole GPUs on an NVSwitch fabric and for
// 8 GPUs × 7 MIG devices. Prints p50/p99 over many calls.
// Usage: deviceplugin_bench [--calls N]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/deviceplugin/manager.h"
#include "agent/deviceplugin/plugin_server.h"
#include "test/fakes/kubelet/fake_kubelet.h"

namespace {

using gpuop::agent::AdvertisedDevice;
using gpuop::agent::PluginDevice;

std::vector<gpuop::hw::Gpu> EightGpus() {
  std::vector<gpuop::hw::Gpu> gpus;
  for (int i = 0; i < 8; ++i) {
    gpuop::hw::Gpu g{.vendor = gpuop::hw::Vendor::kNvidia,
                     .index = i,
                     .uuid = absl::StrCat("GPU-6b2f0c1e-8d3a-4f5b-9c7d-00000000000", i),
                     .numa_node = i / 4};
    for (int j = 0; j < 8; ++j) {
      if (j != i) {
        g.links.push_back(
            {.peer_index = j, .kind = gpuop::hw::LinkKind::kGpuFabric, .fabric_links = 18});
      }
    }
    gpus.push_back(g);
  }
  return gpus;
}

struct Stats {
  double p50, p99;
};

Stats Measure(int calls, const std::function<void()>& call) {
  std::vector<double> us;
  us.reserve(static_cast<size_t>(calls));
  for (int i = 0; i < calls; ++i) {
    const absl::Time start = absl::Now();
    call();
    us.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[static_cast<size_t>(0.99 * static_cast<double>(us.size() - 1))]};
}

void Run(const std::string& title, std::vector<PluginDevice> devices,
         const std::vector<gpuop::hw::Gpu>& gpus, int request, int calls) {
  char templ[] = "/tmp/gpuop-dp-bench-XXXXXX";
  const std::filesystem::path dir = mkdtemp(templ);
  gpuop::agent::ResourceServer server({.resource = "nvidia.com/gpu", .plugin_dir = dir});
  if (!server.Start().ok()) std::abort();
  std::vector<AdvertisedDevice> advertised;
  std::vector<std::string> ids;
  for (auto& d : devices) {
    ids.push_back(d.id);
    advertised.push_back({.device = d, .healthy = true});
  }
  server.SetDevices(advertised, gpuop::agent::Topology(gpus));
  auto channel = grpc::CreateChannel(absl::StrCat("unix://", server.socket_path().string()),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1beta1::DevicePlugin::NewStub(channel);

  v1beta1::PreferredAllocationRequest preferred;
  auto* container = preferred.add_container_requests();
  for (const auto& id : ids) container->add_available_deviceids(id);
  container->set_allocation_size(request);
  v1beta1::AllocateRequest allocate;
  auto* alloc = allocate.add_container_requests();
  for (int i = 0; i < request; ++i) alloc->add_devices_ids(ids[static_cast<size_t>(i)]);

  auto call_preferred = [&] {
    grpc::ClientContext ctx;
    v1beta1::PreferredAllocationResponse response;
    if (!stub->GetPreferredAllocation(&ctx, preferred, &response).ok()) std::abort();
  };
  auto call_allocate = [&] {
    grpc::ClientContext ctx;
    v1beta1::AllocateResponse response;
    if (!stub->Allocate(&ctx, allocate, &response).ok()) std::abort();
  };
  for (int i = 0; i < 100; ++i) {  // Warm the connection.
    call_preferred();
    call_allocate();
  }
  const Stats p = Measure(calls, call_preferred);
  const Stats a = Measure(calls, call_allocate);
  std::printf(
      "%-34s %3zu devices, ask %d: GetPreferredAllocation p50 %6.1f us p99 %6.1f us | "
      "Allocate p50 %6.1f us p99 %6.1f us\n",
      title.c_str(), devices.size(), request, p.p50, p.p99, a.p50, a.p99);
  server.Stop();
  std::filesystem::remove_all(dir);
}

// Time from a kubelet restart (every socket deleted, kubelet.sock re-created) until the plugin
// has registered again and the kubelet sees all devices healthy.
void KubeletRestart(const std::vector<PluginDevice>& devices,
                    const std::vector<gpuop::hw::Gpu>& gpus, int restarts) {
  char templ[] = "/tmp/gpuop-dp-restart-XXXXXX";
  const std::filesystem::path dir = mkdtemp(templ);
  gpuop::fakes::FakeKubelet kubelet({.device_plugin_dir = (dir / "plugins").string()});
  if (!kubelet.Start().ok()) std::abort();
  gpuop::agent::DevicePluginManager manager({.plugin_dir = dir / "plugins"});
  if (!manager.Start().ok()) std::abort();
  gpuop::agent::ResourcePlan plan;
  plan.resources["nvidia.com/gpu"] = devices;
  if (!manager.Apply(plan, {}, gpuop::agent::Topology(gpus), nullptr).ok()) std::abort();
  const auto n = static_cast<int64_t>(devices.size());
  if (!kubelet.WaitForHealthyDevices("nvidia.com/gpu", n, absl::Seconds(30)).ok()) std::abort();
  std::vector<double> ms;
  for (int i = 0; i < restarts; ++i) {
    const absl::Time start = absl::Now();
    if (!kubelet.Restart().ok()) std::abort();
    if (!kubelet.WaitForRegistrations("nvidia.com/gpu", i + 2, absl::Seconds(30)).ok() ||
        !kubelet.WaitForHealthyDevices("nvidia.com/gpu", n, absl::Seconds(30)).ok()) {
      std::abort();
    }
    ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
  }
  std::sort(ms.begin(), ms.end());
  std::printf(
      "kubelet restart -> re-registered, all devices healthy: p50 %.1f ms, max %.1f ms "
      "(%d restarts)\n",
      ms[ms.size() / 2], ms.back(), restarts);
  manager.Stop();
  kubelet.Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 5000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::atoi(argv[i + 1]);
  }
  const auto gpus = EightGpus();
  std::vector<PluginDevice> whole;
  for (const auto& g : gpus) {
    whole.push_back({.id = g.uuid,
                     .physical_id = g.uuid,
                     .gpu_index = g.index,
                     .gpu_id = g.uuid,
                     .numa_node = g.numa_node,
                     .cdi_name = "nvidia.com/gpu=" + g.uuid});
  }
  std::vector<PluginDevice> mig;
  for (const auto& g : gpus) {
    for (int m = 0; m < 7; ++m) {
      const std::string uuid =
          absl::StrCat("MIG-1c9e5f2a-7b4d-4e8a-b6c3-", g.index, "0000000000", m);
      mig.push_back({.id = uuid,
                     .physical_id = uuid,
                     .gpu_index = g.index,
                     .gpu_id = g.uuid,
                     .mig = true,
                     .numa_node = g.numa_node,
                     .cdi_name = "nvidia.com/gpu=" + uuid});
    }
  }
  Run("8 GPUs (NVSwitch)", whole, gpus, 1, calls);
  Run("8 GPUs (NVSwitch)", whole, gpus, 4, calls);
  Run("8 GPUs (NVSwitch)", whole, gpus, 8, calls);
  Run("8 GPUs x 7 MIG", mig, gpus, 1, calls);
  Run("8 GPUs x 7 MIG", mig, gpus, 7, calls);
  KubeletRestart(whole, gpus, 20);
  return 0;
}
