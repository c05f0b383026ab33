#include "operator/cache/cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::op {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

Json Policy(const std::string& uid, int64_t generation, const Json& upgrade) {
  return {{"apiVersion", "gpuop.io/v1alpha1"},
          {"kind", "GPUClusterPolicy"},
          {"metadata", {{"name", "default"}, {"uid", uid}, {"generation", generation}}},
          {"spec", {{"driver", {{"version", "570.86.15"}}}, {"upgrade", upgrade}}}};
}

std::shared_ptr<const OperandPod> Pod(const std::string& name, const std::string& component,
                                      bool ready, absl::Time created) {
  return std::make_shared<OperandPod>(OperandPod{.name = name,
                                                 .component = component,
                                                 .ready = ready,
                                                 .phase = "Running",
                                                 .created = created});
}

TEST(NodePodsTest, OnlyAValidatorStartedAfterTheDriverCounts) {
  const absl::Time driver = absl::FromUnixSeconds(1'000);
  EXPECT_EQ(
      ValidatorReadySince({Pod("v-old", "validator", true, driver - absl::Seconds(1))}, driver),
      std::nullopt);
  EXPECT_EQ(ValidatorReadySince({Pod("v", "validator", false, driver)}, driver), false);
  EXPECT_EQ(ValidatorReadySince({Pod("v-old", "validator", true, driver - absl::Seconds(1)),
                                 Pod("v", "validator", true, driver + absl::Seconds(3))},
                                driver),
            true);
}

TEST(NodePodsTest, ClientsOfReadsTheOperandPods) {
  PolicySpec policy;
  const DriverClients clients = ClientsOf(
      kube::Labels(std::map<std::string, std::string>{{"gpuop.io/deploy.exporter", "true"}}),
      policy,
      {Pod("gpuop-exporter-a", "exporter", true, absl::InfinitePast()),
       Pod("gpuop-driver-b", "driver", true, absl::InfinitePast())});
  EXPECT_THAT(clients.to_pause, ::testing::ElementsAre("gpuop.io/deploy.exporter"));
  EXPECT_THAT(clients.running, ::testing::ElementsAre("gpuop-exporter-a"));
}

TEST(PolicyEntryTest, AnInvalidSpecKeepsTheLastGoodOneOfTheSameObject) {
  const PolicyEntry good = MakePolicyEntry(Policy("u-1", 1, {{"maxParallel", 3}}), nullptr);
  ASSERT_TRUE(good.policy.ok()) << good.policy.status();
  EXPECT_FALSE(good.last_good.has_value());

  // An older API server (or a CRD not yet updated) lets through what the parser refuses.
  const PolicyEntry bad = MakePolicyEntry(Policy("u-1", 2, {{"maxParallel", "three"}}), &good);
  ASSERT_FALSE(bad.policy.ok());
  EXPECT_THAT(bad.policy.status().message(), HasSubstr("spec.upgrade.maxParallel"));
  EXPECT_EQ(bad.generation, 2);
  ASSERT_TRUE(bad.last_good.has_value());
  EXPECT_EQ(bad.last_good->spec.upgrade.max_parallel, 3);
  EXPECT_EQ(bad.last_good->generation, 1);

  // Still invalid in another way: the last good spec carries over.
  const PolicyEntry worse = MakePolicyEntry(Policy("u-1", 3, {{"maxParallel", -1}}), &bad);
  ASSERT_TRUE(worse.last_good.has_value());
  EXPECT_EQ(worse.last_good->spec.upgrade.max_parallel, 3);

  // Fixed: the new spec is the one to run.
  const PolicyEntry fixed = MakePolicyEntry(Policy("u-1", 4, {{"maxParallel", 5}}), &worse);
  ASSERT_TRUE(fixed.policy.ok());
  EXPECT_EQ(fixed.policy->spec.upgrade.max_parallel, 5);
  EXPECT_FALSE(fixed.last_good.has_value());
}

TEST(PolicyEntryTest, AnotherObjectOfTheSameNameInheritsNothing) {
  const PolicyEntry good = MakePolicyEntry(Policy("u-1", 1, {{"maxParallel", 3}}), nullptr);
  const PolicyEntry recreated = MakePolicyEntry(Policy("u-2", 1, {{"maxParallel", -1}}), &good);
  EXPECT_FALSE(recreated.policy.ok());
  EXPECT_FALSE(recreated.last_good.has_value());
  EXPECT_FALSE(
      MakePolicyEntry(Policy("u-1", 1, {{"maxParallel", -1}}), nullptr).last_good.has_value());
}

TEST(PolicyEntryTest, MetadataOfTheWrongShapeDoesNotThrow) {
  for (const char* object : {R"({"metadata": 1})", R"({"metadata": {"name": 1, "uid": [],
                             "generation": "2"}})",
                             R"([])", R"(null)"}) {
    const PolicyEntry entry = MakePolicyEntry(Json::parse(object), nullptr);
    EXPECT_EQ(entry.name, "") << object;
    EXPECT_EQ(entry.generation, 0) << object;
  }
}

}  // namespace
}  // namespace gpuop::op
