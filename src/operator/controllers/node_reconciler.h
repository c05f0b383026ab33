#ifndef GPUOP_OPERATOR_CONTROLLERS_NODE_RECONCILER_H_
#define GPUOP_OPERATOR_CONTROLLERS_NODE_RECONCILER_H_

#include <string>

#include "absl/status/statusor.h"
#include "kube/client/client.h"
#include "kube/controller/controller.h"
#include "operator/cache/cache.h"

namespace gpuop::op {

// Reconciles one Node: keeps the operator's labels on it right (managed, per-component deploy
// labels, its pool's driver, sharing and MIG settings) and its GPUNode's status current. Reads
// only the cache; writes a label patch or a GPUNode status only when something would change.
//
// Thread-safe: the controller may reconcile different nodes at once.
class NodeReconciler {
 public:
  NodeReconciler(kube::Client& client, OperatorCache& cache) : client_(client), cache_(cache) {}

  [[nodiscard]] absl::StatusOr<kube::Result> Reconcile(const std::string& node_name);

 private:
  absl::Status SyncGpuNode(const NodeEntry& entry, const PolicySpec* policy, const NodePool* pool);

  kube::Client& client_;
  OperatorCache& cache_;
};

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_CONTROLLERS_NODE_RECONCILER_H_
