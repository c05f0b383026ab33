// The agent's node labels on a Node of the real API server: applied with server-side apply,
// stale keys removed, other owners' labels kept, nothing created.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/labels/node_labeler.h"
#include "test/fakes/node_objects.h"
#include "test/integration/kube_test_util.h"

namespace gpuop::test {
namespace {

using ::testing::Contains;
using ::testing::Key;
using ::testing::Not;
using ::testing::Pair;
namespace resources = kube::resources;

std::map<std::string, std::string> NodeLabelsOf(kube::Client& client, const std::string& node) {
  auto got = client.Get(resources::kNodes, "", node);
  EXPECT_TRUE(got.ok()) << got.status();
  std::map<std::string, std::string> labels;
  if (got.ok()) {
    for (const auto& [k, v] : (*got)["metadata"]["labels"].items()) labels[k] = v;
  }
  return labels;
}

TEST(AgentLabelsIntegrationTest, AppliesLabelsAndRemovesStaleOnes) {
  auto client = AdminClient();
  ASSERT_NE(client, nullptr);
  const std::string node = UniqueName("labels-node");
  kube::Json object = fakes::KwokGpuNode(node, 8);
  object["metadata"]["labels"] = {{"kubernetes.io/hostname", node}, {"team", "ml"}};
  ASSERT_TRUE(client->Create(resources::kNodes, "", object).ok());

  agent::NodeLabeler labeler(*client, node);
  ASSERT_TRUE(labeler
                  .Apply({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                          {"nvidia.com/gpu.count", "8"},
                          {"nvidia.com/mig-1g.10gb.count", "7"},
                          {"gpuop.io/gpu.present", "true"}})
                  .ok());
  auto labels = NodeLabelsOf(*client, node);
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.count", "8")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/mig-1g.10gb.count", "7")));
  EXPECT_THAT(labels, Contains(Pair("team", "ml")));

  // The MIG layout went away and the count changed: the stale key is removed by the server.
  ASSERT_TRUE(labeler
                  .Apply({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                          {"nvidia.com/gpu.count", "7"},
                          {"gpuop.io/gpu.present", "true"}})
                  .ok());
  labels = NodeLabelsOf(*client, node);
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.count", "7")));
  EXPECT_THAT(labels, Not(Contains(Key("nvidia.com/mig-1g.10gb.count"))));
  EXPECT_THAT(labels, Contains(Pair("team", "ml")));
  EXPECT_THAT(labels, Contains(Pair("kubernetes.io/hostname", node)));

  // The same labels again cost nothing.
  const int applies = labeler.applies();
  ASSERT_TRUE(labeler
                  .Apply({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                          {"nvidia.com/gpu.count", "7"},
                          {"gpuop.io/gpu.present", "true"}})
                  .ok());
  EXPECT_EQ(labeler.applies(), applies);

  // A node without GPUs any more: every gpuop label goes.
  ASSERT_TRUE(labeler.Apply({}).ok());
  labels = NodeLabelsOf(*client, node);
  EXPECT_THAT(labels, Not(Contains(Key("nvidia.com/gpu.count"))));
  EXPECT_THAT(labels, Not(Contains(Key("gpuop.io/gpu.present"))));
  EXPECT_THAT(labels, Contains(Pair("team", "ml")));
  EXPECT_TRUE(client->Delete(resources::kNodes, "", node).ok());
}

TEST(AgentLabelsIntegrationTest, NeverCreatesAMissingNode) {
  auto client = AdminClient();
  ASSERT_NE(client, nullptr);
  const std::string node = UniqueName("absent-node");
  agent::NodeLabeler labeler(*client, node);
  const absl::Status status = labeler.Apply({{"gpuop.io/gpu.present", "true"}});
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr(node));
  EXPECT_EQ(client->Get(resources::kNodes, "", node).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpuop::test
