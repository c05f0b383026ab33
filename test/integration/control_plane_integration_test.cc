// Integration tests of the `apiserver` profile: the API server is the real one at the expected
// version, authenticates with the generated PKI, enforces RBAC, and keeps its data across a
// restart (which later client tests rely on).
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kube/transport/curl_http_client.h"
#include "test/cluster/cluster_environment.h"
#include "test/cluster/pki.h"
#include "test/cluster/test_api.h"

namespace gpuop::test {
namespace {

using json = nlohmann::json;

std::string Slurp(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::ostringstream out;
  out << file.rdbuf();
  return out.str();
}

// Status of GET `path` for a client presenting `tls`.
int StatusAs(const kube::TlsOptions& tls, const std::string& path) {
  auto http = kube::CurlHttpClient::Create({.tls = tls});
  EXPECT_TRUE(http.ok()) << http.status();
  auto response = (*http)->Send({.url = ClusterEnvironment::Get().server() + path});
  EXPECT_TRUE(response.ok()) << response.status();
  return response.ok() ? response->status : -1;
}

TEST(ControlPlaneIntegrationTest, ServesTheBuiltKubernetesVersion) {
  auto api = TestApi::Connect(ClusterEnvironment::Get());
  ASSERT_TRUE(api.ok()) << api.status();
  auto version = api->Get("/version");
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ((*version)["gitVersion"], GPUOP_KUBE_VERSION) << version->dump();
}

TEST(ControlPlaneIntegrationTest, AuthenticatesClientCertificatesAndEnforcesRbac) {
  const ControlPlane& cp = ClusterEnvironment::Get();
  const std::string ca = Slurp(cp.pki().ca_cert);
  const std::string namespaces = "/api/v1/namespaces";

  EXPECT_EQ(StatusAs({.ca_pem = ca,
                      .client_cert_pem = Slurp(cp.pki().admin_cert),
                      .client_key_pem = Slurp(cp.pki().admin_key)},
                     namespaces),
            200);

  // Same CA, but a user with no RBAC bindings: authenticated, not authorized.
  const std::string stem = UniqueName("nobody");
  auto nobody = IssueClientCert(cp.pki(), stem, "", stem);
  ASSERT_TRUE(nobody.ok()) << nobody.status();
  EXPECT_EQ(StatusAs({.ca_pem = ca,
                      .client_cert_pem = Slurp(*nobody),
                      .client_key_pem = Slurp(cp.pki().dir / (stem + ".key"))},
                     namespaces),
            403);

  // A system:masters certificate from a CA the server does not trust is not accepted.
  const std::filesystem::path foreign_dir = cp.work_dir() / UniqueName("foreign-pki");
  auto foreign = GeneratePki(foreign_dir);
  ASSERT_TRUE(foreign.ok()) << foreign.status();
  EXPECT_EQ(StatusAs({.ca_pem = ca,
                      .client_cert_pem = Slurp(foreign->admin_cert),
                      .client_key_pem = Slurp(foreign->admin_key)},
                     namespaces),
            401);
}

TEST(ControlPlaneIntegrationTest, ServerCertificateIsVerified) {
  // A client that trusts another CA refuses the server instead of talking to it.
  const ControlPlane& cp = ClusterEnvironment::Get();
  auto other = GeneratePki(cp.work_dir() / UniqueName("other-ca"));
  ASSERT_TRUE(other.ok()) << other.status();
  auto http = kube::CurlHttpClient::Create({.tls = {.ca_pem = Slurp(other->ca_cert)}});
  ASSERT_TRUE(http.ok());
  auto response = (*http)->Send({.url = cp.server() + "/readyz"});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable) << response.status();
}

TEST(ControlPlaneIntegrationTest, DataSurvivesAnApiServerRestart) {
  ControlPlane& cp = ClusterEnvironment::Get();
  auto api = TestApi::Connect(cp);
  ASSERT_TRUE(api.ok()) << api.status();
  const std::string name = UniqueName("restart");
  ASSERT_TRUE(
      api->Create("/api/v1/namespaces",
                  {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}})
          .ok());

  ASSERT_TRUE(cp.StopComponent(Component::kApiServer).ok());
  EXPECT_FALSE(cp.IsRunning(Component::kApiServer));
  auto down = api->Request("GET", "/api/v1/namespaces/" + name);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().code(), absl::StatusCode::kUnavailable) << down.status();

  const absl::Status restarted = cp.StartComponent(Component::kApiServer);
  ASSERT_TRUE(restarted.ok()) << restarted << "\n" << cp.Diagnostics();
  auto got = api->Get("/api/v1/namespaces/" + name);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)["metadata"]["name"], name);
  EXPECT_TRUE(api->Delete("/api/v1/namespaces/" + name).ok());
}

TEST(ControlPlaneIntegrationTest, ProfileRunsOnlyEtcdAndApiServer) {
  ControlPlane& cp = ClusterEnvironment::Get();
  EXPECT_TRUE(cp.IsRunning(Component::kEtcd));
  EXPECT_TRUE(cp.IsRunning(Component::kApiServer));
  EXPECT_FALSE(cp.IsRunning(Component::kControllerManager));
  EXPECT_FALSE(cp.IsRunning(Component::kScheduler));
  EXPECT_FALSE(cp.IsRunning(Component::kKwok));
  EXPECT_EQ(cp.StartComponent(Component::kKwok).code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gpuop::test
