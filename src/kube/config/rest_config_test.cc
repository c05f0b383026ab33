#include "kube/config/rest_config.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "absl/strings/escaping.h"

namespace gpuop::kube {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class RestConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/gpuop-restconfig-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = templ;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path Write(const std::string& name, const std::string& content) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
    return p;
  }

  fs::path dir_;
};

constexpr char kTwoContexts[] = R"(
apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod-cluster
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority: certs/ca.crt
- name: dev-cluster
  cluster:
    server: https://dev.example:443
    certificate-authority-data: %s
users:
- name: admin
  user:
    client-certificate: certs/admin.crt
    client-key: certs/admin.key
- name: robot
  user:
    token: s3cr3t
contexts:
- name: prod
  context: {cluster: prod-cluster, user: admin, namespace: gpu-operator}
- name: dev
  context: {cluster: dev-cluster, user: robot}
)";

std::string TwoContexts() {
  std::string text = kTwoContexts;
  const std::string b64 = absl::Base64Escape("DEV-CA-PEM");
  text.replace(text.find("%s"), 2, b64);
  return text;
}

TEST_F(RestConfigTest, CurrentContextWithRelativeCertificateFiles) {
  Write("certs/ca.crt", "CA-PEM");
  Write("certs/admin.crt", "CERT-PEM");
  Write("certs/admin.key", "KEY-PEM");
  const fs::path path = Write("kubeconfig", TwoContexts());
  auto config = LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.0.0.1:6443");  // Trailing slash dropped.
  EXPECT_EQ(config->ca_pem, "CA-PEM");
  EXPECT_EQ(config->client_cert_pem, "CERT-PEM");
  EXPECT_EQ(config->client_key_pem, "KEY-PEM");
  EXPECT_EQ(config->default_namespace, "gpu-operator");
  EXPECT_THAT(config->source, HasSubstr(path.string()));
}

TEST_F(RestConfigTest, NamedContextWithInlineCaAndToken) {
  const fs::path path = Write("kubeconfig", TwoContexts());
  auto config = LoadKubeconfig(path, "dev");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://dev.example:443");
  EXPECT_EQ(config->ca_pem, "DEV-CA-PEM");
  EXPECT_EQ(config->bearer_token, "s3cr3t");
  EXPECT_EQ(config->default_namespace, "default");
}

struct BadCase {
  const char* name;
  const char* yaml;
  const char* field;  // the message must name this field
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class KubeconfigErrorTest : public RestConfigTest, public ::testing::WithParamInterface<BadCase> {};

TEST_P(KubeconfigErrorTest, NamesFileAndField) {
  const fs::path path = Write("kubeconfig", GetParam().yaml);
  auto config = LoadKubeconfig(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << config.status();
  EXPECT_THAT(config.status().message(), HasSubstr(path.string()));
  EXPECT_THAT(config.status().message(), HasSubstr(GetParam().field));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, KubeconfigErrorTest,
    ::testing::Values(
        BadCase{"NoCurrentContext", "clusters: []\n", "current-context"},
        BadCase{"UnknownContext", "current-context: x\ncontexts: []\n", "current-context"},
        BadCase{"UnknownCluster",
                "current-context: c\ncontexts:\n- name: c\n  context: {cluster: nope}\n",
                "contexts[0].context.cluster"},
        BadCase{"ServerMissing",
                "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
                "clusters:\n- name: k\n  cluster: {}\n",
                "clusters[0].cluster.server"},
        BadCase{"ServerNotUrl",
                "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
                "clusters:\n- name: k\n  cluster: {server: 10.0.0.1}\n",
                "clusters[0].cluster.server"},
        BadCase{"BadBase64",
                "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
                "clusters:\n- name: k\n  cluster: {server: 'https://a', "
                "certificate-authority-data: '!!!'}\n",
                "clusters[0].cluster.certificate-authority-data"},
        BadCase{"InsecureRefused",
                "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
                "clusters:\n- name: k\n  cluster: {server: 'https://a', "
                "insecure-skip-tls-verify: true}\n",
                "insecure-skip-tls-verify"},
        BadCase{"ExecRefused",
                "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                "clusters:\n- name: k\n  cluster: {server: 'https://a'}\n"
                "users:\n- name: u\n  user: {exec: {command: aws}}\n",
                "users[0].user.exec"},
        BadCase{"MissingKeyFile",
                "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                "clusters:\n- name: k\n  cluster: {server: 'https://a'}\n"
                "users:\n- name: u\n  user: {client-certificate-data: 'Q0VSVA==', "
                "client-key: /no/such/key}\n",
                "users[0].user.client-key"},
        BadCase{"ServerNotAString",
                "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
                "clusters:\n- name: k\n  cluster: {server: [1, 2]}\n",
                "clusters[0].cluster.server"},
        BadCase{"NotYaml", "current-context: [unclosed\n", "line"}),
    [](const ::testing::TestParamInfo<BadCase>& param_info) { return param_info.param.name; });

TEST_F(RestConfigTest, MissingFileIsNotFound) {
  auto config = LoadKubeconfig(dir_ / "absent");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(config.status().message(), HasSubstr("absent"));
}

TEST_F(RestConfigTest, InClusterReadsServiceAccountFiles) {
  Write("sa/token", "tok\n");
  Write("sa/ca.crt", "CA");
  Write("sa/namespace", "gpuop-system\n");
  auto config = InClusterConfig(
      {.service_host = "10.96.0.1", .service_port = "443", .service_account_dir = dir_ / "sa"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->ca_pem, "CA");
  EXPECT_EQ(config->token_file, dir_ / "sa" / "token");
  EXPECT_EQ(config->default_namespace, "gpuop-system");

  auto v6 = InClusterConfig(
      {.service_host = "fd00::1", .service_port = "443", .service_account_dir = dir_ / "sa"});
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->server, "https://[fd00::1]:443");
}

TEST_F(RestConfigTest, InClusterOutsideAClusterFailsClearly) {
  auto config = InClusterConfig({});
  EXPECT_EQ(config.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(config.status().message(), HasSubstr("KUBERNETES_SERVICE_HOST"));
  auto no_token = InClusterConfig(
      {.service_host = "h", .service_port = "1", .service_account_dir = dir_ / "none"});
  EXPECT_EQ(no_token.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(no_token.status().message(), HasSubstr("token"));
}

}  // namespace
}  // namespace gpuop::kube
