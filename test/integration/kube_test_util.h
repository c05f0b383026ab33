#ifndef GPUOP_TEST_INTEGRATION_KUBE_TEST_UTIL_H_
#define GPUOP_TEST_INTEGRATION_KUBE_TEST_UTIL_H_

#include <memory>
#include <string>

#include "kube/client/client.h"
#include "kube/config/rest_config.h"
#include "test/cluster/cluster_environment.h"

namespace gpuop::test {

// A gpuop API client for the test control plane's admin, loaded from its kubeconfig the way a
// user's would be. `qps` 0 disables client-side rate limiting (for bulk setup).
inline std::unique_ptr<kube::Client> AdminClient(double qps = 0,
                                                 metrics::Registry* registry = nullptr) {
  absl::StatusOr<kube::RestConfig> config =
      kube::LoadKubeconfig(ClusterEnvironment::Get().kubeconfig());
  if (!config.ok()) {
    ADD_FAILURE() << config.status();
    return nullptr;
  }
  config->qps = qps;
  auto rest = kube::RestClient::Create(*config, {.component = "test", .metrics = registry});
  if (!rest.ok()) {
    ADD_FAILURE() << rest.status();
    return nullptr;
  }
  return std::make_unique<kube::Client>(std::shared_ptr<kube::RestClient>(*std::move(rest)));
}

// Creates a namespace with a unique name (and its "default" ServiceAccount, which this profile
// has no controller to create); returns the name.
inline std::string CreateTestNamespace(kube::Client& client, const std::string& prefix) {
  const std::string name = UniqueName(prefix);
  auto ns =
      client.Create(kube::resources::kNamespaces, "",
                    {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}});
  EXPECT_TRUE(ns.ok()) << ns.status();
  auto sa = client.Create(
      kube::resources::kServiceAccounts, name,
      {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "default"}}}});
  EXPECT_TRUE(sa.ok() || sa.status().code() == absl::StatusCode::kAlreadyExists) << sa.status();
  return name;
}

inline kube::Json ConfigMap(const std::string& name, const std::string& value) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}}},
          {"data", {{"value", value}}}};
}

}  // namespace gpuop::test

#endif  // GPUOP_TEST_INTEGRATION_KUBE_TEST_UTIL_H_
