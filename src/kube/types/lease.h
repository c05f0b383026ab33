#ifndef GPUOP_KUBE_TYPES_LEASE_H_
#define GPUOP_KUBE_TYPES_LEASE_H_

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kube/types/object_meta.h"

namespace gpuop::kube {

// coordination.k8s.io/v1 Lease.
struct Lease {
  ObjectMeta metadata;
  std::string holder_identity;
  int32_t lease_duration_seconds = 0;
  std::optional<absl::Time> acquire_time;
  std::optional<absl::Time> renew_time;
  int32_t lease_transitions = 0;

  // The object to write: metadata (name, namespace, and resourceVersion when set) and spec.
  nlohmann::json ToJson() const;
};

[[nodiscard]] absl::StatusOr<Lease> ParseLease(const nlohmann::json& object);

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_TYPES_LEASE_H_
