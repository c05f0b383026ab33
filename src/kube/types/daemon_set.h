#ifndef GPUOP_KUBE_TYPES_DAEMON_SET_H_
#define GPUOP_KUBE_TYPES_DAEMON_SET_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "kube/types/object_meta.h"

namespace gpuop::kube {

// A DaemonSet's rollout state.
struct DaemonSet {
  ObjectMeta metadata;
  std::string update_strategy;  // RollingUpdate or OnDelete
  int64_t observed_generation = 0;
  int32_t desired_number_scheduled = 0;
  int32_t current_number_scheduled = 0;
  int32_t updated_number_scheduled = 0;
  int32_t number_ready = 0;
  int32_t number_available = 0;
  int32_t number_unavailable = 0;
  int32_t number_misscheduled = 0;

  // The controller has seen the latest spec and every desired pod is updated and available.
  bool RolledOut() const;
};

[[nodiscard]] absl::StatusOr<DaemonSet> ParseDaemonSet(const nlohmann::json& object);

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_TYPES_DAEMON_SET_H_
