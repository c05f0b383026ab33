#include "test/cluster/kubeconfig.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <yaml-cpp/yaml.h>

namespace gpuop::test {
namespace {

TEST(KubeconfigTest, WritesOneCurrentContextWithAbsolutePaths) {
  char templ[] = "/tmp/gpuop-kubeconfig-test-XXXXXX";
  ASSERT_NE(mkdtemp(templ), nullptr);
  const std::filesystem::path dir = templ;
  const std::filesystem::path path = dir / "kubeconfig";
  ASSERT_TRUE(WriteKubeconfig(path, {.server = "https://127.0.0.1:1234",
                                     .ca_cert = dir / "ca.crt",
                                     .client_cert = dir / "admin.crt",
                                     .client_key = dir / "admin.key",
                                     .context_name = "t"})
                  .ok());
  const YAML::Node config = YAML::LoadFile(path.string());
  EXPECT_EQ(config["kind"].as<std::string>(), "Config");
  EXPECT_EQ(config["current-context"].as<std::string>(), "t");
  ASSERT_EQ(config["clusters"].size(), 1u);
  EXPECT_EQ(config["clusters"][0]["cluster"]["server"].as<std::string>(), "https://127.0.0.1:1234");
  EXPECT_EQ(config["clusters"][0]["cluster"]["certificate-authority"].as<std::string>(),
            (dir / "ca.crt").string());
  EXPECT_EQ(config["users"][0]["user"]["client-key"].as<std::string>(),
            (dir / "admin.key").string());
  EXPECT_EQ(config["contexts"][0]["context"]["user"].as<std::string>(), "t");
  EXPECT_FALSE(std::filesystem::exists(dir / "kubeconfig.tmp"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuop::test
