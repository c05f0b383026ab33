// In-cluster configuration with a rotating service-account token, against the real API server.
#include <fstream>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "kube/client/client.h"
#include "kube/config/rest_config.h"
#include "test/integration/kube_test_util.h"

namespace gpuop::test {
namespace {

using kube::Json;
namespace resources = kube::resources;
namespace fs = std::filesystem;

// Asks the API server for a bound token of service account `sa`.
std::string RequestToken(kube::Client& admin, const std::string& ns, const std::string& sa) {
  const Json request = {{"apiVersion", "authentication.k8s.io/v1"},
                        {"kind", "TokenRequest"},
                        {"spec", {{"expirationSeconds", 3600}}}};
  auto response =
      admin.rest().Send({.method = "POST",
                         .path = resources::kServiceAccounts.ObjectPath(ns, sa, "token"),
                         .body = request.dump(),
                         .content_type = "application/json"});
  EXPECT_TRUE(response.ok() && response->status == 201)
      << (response.ok() ? response->body : response.status().ToString());
  if (!response.ok()) return "";
  return Json::parse(response->body)["status"]["token"];
}

// The user name the server sees for `client`.
std::string WhoAmI(kube::Client& client) {
  const Json review = {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "SelfSubjectReview"}};
  auto response = client.rest().Send({.method = "POST",
                                      .path = "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                      .body = review.dump(),
                                      .content_type = "application/json"});
  if (!response.ok() || response->status != 201) return "<failed>";
  return Json::parse(response->body)["status"]["userInfo"]["username"];
}

// Writes a file the way the kubelet updates projected volumes: a new file renamed over the old.
void ReplaceFile(const fs::path& path, const std::string& content) {
  const fs::path tmp = fs::path(path).concat(".new");
  std::ofstream(tmp, std::ios::trunc) << content;
  fs::rename(tmp, path);
}

TEST(KubeAuthIntegrationTest, InClusterClientFollowsTokenRotation) {
  auto admin = AdminClient();
  ASSERT_NE(admin, nullptr);
  const std::string ns = CreateTestNamespace(*admin, "auth");
  for (const char* sa : {"rot-a", "rot-b"}) {
    ASSERT_TRUE(
        admin
            ->Create(
                resources::kServiceAccounts, ns,
                {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", sa}}}})
            .ok());
  }
  // (The aggregated "view" ClusterRole is empty without a controller-manager: use a Role.)
  ASSERT_TRUE(admin
                  ->Create(resources::kRoles, ns, Json::parse(R"({
      "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
      "metadata": {"name": "configmap-reader"},
      "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]})"))
                  .ok());
  Json binding = Json::parse(R"({
      "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
      "metadata": {"name": "readers"},
      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmap-reader"},
      "subjects": [{"kind": "ServiceAccount", "name": "rot-a"},
                   {"kind": "ServiceAccount", "name": "rot-b"}]})");
  for (auto& subject : binding["subjects"]) subject["namespace"] = ns;
  ASSERT_TRUE(admin->Create(resources::kRoleBindings, ns, binding).ok());

  // A service-account directory as the kubelet mounts it.
  const ControlPlane& cp = ClusterEnvironment::Get();
  const fs::path dir = cp.work_dir() / UniqueName("serviceaccount");
  fs::create_directories(dir);
  fs::copy_file(cp.pki().ca_cert, dir / "ca.crt");
  std::ofstream(dir / "namespace") << ns;
  ReplaceFile(dir / "token", RequestToken(*admin, ns, "rot-a"));

  const std::string server = cp.server();
  const std::string port = server.substr(server.rfind(':') + 1);
  auto config = kube::InClusterConfig(
      {.service_host = "127.0.0.1", .service_port = port, .service_account_dir = dir});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->default_namespace, ns);
  auto rest = kube::RestClient::Create(*config);
  ASSERT_TRUE(rest.ok()) << rest.status();
  kube::Client client(std::shared_ptr<kube::RestClient>(*std::move(rest)));

  EXPECT_EQ(WhoAmI(client), absl::StrCat("system:serviceaccount:", ns, ":rot-a"));
  EXPECT_TRUE(client.List(resources::kConfigMaps, ns).ok());

  // Rotate to b's token, then make a's token worthless by deleting its account.
  ReplaceFile(dir / "token", RequestToken(*admin, ns, "rot-b"));
  ASSERT_TRUE(admin->Delete(resources::kServiceAccounts, ns, "rot-a").ok());

  auto list = client.List(resources::kConfigMaps, ns);
  EXPECT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(WhoAmI(client), absl::StrCat("system:serviceaccount:", ns, ":rot-b"));

  // Without a usable token the client says why.
  fs::remove(dir / "token");
  auto denied = client.List(resources::kConfigMaps, ns);
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kUnauthenticated) << denied.status();
}

}  // namespace
}  // namespace gpuop::test
