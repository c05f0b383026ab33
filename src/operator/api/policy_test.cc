#include "operator/api/policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gpuop::op {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<ClusterPolicy> Parse(const char* spec) {
  nlohmann::json object = {{"metadata", {{"name", "default"}, {"generation", 3}}}};
  object["spec"] = nlohmann::json::parse(spec);
  return ParseClusterPolicy(object);
}

std::string Error(const char* spec) {
  auto p = Parse(spec);
  EXPECT_FALSE(p.ok());
  return std::string(p.status().message());
}

TEST(PolicyTest, DefaultsMatchTheCrd) {
  auto p = Parse(R"({"driver": {"version": "570.86.15"}})");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->generation, 3);
  EXPECT_EQ(p->spec.driver.version, "570.86.15");
  EXPECT_TRUE(p->spec.Enabled(Component::kDriver));
  EXPECT_TRUE(p->spec.Enabled(Component::kDevicePlugin));
  EXPECT_TRUE(p->spec.Enabled(Component::kDiscovery));
  EXPECT_FALSE(p->spec.Enabled(Component::kMigManager));
  EXPECT_EQ(p->spec.upgrade.max_parallel, 1);
  EXPECT_TRUE(p->spec.upgrade.max_unavailable.percent);
  EXPECT_EQ(p->spec.upgrade.max_unavailable.value, 25);
  EXPECT_EQ(p->spec.remediation.steps.size(), 5u);
}

TEST(PolicyTest, ReadsEveryKindOfField) {
  auto p = Parse(R"({
    "driver": {"enabled": false},
    "nodeSelector": {"team": "ml"},
    "components": {"discovery": {"enabled": false},
                   "exporter": {"port": 9500, "interval": "30s", "kubernetesVirtualGpus": true,
                                "serviceMonitor": {"enabled": true, "interval": "1m",
                                                   "additionalLabels": {"release": "prom"}}},
                   "health": {"ignoredXids": [13], "xidActions": {"109": "RestartApp"}},
                   "migManager": {"enabled": true, "config": "mig-layouts", "withReboot": true}},
    "upgrade": {"maxParallel": 3, "maxUnavailable": 2,
                "drain": {"enabled": true, "timeout": "1h30m"}},
    "remediation": {"steps": ["Taint", "RequestReboot", "Validate", "Untaint"]}})");
  ASSERT_TRUE(p.ok()) << p.status();
  const PolicySpec& s = p->spec;
  EXPECT_FALSE(s.Enabled(Component::kDriver));
  EXPECT_FALSE(s.Enabled(Component::kDiscovery));
  EXPECT_EQ(s.node_selector.at("team"), "ml");
  EXPECT_EQ(s.components.exporter_port, 9500);
  EXPECT_EQ(s.components.exporter_interval, absl::Seconds(30));
  EXPECT_TRUE(s.components.exporter_virtual_gpus);
  EXPECT_TRUE(s.components.exporter_service_monitor);
  EXPECT_EQ(s.components.exporter_scrape_interval, absl::Minutes(1));
  EXPECT_EQ(s.components.exporter_service_monitor_labels,
            (std::map<std::string, std::string>{{"release", "prom"}}));
  EXPECT_EQ(s.components.xid_actions, (std::map<int64_t, std::string>{{109, "RestartApp"}}));
  EXPECT_TRUE(s.Enabled(Component::kMigManager));
  EXPECT_EQ(s.components.mig_config, "mig-layouts");
  EXPECT_TRUE(s.components.mig_with_reboot);
  EXPECT_EQ(s.upgrade.max_parallel, 3);
  EXPECT_FALSE(s.upgrade.max_unavailable.percent);
  EXPECT_EQ(s.upgrade.max_unavailable.Resolve(100), 2);
  EXPECT_TRUE(s.upgrade.drain_enabled);
  EXPECT_EQ(s.upgrade.drain_timeout, absl::Minutes(90));
  ASSERT_EQ(s.remediation.steps.size(), 4u);
  EXPECT_EQ(s.remediation.steps[1], RemediationStep::kRequestReboot);
}

TEST(PolicyTest, HostNetworkAndApiServerAreOffUnlessSet) {
  auto p = Parse(R"({"driver": {"version": "570.86.15"}})");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->spec.host_network);
  EXPECT_FALSE(p->spec.api_server.has_value());
  EXPECT_EQ(p->spec.driver.image, "driver");
  EXPECT_TRUE(p->spec.driver.env.empty());
  EXPECT_TRUE(p->spec.driver.args.empty());
  EXPECT_FALSE(p->spec.driver.resources.has_value());
}

TEST(PolicyTest, ReadsHostNetworkAndApiServer) {
  for (const char* host : {"127.0.0.1", "api.example.com", "fd00::1", "::1", "localhost",
                           "::ffff:10.0.0.1", "k8s-api"}) {
    auto p = Parse(absl::StrCat(R"({"driver": {"enabled": false}, "hostNetwork": true,
                                    "apiServer": {"host": ")",
                                host, R"(", "port": 6443}})")
                       .c_str());
    ASSERT_TRUE(p.ok()) << host << ": " << p.status();
    EXPECT_TRUE(p->spec.host_network);
    ASSERT_TRUE(p->spec.api_server.has_value());
    EXPECT_EQ(p->spec.api_server->host, host);
    EXPECT_EQ(p->spec.api_server->port, 6443);
  }
  for (int port : {1, 65535}) {
    auto p =
        Parse(absl::StrCat(R"({"driver": {"enabled": false}, "apiServer": {"host": "h", "port": )",
                           port, "}}")
                  .c_str());
    ASSERT_TRUE(p.ok()) << port << ": " << p.status();
    EXPECT_EQ(p->spec.api_server->port, port);
  }
}

TEST(PolicyTest, ReadsTheDriverContainerSettings) {
  auto p = Parse(R"({"driver": {"version": "570.86.15", "image": "k8s/driver-custom",
    "env": [{"name": "NVIDIA_DRIVER_DEBUG", "value": "1"}, {"name": "EMPTY"}],
    "args": ["init", "--no-nouveau-check"],
    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": 4,
                  "nvidia.com/x": "1.5e3"}}}})");
  ASSERT_TRUE(p.ok()) << p.status();
  const DriverSpec& d = p->spec.driver;
  EXPECT_EQ(d.image, "k8s/driver-custom");
  EXPECT_THAT(d.env,
              ::testing::ElementsAre(EnvVar{"NVIDIA_DRIVER_DEBUG", "1"}, EnvVar{"EMPTY", ""}));
  EXPECT_THAT(d.args, ::testing::ElementsAre("init", "--no-nouveau-check"));
  ASSERT_TRUE(d.resources.has_value());
  EXPECT_EQ(d.resources->requests.at("cpu"), "500m");
  EXPECT_EQ(d.resources->requests.at("memory"), "1Gi");
  EXPECT_EQ(d.resources->limits.at("memory"), "4");
  EXPECT_EQ(d.resources->limits.at("nvidia.com/x"), "1.5e3");
}

TEST(PolicyTest, BadNetworkAndDriverSettingsNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"hostNetwork": "yes"})", "spec.hostNetwork: must be true or false"},
      {R"({"driver": {"version": "570.86.15", "usePrecompiled": "yes"}})",
       "spec.driver.usePrecompiled: must be true or false"},
      {R"({"apiServer": "127.0.0.1:6443"})",
       "spec.apiServer: must be an object with host and port"},
      {R"({"apiServer": {"port": 6443}})", "spec.apiServer.host: is required"},
      {R"({"apiServer": {"host": "", "port": 6443}})", "spec.apiServer.host: is required"},
      {R"({"apiServer": {"host": "https://10.0.0.1", "port": 6443}})",
       "spec.apiServer.host: \"https://10.0.0.1\" is not a DNS name"},
      {R"({"apiServer": {"host": "[fd00::1]", "port": 6443}})",
       "spec.apiServer.host: \"[fd00::1]\""},
      {R"({"apiServer": {"host": "10.0.0.1 ", "port": 6443}})", "spec.apiServer.host:"},
      {R"({"apiServer": {"host": "10.0.0.1:6443", "port": 6443}})",
       "spec.apiServer.host: \"10.0.0.1:6443\" is not"},
      {R"({"apiServer": {"host": "-api", "port": 6443}})", "spec.apiServer.host:"},
      {R"({"apiServer": {"host": "api..example", "port": 6443}})", "spec.apiServer.host:"},
      {R"({"apiServer": {"host": 10, "port": 6443}})", "spec.apiServer.host: must be a string"},
      {R"({"apiServer": {"host": "h"}})", "spec.apiServer.port: is required"},
      {R"({"apiServer": {"host": "h", "port": 0}})",
       "spec.apiServer.port: must be an integer from 1 to 65535"},
      {R"({"apiServer": {"host": "h", "port": 65536}})",
       "spec.apiServer.port: must be an integer from 1 to 65535"},
      {R"({"apiServer": {"host": "h", "port": "6443"}})",
       "spec.apiServer.port: must be an integer from 1 to 65535"},
      {R"({"driver": {"enabled": false, "image": "driver:570"}})",
       "spec.driver.image: must be an image name without tag or digest"},
      {R"({"driver": {"enabled": false, "image": ""}})",
       "spec.driver.image: must be an image name"},
      {R"({"driver": {"enabled": false, "env": {"A": "1"}}})",
       "spec.driver.env: must be a list of {name, value}"},
      {R"({"driver": {"enabled": false, "env": ["A=1"]}})", "spec.driver.env[0]: must be"},
      {R"({"driver": {"enabled": false, "env": [{"value": "1"}]}})",
       "spec.driver.env[0].name: must be an environment variable name"},
      {R"({"driver": {"enabled": false, "env": [{"name": "1A"}]}})",
       "spec.driver.env[0].name: must be an environment variable name"},
      {R"({"driver": {"enabled": false, "env": [{"name": "A", "value": 1}]}})",
       "spec.driver.env[0].value: must be a string"},
      {R"({"driver": {"enabled": false, "env": [{"name": "A"}, {"name": "A"}]}})",
       "spec.driver.env[1].name: \"A\" is set twice"},
      {R"({"driver": {"enabled": false, "args": ["init", 1]}})",
       "spec.driver.args: must be a list of strings"},
      {R"({"driver": {"enabled": false, "resources": []}})",
       "spec.driver.resources: must be an object"},
      {R"({"driver": {"enabled": false, "resources": {"limits": {"memory": "lots"}}}})",
       "spec.driver.resources.limits.memory: must be a quantity"},
      {R"({"driver": {"enabled": false, "resources": {"requests": {"cpu": -1}}}})",
       "spec.driver.resources.requests.cpu: must be a quantity"},
      {R"({"driver": {"enabled": false, "resources": {"requests": {"cpu": "-1"}}}})",
       "spec.driver.resources.requests.cpu: must be a quantity"},
      {R"({"driver": {"enabled": false, "resources": {"requests": "1"}}})",
       "spec.driver.resources.requests: must be a map"},
  };
  for (const auto& [spec, message] : cases) {
    std::string with_driver = spec;
    if (!absl::StrContains(with_driver, "\"driver\"")) {
      with_driver.insert(1, R"("driver": {"enabled": false}, )");
    }
    EXPECT_THAT(Error(with_driver.c_str()), HasSubstr(message)) << spec;
  }
}

TEST(PolicyTest, PercentagesRoundUp) {
  IntOrPercent quarter{.value = 25, .percent = true};
  EXPECT_EQ(quarter.Resolve(20), 5);
  EXPECT_EQ(quarter.Resolve(21), 6);
  EXPECT_EQ(quarter.Resolve(1), 1);
  EXPECT_EQ((IntOrPercent{.value = 0, .percent = true}).Resolve(100), 0);
}

TEST(PolicyTest, ErrorsNameTheField) {
  EXPECT_THAT(Error(R"({"driver": {}})"), HasSubstr("spec.driver.version: is required"));
  EXPECT_THAT(Error(R"({"driver": {"enabled": false}, "upgrade": {"maxUnavailable": "x"}})"),
              HasSubstr("spec.upgrade.maxUnavailable: must be a count"));
  EXPECT_THAT(Error(R"({"driver": {"enabled": false}, "upgrade": {"maxParallel": -1}})"),
              HasSubstr("spec.upgrade.maxParallel: must be an integer from 0"));
  EXPECT_THAT(Error(R"({"driver": {"enabled": false},
                        "components": {"health": {"xidActions": {"109": "Reboot"}}}})"),
              HasSubstr("spec.components.health.xidActions.109: must be Ignore, RestartApp"));
  EXPECT_THAT(Error(R"({"driver": {"enabled": false},
                        "components": {"health": {"xidActions": {"x": "Ignore"}}}})"),
              HasSubstr("spec.components.health.xidActions.x: the key must be an XID number"));
  EXPECT_THAT(Error(R"({"driver": {"enabled": false}, "remediation": {"steps": ["Pray"]}})"),
              HasSubstr("spec.remediation.steps[0]: must be Taint"));
  EXPECT_THAT(Error(R"({"driver": {"enabled": "yes"}})"),
              HasSubstr("spec.driver.enabled: must be true or false"));
}

}  // namespace
}  // namespace gpuop::op
