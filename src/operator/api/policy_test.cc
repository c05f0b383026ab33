#include "operator/api/policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
    "components": {"exporter": {"port": 9500, "interval": "30s"},
                   "health": {"ignoredXids": [13], "recoverAfter": "0s"},
                   "migManager": {"enabled": true, "config": "mig-layouts"}},
    "upgrade": {"maxParallel": 3, "maxUnavailable": 2,
                "drain": {"enabled": true, "timeout": "1h30m"}},
    "remediation": {"steps": ["Taint", "RequestReboot", "Validate", "Untaint"]}})");
  ASSERT_TRUE(p.ok()) << p.status();
  const PolicySpec& s = p->spec;
  EXPECT_FALSE(s.Enabled(Component::kDriver));
  EXPECT_EQ(s.node_selector.at("team"), "ml");
  EXPECT_EQ(s.components.exporter_port, 9500);
  EXPECT_EQ(s.components.exporter_interval, absl::Seconds(30));
  EXPECT_EQ(s.components.recover_after, absl::ZeroDuration());
  EXPECT_TRUE(s.Enabled(Component::kMigManager));
  EXPECT_EQ(s.components.mig_config, "mig-layouts");
  EXPECT_EQ(s.upgrade.max_parallel, 3);
  EXPECT_FALSE(s.upgrade.max_unavailable.percent);
  EXPECT_EQ(s.upgrade.max_unavailable.Resolve(100), 2);
  EXPECT_TRUE(s.upgrade.drain_enabled);
  EXPECT_EQ(s.upgrade.drain_timeout, absl::Minutes(90));
  ASSERT_EQ(s.remediation.steps.size(), 4u);
  EXPECT_EQ(s.remediation.steps[1], RemediationStep::kRequestReboot);
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
                        "components": {"health": {"recoverAfter": "soon"}}})"),
              HasSubstr("spec.components.health.recoverAfter: must be a duration"));
  EXPECT_THAT(Error(R"({"driver": {"enabled": false}, "remediation": {"steps": ["Pray"]}})"),
              HasSubstr("spec.remediation.steps[0]: must be Taint"));
  EXPECT_THAT(Error(R"({"driver": {"enabled": "yes"}})"),
              HasSubstr("spec.driver.enabled: must be true or false"));
}

}  // namespace
}  // namespace gpuop::op
