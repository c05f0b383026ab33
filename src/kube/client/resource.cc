#include "kube/client/resource.h"

#include "absl/strings/str_cat.h"

namespace gpuop::kube {

std::string ResourceType::ApiVersion() const {
  return group.empty() ? version : absl::StrCat(group, "/", version);
}

std::string ResourceType::GroupVersionPath() const {
  return group.empty() ? absl::StrCat("/api/", version)
                       : absl::StrCat("/apis/", group, "/", version);
}

std::string ResourceType::CollectionPath(absl::string_view ns) const {
  if (!namespaced || ns.empty()) return absl::StrCat(GroupVersionPath(), "/", plural);
  return absl::StrCat(GroupVersionPath(), "/namespaces/", UrlEncode(ns), "/", plural);
}

std::string ResourceType::ObjectPath(absl::string_view ns, absl::string_view name,
                                     absl::string_view subresource) const {
  std::string path = absl::StrCat(CollectionPath(namespaced ? ns : ""), "/", UrlEncode(name));
  if (!subresource.empty()) absl::StrAppend(&path, "/", subresource);
  return path;
}

namespace resources {
const ResourceType kNamespaces{"", "v1", "namespaces", "Namespace", false};
const ResourceType kNodes{"", "v1", "nodes", "Node", false};
const ResourceType kPods{"", "v1", "pods", "Pod", true};
const ResourceType kConfigMaps{"", "v1", "configmaps", "ConfigMap", true};
const ResourceType kSecrets{"", "v1", "secrets", "Secret", true};
const ResourceType kServiceAccounts{"", "v1", "serviceaccounts", "ServiceAccount", true};
const ResourceType kEventsV1{"events.k8s.io", "v1", "events", "Event", true};
const ResourceType kDaemonSets{"apps", "v1", "daemonsets", "DaemonSet", true};
const ResourceType kDeployments{"apps", "v1", "deployments", "Deployment", true};
const ResourceType kLeases{"coordination.k8s.io", "v1", "leases", "Lease", true};
const ResourceType kPodDisruptionBudgets{"policy", "v1", "poddisruptionbudgets",
                                         "PodDisruptionBudget", true};
const ResourceType kCustomResourceDefinitions{
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false};
const ResourceType kClusterRoles{"rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole",
                                 false};
const ResourceType kClusterRoleBindings{"rbac.authorization.k8s.io", "v1", "clusterrolebindings",
                                        "ClusterRoleBinding", false};
const ResourceType kRoles{"rbac.authorization.k8s.io", "v1", "roles", "Role", true};
const ResourceType kRoleBindings{"rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding",
                                 true};
const ResourceType kRuntimeClasses{"node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", false};
}  // namespace resources

std::string UrlEncode(absl::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (unsigned char c : value) {
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string QueryString(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string out;
  for (const auto& [key, value] : params) {
    if (value.empty()) continue;
    absl::StrAppend(&out, out.empty() ? "?" : "&", key, "=", UrlEncode(value));
  }
  return out;
}

}  // namespace gpuop::kube
