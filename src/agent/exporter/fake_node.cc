#include "agent/exporter/fake_node.h"

#include <stdlib.h>

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace gpuop::agent::exporter::testing {

std::string FakeNvmlLibrary() { return GPUOP_FAKE_NVML_LIBRARY; }

absl::StatusOr<std::unique_ptr<FakeNode>> FakeNode::Start(const Options& options) {
  std::unique_ptr<FakeNode> node(new FakeNode());
  setenv("GPUOP_FAKE_NVML_SCENARIO", options.scenario.c_str(), 1);
  GPUOP_ASSIGN_OR_RETURN(node->plugin_nvml_,
                         hw::NvmlAccelerator::Open({.library_path = FakeNvmlLibrary()}));
  GPUOP_ASSIGN_OR_RETURN(node->exporter_nvml_,
                         hw::NvmlAccelerator::Open({.library_path = FakeNvmlLibrary()}));
  const std::filesystem::path plugin_dir = node->dir_.path() / "device-plugins";
  node->kubelet_ = std::make_unique<fakes::FakeKubelet>(fakes::FakeKubeletOptions{
      .device_plugin_dir = plugin_dir, .pod_resources_socket = node->pod_resources_socket()});
  GPUOP_RETURN_IF_ERROR(node->kubelet_->Start());
  const std::filesystem::path config_dir = node->dir_.path() / "config";
  GPUOP_RETURN_IF_ERROR(common::WriteFileAtomically(config_dir / "default", options.plugin_config));
  node->source_ = std::make_unique<ConfigSource>(config_dir, "default");
  node->agent_ = std::make_unique<DevicePluginAgent>(
      std::vector<hw::Accelerator*>{node->plugin_nvml_.get()}, *node->source_,
      DevicePluginAgentOptions{.manager = {.plugin_dir = plugin_dir},
                               .health = {.event_wait = absl::Milliseconds(100)},
                               .layout_file = node->dir_.path() / "run" / "layout",
                               .poll = absl::Milliseconds(100)});
  GPUOP_RETURN_IF_ERROR(node->agent_->Start());
  GPUOP_RETURN_IF_ERROR(
      node->kubelet_->WaitForHealthyDevices(options.resource, options.devices, absl::Seconds(30)));
  return node;
}

absl::StatusOr<std::unique_ptr<FakeNode>> FakeNode::StartWithPods(int pods) {
  const int replicas = ReplicasForPods(pods);
  const std::string sharing = replicas == 1 ? ""
                                            : absl::StrCat(
                                                  "sharing:\n  timeSlicing:\n    resources:\n"
                                                  "    - name: nvidia.com/gpu\n      replicas: ",
                                                  replicas, "\n");
  GPUOP_ASSIGN_OR_RETURN(std::unique_ptr<FakeNode> node,
                         Start({.plugin_config = sharing, .devices = 8 * replicas}));
  for (int i = 0; i < pods; ++i) {
    GPUOP_RETURN_IF_ERROR(
        node->Allocate("bench", absl::StrCat("pod-", i), "nvidia.com/gpu").status());
  }
  return node;
}

FakeNode::~FakeNode() {
  agent_.reset();
  kubelet_.reset();
  exporter_nvml_.reset();
  plugin_nvml_.reset();
  unsetenv("GPUOP_FAKE_NVML_SCENARIO");
}

absl::StatusOr<std::vector<std::string>> FakeNode::Allocate(const std::string& pod_namespace,
                                                            const std::string& pod,
                                                            const std::string& resource,
                                                            int count) {
  GPUOP_ASSIGN_OR_RETURN(fakes::PodAllocation allocation,
                         kubelet_->AllocatePod({.pod_namespace = pod_namespace,
                                                .pod_name = pod,
                                                .container = "main",
                                                .resource = resource,
                                                .count = count}));
  return allocation.device_ids;
}

}  // namespace gpuop::agent::exporter::testing
