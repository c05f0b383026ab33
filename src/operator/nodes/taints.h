#ifndef GPUOP_OPERATOR_NODES_TAINTS_H_
#define GPUOP_OPERATOR_NODES_TAINTS_H_

#include <nlohmann/json.hpp>

#include "kube/types/node.h"

namespace gpuop::op {

// A taint as a Node's spec.taints holds it: key, effect and (when not empty) value. For writes
// that replace spec.taints as a whole.
inline nlohmann::json TaintToJson(const kube::Taint& taint) {
  nlohmann::json out = {{"key", taint.key}, {"effect", taint.effect}};
  if (!taint.value.empty()) out["value"] = taint.value;
  return out;
}

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_NODES_TAINTS_H_
