// A GPUClusterPolicy as JSON, as a person writes it (and an API server that does not validate
// it, or validates it with an older CRD, lets it through).
#include <cstddef>
#include <cstdint>

#include "common/json_access.h"
#include "operator/api/policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<nlohmann::json> object =
      gpuop::common::ParseJson({reinterpret_cast<const char*>(data), size}, "policy");
  if (!object.ok()) return 0;
  absl::StatusOr<gpuop::op::ClusterPolicy> policy = gpuop::op::ParseClusterPolicy(*object);
  if (policy.ok()) (void)policy->spec.upgrade.max_unavailable.Resolve(1000);
  return 0;
}
