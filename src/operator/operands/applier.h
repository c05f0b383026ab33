#ifndef GPUOP_OPERATOR_OPERANDS_APPLIER_H_
#define GPUOP_OPERATOR_OPERANDS_APPLIER_H_

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "kube/client/client.h"

namespace gpuop::op {

// The annotation on every applied object holding the hash of what was rendered, so that an
// object that already matches is not written again.
inline constexpr char kSpecHashAnnotation[] = "gpuop.io/spec-hash";

// The value of kSpecHashAnnotation for a rendered object: stable across processes, so a
// restarted operator recognises what its predecessor applied.
std::string SpecHash(const nlohmann::json& rendered);

// What one sync did.
struct ApplyReport {
  int applied = 0;    // created or changed
  int unchanged = 0;  // already as rendered
  int pruned = 0;     // deleted: managed by the operator, no longer rendered
  // One line per failed write: "apply DaemonSet gpuop-system/gpuop-exporter: <error>". A failure
  // does not stop the others.
  std::vector<std::string> errors;
  // One line per rendered object left alone because another owner has it: "RuntimeClass
  // nvidia: exists and is not managed by gpuop-operator (...); left as it is". Not a failure.
  std::vector<std::string> skipped;

  bool ok() const { return errors.empty(); }
};

// Makes the cluster hold exactly the rendered operands: server-side applies each rendered
// object whose spec-hash annotation differs from the live one (or that is missing), and deletes
// every object of the same kinds that carries the operator's managed-by label but is no longer
// rendered. One LIST per kind (by label selector), then only the writes that change something.
//
// Kinds: ServiceAccount, ConfigMap, DaemonSet, Service, ServiceMonitor (in `ns`), ClusterRole,
// ClusterRoleBinding, RuntimeClass. A rendered object of another kind is an InvalidArgument
// error (a renderer bug). ServiceMonitor is the Prometheus Operator's: where its API is not
// served there is nothing to prune, and applying one is an error saying so.
//
// A RuntimeClass is a cluster-wide name other installers use too (NVIDIA's GPU operator and
// toolkit create "nvidia"): one that exists without the operator's managed-by label is never
// applied over, and never pruned; it is listed in ApplyReport::skipped instead. That costs one GET
// per sync while someone else owns it.
//
// Thread-safe (no state); `client` must outlive it.
class OperandApplier {
 public:
  static constexpr char kFieldManager[] = "gpuop-operator";

  OperandApplier(kube::Client& client, std::string ns) : client_(client), ns_(std::move(ns)) {}

  // `desired` in apply order (RenderOperands' order). Pruning deletes DaemonSets first and
  // RBAC last, so a component never runs without its permissions. Fails only when a LIST
  // fails (then nothing is pruned); write failures are in the report.
  // `keep` (when set) spares live objects from pruning: (kind, name) -> true keeps it.
  [[nodiscard]] absl::StatusOr<ApplyReport> Sync(
      const std::vector<nlohmann::json>& desired,
      const std::function<bool(const std::string& kind, const std::string& name)>& keep = nullptr);

 private:
  kube::Client& client_;
  const std::string ns_;
};

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_OPERANDS_APPLIER_H_
