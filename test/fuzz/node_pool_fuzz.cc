// A GPUNodePool as JSON (its nodeSelector goes through kube::LabelSelector).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "common/json_access.h"
#include "operator/api/node_pool.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<nlohmann::json> object =
      gpuop::common::ParseJson({reinterpret_cast<const char*>(data), size}, "pool");
  if (!object.ok()) return 0;
  absl::StatusOr<gpuop::op::NodePool> pool = gpuop::op::ParseNodePool(*object);
  if (pool.ok())
    (void)pool->node_selector.Matches(
        gpuop::kube::Labels(std::map<std::string, std::string>{{"a", "b"}}));
  return 0;
}
