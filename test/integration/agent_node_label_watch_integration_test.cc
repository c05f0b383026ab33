// Following one label of one Node on the real API server.
#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "agent/node/node_label_watch.h"
#include "test/cluster/test_api.h"
#include "test/fakes/node_objects.h"
#include "test/integration/kube_test_util.h"

namespace gpuop::test {
namespace {

namespace resources = kube::resources;

TEST(AgentNodeLabelWatchIntegrationTest, ReportsTheCurrentValueAndChanges) {
  auto client = AdminClient();
  ASSERT_NE(client, nullptr);
  const std::string node = UniqueName("watched-node");
  const std::string other = UniqueName("other-node");
  for (const auto& name : {node, other}) {
    kube::Json object = fakes::KwokGpuNode(name, 8);
    object["metadata"]["labels"] = {{"nvidia.com/device-plugin.config", "a100"}};
    ASSERT_TRUE(client->Create(resources::kNodes, "", object).ok());
  }
  absl::Mutex mu;
  std::vector<std::string> seen;
  agent::NodeLabelWatch watch(*client, node, "nvidia.com/device-plugin.config",
                              [&](const std::string& value) {
                                absl::MutexLock lock(&mu);
                                seen.push_back(value);
                              });
  watch.Start();
  ASSERT_TRUE(watch.WaitForSync(absl::Seconds(30)));
  auto patch = [&](const std::string& name, const kube::Json& value) {
    ASSERT_TRUE(
        client
            ->Patch(resources::kNodes, "", name, kube::PatchType::kMergePatch,
                    {{"metadata", {{"labels", {{"nvidia.com/device-plugin.config", value}}}}}})
            .ok());
  };
  patch(other, "ignored");  // another node: not ours
  patch(node, "a100-shared");
  patch(node, nullptr);  // label removed
  const absl::Status done =
      WaitUntil("three values", absl::Seconds(30), [&]() -> absl::StatusOr<bool> {
        absl::MutexLock lock(&mu);
        return seen.size() >= 3;
      });
  ASSERT_TRUE(done.ok()) << done;
  absl::MutexLock lock(&mu);
  EXPECT_EQ(seen, (std::vector<std::string>{"a100", "a100-shared", ""}));
}

}  // namespace
}  // namespace gpuop::test
