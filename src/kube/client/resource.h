#ifndef GPUOP_KUBE_CLIENT_RESOURCE_H_
#define GPUOP_KUBE_CLIENT_RESOURCE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace gpuop::kube {

// A kind of object the API server serves, by group, version and resource (plural).
struct ResourceType {
  std::string group;  // "" for the core group
  std::string version;
  std::string plural;
  std::string kind;
  bool namespaced = true;

  // "v1" for the core group, otherwise "<group>/<version>".
  std::string ApiVersion() const;
  // "/api/v1" or "/apis/<group>/<version>".
  std::string GroupVersionPath() const;
  // The collection: "/api/v1/namespaces/<ns>/pods"; every namespace when `ns` is empty (and
  // always for cluster-scoped resources).
  std::string CollectionPath(absl::string_view ns) const;
  // One object, optionally a subresource: ".../pods/<name>/status".
  std::string ObjectPath(absl::string_view ns, absl::string_view name,
                         absl::string_view subresource = "") const;
};

// Resources the operator and the agent use.
namespace resources {
extern const ResourceType kNamespaces;
extern const ResourceType kNodes;
extern const ResourceType kPods;
extern const ResourceType kConfigMaps;
extern const ResourceType kSecrets;
extern const ResourceType kServiceAccounts;
extern const ResourceType kEventsV1;  // events.k8s.io/v1
extern const ResourceType kDaemonSets;
extern const ResourceType kDeployments;
extern const ResourceType kLeases;
extern const ResourceType kPodDisruptionBudgets;
extern const ResourceType kCustomResourceDefinitions;
extern const ResourceType kClusterRoles;
extern const ResourceType kClusterRoleBindings;
extern const ResourceType kRoles;
extern const ResourceType kRoleBindings;
extern const ResourceType kRuntimeClasses;
}  // namespace resources

// Percent-encodes `value` for a URL path segment or query value (RFC 3986 unreserved kept).
std::string UrlEncode(absl::string_view value);

// "?a=1&b=x%20y" from the pairs whose value is not empty; "" when all are empty.
std::string QueryString(const std::vector<std::pair<std::string, std::string>>& params);

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_CLIENT_RESOURCE_H_
