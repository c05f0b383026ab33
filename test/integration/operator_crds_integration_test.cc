// gpuop's CRDs on the real API server: installed (and re-installed) by the operator, defaults
// applied, and invalid specs rejected with messages a person understands.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/api/policy.h"
#include "operator/api/resources.h"
#include "operator/crds/crds.h"
#include "test/integration/kube_test_util.h"

namespace gpuop::test {
namespace {

using ::testing::HasSubstr;

class OperatorCrdsIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = AdminClient();
    ASSERT_NE(client_, nullptr);
    const absl::Status installed = op::InstallCrds(*client_, absl::Seconds(60));
    ASSERT_TRUE(installed.ok()) << installed;
  }

  // Creates (dry run: nothing persists) a GPUClusterPolicy with `spec`.
  absl::StatusOr<kube::Json> DryRunPolicy(const std::string& name, const char* spec) {
    kube::Json object = {{"apiVersion", "gpuop.io/v1alpha1"},
                         {"kind", "GPUClusterPolicy"},
                         {"metadata", {{"name", name}}},
                         {"spec", kube::Json::parse(spec)}};
    return client_->Create(op::kGpuClusterPolicies, "", object, {.dry_run = true});
  }
  absl::StatusOr<kube::Json> DryRunPool(const char* spec) {
    kube::Json object = {{"apiVersion", "gpuop.io/v1alpha1"},
                         {"kind", "GPUNodePool"},
                         {"metadata", {{"name", UniqueName("pool")}}},
                         {"spec", kube::Json::parse(spec)}};
    return client_->Create(op::kGpuNodePools, "", object, {.dry_run = true});
  }
  static std::string Message(const absl::StatusOr<kube::Json>& result) {
    EXPECT_FALSE(result.ok()) << "the API server accepted it";
    return std::string(result.status().message());
  }

  std::unique_ptr<kube::Client> client_;
};

TEST_F(OperatorCrdsIntegrationTest, InstallingAgainIsHarmless) {
  EXPECT_TRUE(op::InstallCrds(*client_, absl::Seconds(60)).ok());
}

TEST_F(OperatorCrdsIntegrationTest, TheServerAppliesTheDefaultsTheOperatorExpects) {
  auto created = DryRunPolicy("default", R"({"driver": {"version": "570.86.15"}})");
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["spec"]["upgrade"]["maxUnavailable"], "25%");
  EXPECT_EQ((*created)["spec"]["components"]["exporter"]["port"], 9400);
  auto parsed = op::ParseClusterPolicy(*created);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->spec.remediation.steps.back(), op::RemediationStep::kUntaint);
}

TEST_F(OperatorCrdsIntegrationTest, InvalidPoliciesAreRejectedWithReadableMessages) {
  EXPECT_THAT(
      Message(DryRunPolicy("gpus", R"({"driver": {"version": "570.86.15"}})")),
      HasSubstr("there is one GPUClusterPolicy per cluster and it must be named 'default'"));
  EXPECT_THAT(Message(DryRunPolicy("default", R"({"driver": {"enabled": true}})")),
              HasSubstr("driver.version is required while the driver is enabled"));
  EXPECT_THAT(Message(DryRunPolicy("default", R"({"driver": {"version": "570"}})")),
              HasSubstr("must be a driver version such as '570.86.15'"));
  EXPECT_THAT(Message(DryRunPolicy("default", R"({"driver": {"enabled": false},
                                                  "upgrade": {"maxUnavailable": "150%"}})")),
              HasSubstr("maxUnavailable must be a count of nodes (0 or more) or a percentage"));
  EXPECT_THAT(Message(DryRunPolicy("default", R"({"driver": {"enabled": false},
                                                  "upgrade": {"drainTimeout": 1,
                                                  "podRestartTimeout": "ten minutes"}})")),
              HasSubstr("must be a duration such as '90s', '10m' or '1h30m'"));
  EXPECT_THAT(Message(DryRunPolicy("default", R"({"driver": {"enabled": false},
                                                  "remediation": {"steps": ["Taint", "Drain"]}})")),
              HasSubstr("remediation steps that taint a node must also untaint it"));
  EXPECT_THAT(Message(DryRunPolicy("default", R"({"driver": {"enabled": false},
                                          "remediation": {"steps": ["Taint", "Untaint", "Drain"]}})")),
              HasSubstr("Untaint must be the last remediation step"));
}

TEST_F(OperatorCrdsIntegrationTest, InvalidPoolsAreRejectedWithReadableMessages) {
  EXPECT_THAT(Message(DryRunPool(R"({"nodeSelector": {}, "migLayout": "all-1g.10gb"})")),
              HasSubstr("an empty selector would put every GPU node in this pool"));
  EXPECT_THAT(Message(DryRunPool(R"({"nodeSelector": {"matchLabels": {"a": "b"}}})")),
              HasSubstr("a pool must override something"));
  EXPECT_THAT(Message(DryRunPool(R"({"nodeSelector": {"matchExpressions":
                                      [{"key": "a", "operator": "In"}]}, "migLayout": "x"})")),
              HasSubstr("In and NotIn need values"));
  EXPECT_TRUE(DryRunPool(R"({"nodeSelector": {"matchLabels": {"pool": "h100"}},
                             "timeSlicing": {"replicas": 4}})")
                  .ok());
}

}  // namespace
}  // namespace gpuop::test
