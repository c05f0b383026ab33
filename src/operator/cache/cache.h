#ifndef GPUOP_OPERATOR_CACHE_CACHE_H_
#define GPUOP_OPERATOR_CACHE_CACHE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kube/client/client.h"
#include "kube/informer/informer.h"
#include "kube/types/daemon_set.h"
#include "kube/types/node.h"
#include "operator/api/node_pool.h"
#include "operator/api/policy.h"
#include "operator/nodes/driver_clients.h"

namespace gpuop::op {

// What the operator keeps of each object it watches: only the fields its controllers read, so
// that thousands of Nodes fit in tens of MiB.

struct NodeEntry {
  kube::Node node;
  // Node labelling's keys (IsNodeLabellingKey) the operator's field manager owns, from
  // managedFields. Not the upgrade and remediation state labels, which it owns too.
  std::vector<std::string> owned_labels;
  // status.nodeInfo.kernelVersion, as the kubelet reports `uname -r`.
  std::string kernel_version;
};

// A policy or pool that failed to parse is kept with its error, so status can say why.
struct PolicyEntry {
  std::string name;
  std::string uid;
  int64_t generation = 0;
  absl::StatusOr<ClusterPolicy> policy;
  // The latest spec of this object (same uid) that parsed, while `policy` is an error: what the
  // operator keeps running until the spec is fixed. Empty when this process has not seen one.
  std::optional<ClusterPolicy> last_good;
};
struct PoolEntry {
  std::string name;
  int64_t generation = 0;
  absl::StatusOr<NodePool> pool;
};

// The entry for a GPUClusterPolicy object, given the entry of its previous version (null when
// none): a spec that does not parse inherits the last good spec of the same object (same uid).
PolicyEntry MakePolicyEntry(const nlohmann::json& object, const PolicyEntry* previous);

// A pod of one of the operator's DaemonSets.
struct OperandPod {
  std::string name;
  std::string node;
  std::string component;  // app.kubernetes.io/component
  std::string owner;      // the DaemonSet
  std::string revision;   // controller-revision-hash
  bool ready = false;
  int32_t restarts = 0;
  std::string phase;
  absl::Time created = absl::InfinitePast();
};

// Reads of one node's operand pods (OperatorCache::PodsOn) that the upgrade and remediation
// share.
using OperandPods = std::vector<std::shared_ptr<const OperandPod>>;
// The node's GPU clients (driver_clients.h) from its labels and its operand pods.
DriverClients ClientsOf(const kube::Labels& labels, const PolicySpec& policy,
                        const OperandPods& pods);
// Whether a validator pod created at or after `driver_created` is Ready: only a validator that
// started after the driver pod validated that driver. nullopt when there is no such pod.
std::optional<bool> ValidatorReadySince(const OperandPods& pods, absl::Time driver_created);

// A GPUNode as written: enough to skip writes that would change nothing.
struct GpuNodeEntry {
  std::string name;
  std::string uid;
  uint64_t status_hash = 0;
};

// A stable hash of a JSON value (for comparing what is written with what would be).
uint64_t JsonHash(const nlohmann::json& value);

// The operator's view of the cluster: informers on Nodes, GPUClusterPolicies, GPUNodePools,
// GPUNodes and, in the operator's namespace, its DaemonSets and their pods. The controllers read
// these stores; only writes go to the API server.
class OperatorCache {
 public:
  static constexpr char kFieldManager[] = "gpuop-operator";

  OperatorCache(kube::Client& client, const std::string& ns);
  ~OperatorCache();

  void Start();
  // Waits until every informer has listed once; false after `timeout`.
  bool WaitForSync(absl::Duration timeout) const;
  void Stop();

  kube::Informer<NodeEntry>& nodes() { return *nodes_; }
  kube::Informer<PolicyEntry>& policies() { return *policies_; }
  kube::Informer<PoolEntry>& pools() { return *pools_; }
  kube::Informer<GpuNodeEntry>& gpu_nodes() { return *gpu_nodes_; }
  kube::Informer<kube::DaemonSet>& daemon_sets() { return *daemon_sets_; }
  kube::Informer<OperandPod>& pods() { return *pods_; }

  // The valid pools, sorted by name.
  std::vector<NodePool> ValidPools() const;
  // The policy named "default" to run: as parsed, or while its spec does not parse, the last
  // spec of the same object that did (PolicyEntry::last_good). Empty when there is no policy or
  // it never parsed; PolicyPresent() tells the two apart.
  std::optional<ClusterPolicy> Policy() const;
  // Whether a policy named "default" exists, valid or not.
  bool PolicyPresent() const;
  // Pods of the operator's DaemonSets on one node (index "node").
  std::vector<std::shared_ptr<const OperandPod>> PodsOn(const std::string& node) const;

 private:
  std::unique_ptr<kube::Informer<NodeEntry>> nodes_;
  std::unique_ptr<kube::Informer<PolicyEntry>> policies_;
  std::unique_ptr<kube::Informer<PoolEntry>> pools_;
  std::unique_ptr<kube::Informer<GpuNodeEntry>> gpu_nodes_;
  std::unique_ptr<kube::Informer<kube::DaemonSet>> daemon_sets_;
  std::unique_ptr<kube::Informer<OperandPod>> pods_;
};

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_CACHE_CACHE_H_
