#ifndef GPUOP_AGENT_EXPORTER_FAKE_NODE_H_
#define GPUOP_AGENT_EXPORTER_FAKE_NODE_H_

#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "agent/deviceplugin/agent.h"
#include "hw/nvml/nvml_accelerator.h"
#include "test/fakes/kubelet/fake_kubelet.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::exporter::testing {

// A simulated GPU node for the exporter's tests and benchmark: a fake NVML machine (a preset of
// test/fakes/nvml), the fake kubelet, and gpuop's device plugin agent serving that machine to
// it, so that PodResources reports exactly the device IDs the real plugin hands out (GPU UUIDs,
// MIG UUIDs, "<uuid>::<n>" replicas). Sets GPUOP_FAKE_NVML_SCENARIO for the process.
class FakeNode {
 public:
  struct Options {
    std::string scenario = "h100-8x-nvswitch";
    std::string plugin_config;  // the device plugin's YAML (sharing, MIG strategy)
    std::string resource = "nvidia.com/gpu";
    int devices = 8;  // healthy devices of `resource` to wait for
  };

  // Starts everything and waits until the kubelet sees the devices.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<FakeNode>> Start(const Options& options);
  // An 8-GPU node ("h100-8x-nvswitch") with `pods` pods in namespace "bench" holding one
  // nvidia.com/gpu each: whole GPUs up to 8 pods, time-sliced replicas
  // (ReplicasForPods(pods) per GPU) beyond.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<FakeNode>> StartWithPods(int pods);
  static int ReplicasForPods(int pods) { return pods > 8 ? (pods + 7) / 8 : 1; }
  ~FakeNode();

  // An NVML handle of the exporter's own: events go to one waiter per handle, and the device
  // plugin agent has its own.
  hw::NvmlAccelerator& exporter_nvml() { return *exporter_nvml_; }
  fakes::FakeKubelet& kubelet() { return *kubelet_; }
  std::filesystem::path pod_resources_socket() const { return dir_.path() / "pod-resources.sock"; }
  const std::filesystem::path& dir() const { return dir_.path(); }

  // Admits `count` devices of `resource` to one container.
  [[nodiscard]] absl::StatusOr<std::vector<std::string>> Allocate(const std::string& pod_namespace,
                                                                  const std::string& pod,
                                                                  const std::string& resource,
                                                                  int count = 1);

 private:
  FakeNode() = default;

  fakes::TempDir dir_;
  std::unique_ptr<hw::NvmlAccelerator> plugin_nvml_;
  std::unique_ptr<hw::NvmlAccelerator> exporter_nvml_;
  std::unique_ptr<fakes::FakeKubelet> kubelet_;
  std::unique_ptr<ConfigSource> source_;
  std::unique_ptr<DevicePluginAgent> agent_;
};

// The fake libnvidia-ml.so.1 this build made.
std::string FakeNvmlLibrary();

}  // namespace gpuop::agent::exporter::testing

#endif  // GPUOP_AGENT_EXPORTER_FAKE_NODE_H_
