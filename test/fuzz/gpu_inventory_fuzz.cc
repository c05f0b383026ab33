// The gpuop.io/gpu-inventory Node annotation, which anyone who may patch the Node writes, through
// the GPUNode status the operator computes from it.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "operator/nodes/gpu_node_status.h"
#include "operator/nodes/inventory.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string annotation(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<gpuop::op::GpuInventory> inventory = gpuop::op::ParseGpuInventory(annotation);
  if (inventory.ok()) (void)inventory->gpus.dump();
  gpuop::kube::Node node;
  node.metadata.name = "fuzz";
  node.metadata.annotations = gpuop::kube::Labels(
      std::map<std::string, std::string>{{gpuop::op::kGpuInventoryAnnotation, annotation}});
  (void)gpuop::op::GpuNodeStatus(node, nullptr, "", {}).dump();
  return 0;
}
