#ifndef GPUOP_OPERATOR_NODES_INVENTORY_H_
#define GPUOP_OPERATOR_NODES_INVENTORY_H_

#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::op {

// The Node annotation in which the agent publishes the node's GPUs (agent/labels/inventory.h
// writes it): {"driver", "cuda", "gpus": [{"index", "uuid", "product", "memoryMiB", "pciBusId",
// "migEnabled", "migDevices": [{"profile", "uuid"}]}]}. Anyone who may patch the Node can write
// it, so it is read as untrusted input.
inline constexpr char kGpuInventoryAnnotation[] = "gpuop.io/gpu-inventory";

// The most GPUs, and MIG devices per GPU, an inventory may list (far beyond any machine).
inline constexpr size_t kMaxInventoryGpus = 256;
inline constexpr size_t kMaxInventoryMigDevices = 64;

struct GpuInventory {
  std::string driver;
  std::string cuda;
  // The GPUs in the shape of the GPUNode status's `gpus`: only the known fields, each checked.
  nlohmann::json gpus = nlohmann::json::array();
};

// Reads the annotation's value. Every field is optional; unknown ones are ignored.
// InvalidArgument naming the annotation and the field ("gpuop.io/gpu-inventory: driver: must be
// a string") when it is not JSON, nests too deep, or a field has the wrong type or range. Never
// throws.
[[nodiscard]] absl::StatusOr<GpuInventory> ParseGpuInventory(absl::string_view annotation);

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_NODES_INVENTORY_H_
