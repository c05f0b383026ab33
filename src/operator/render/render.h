#ifndef GPUOP_OPERATOR_RENDER_RENDER_H_
#define GPUOP_OPERATOR_RENDER_RENDER_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "operator/api/node_pool.h"
#include "operator/api/policy.h"

namespace gpuop::op {

// Node labels the operator sets and the rendered DaemonSets select on.
inline constexpr char kManagedLabel[] = "gpuop.io/managed";  // "true" on managed GPU nodes
// gpuop.io/deploy.<component>: "true" runs the component on the node; any other value
// ("false", "paused", "paused-for-upgrade", "paused-for-mig-change", "host-driver") keeps it off.
inline constexpr char kDeployLabelPrefix[] = "gpuop.io/deploy.";
// The driver DaemonSet a node belongs to: "default" or the name of its GPUNodePool.
inline constexpr char kDriverPoolLabel[] = "gpuop.io/driver.pool";
// The image-tag suffix of the node's driver when the driver image depends on the node
// (DriverPerNode): its OS ("ubuntu22.04", from os-release ID and VERSION_ID), with precompiled
// drivers its kernel first ("5.15.0-1043-azure-ubuntu22.04"). Each value has its own driver
// DaemonSet.
inline constexpr char kDriverOsLabel[] = "gpuop.io/driver.os";
// The device plugin configuration the node uses (the NVIDIA plugin's label).
inline constexpr char kDevicePluginConfigLabel[] = "nvidia.com/device-plugin.config";
// GPU feature discovery's label of a node whose configuration shares its GPUs with MPS (gpuop's
// labels component writes it); the MPS daemons run only there.
inline constexpr char kMpsCapableLabel[] = "nvidia.com/mps.capable";
// The MIG layout the node asks for (the NVIDIA MIG manager's label).
inline constexpr char kMigConfigLabel[] = "nvidia.com/mig.config";

// Labels on everything the operator renders.
inline constexpr char kManagedByLabel[] = "app.kubernetes.io/managed-by";
inline constexpr char kManagedByValue[] = "gpuop-operator";
// On everything gpuop runs, the Helm chart's operator Deployment and uninstall Job included.
inline constexpr char kPartOfLabel[] = "app.kubernetes.io/part-of";
inline constexpr char kPartOfValue[] = "gpuop";
inline constexpr char kComponentLabel[] = "app.kubernetes.io/component";

struct RenderInput {
  PolicySpec policy;
  std::vector<NodePool> pools;  // sorted by name; conflicts already resolved
  std::string ns = "gpuop-system";
  // The GPUClusterPolicy the operands belong to; when its uid is set, every operand but the
  // driver's carries an ownerReference to it.
  std::string policy_name = "default";
  std::string policy_uid;
  // With DriverPerNode: for each driver pool ("" for the policy's own driver), the
  // gpuop.io/driver.os values of its nodes (and of the nodes moving to it).
  std::map<std::string, std::set<std::string>> driver_os;
};

// One driver DaemonSet: a pool's driver ("" for the policy's) for one gpuop.io/driver.os value
// ("" when the image does not depend on the node).
struct DriverSet {
  std::string pool;
  std::string os;
  std::string name;  // DriverDaemonSetName(pool, os)
};
// The driver DaemonSets `policy`, `pools` and the nodes' driver.os values call for.
std::vector<DriverSet> DriverSets(const PolicySpec& policy, const std::vector<NodePool>& pools,
                                  const std::map<std::string, std::set<std::string>>& driver_os);

// The per-node components as Kubernetes objects, a pure function of the policy and the pools:
// for each enabled component a ServiceAccount, its least-privilege ClusterRole and
// ClusterRoleBinding when it talks to the API server, ConfigMaps it reads, and its DaemonSet;
// the driver gets one DaemonSet per pool that sets a driver version (gpuop-driver for the
// policy's, gpuop-driver-<pool> for the others), all OnDelete so upgrades go node by node.
// Objects come in apply order (ServiceAccounts and RBAC before the DaemonSets that use them).
// Every object carries the managed-by and component labels, so that what is no longer rendered
// can be found and pruned. With policy.host_network every pod runs with hostNetwork (dnsPolicy
// ClusterFirstWithHostNet, HTTP probes on 127.0.0.1); with policy.api_server every container
// that talks to the API server gets KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT.
// The discovery DaemonSet (gpuop-discovery) selects Linux nodes without gpuop.io/gpu.present
// by node affinity, not deploy labels. No pod names a runtime class: the components reach the
// driver through a read-only host-root mount (HostToContainer) and, where they open device
// nodes, as privileged containers. The RuntimeClass nvidia is rendered only with the runtime
// component, for workloads that ask for it.
// With input.policy_uid, every object but the driver's (its DaemonSets, ServiceAccount and RBAC)
// carries an ownerReference to the policy (controller, not blocking its deletion), so nothing is
// orphaned when the policy goes, even when the operator is not running; the driver's carry none,
// so that the garbage collector never takes a driver away under running workloads (deleting the
// policy keeps the drivers running; see the policy reconciler).
[[nodiscard]] absl::StatusOr<std::vector<nlohmann::json>> RenderOperands(const RenderInput& input);

// The name of the driver DaemonSet for a pool ("" for the policy's own) and a gpuop.io/driver.os
// value ("" for none): gpuop-driver, gpuop-driver-<pool>, gpuop-driver-ubuntu22.04,
// gpuop-driver-<pool>-ubuntu22.04, lower-cased with '_' as '-'. A name longer than a label value
// may be (63) is cut and ends in a hash of the whole.
std::string DriverDaemonSetName(const std::string& pool, const std::string& os = "");
// The driver DaemonSet a node's labels select it for (gpuop.io/driver.pool, "default" or absent
// for the policy's, and gpuop.io/driver.os).
std::string DriverDaemonSetOfLabels(absl::string_view pool, absl::string_view os);

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_RENDER_RENDER_H_
