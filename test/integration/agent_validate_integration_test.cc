// The validator against the real API server: the device-plugin check reads the Node's
// allocatable resources, and the result lands in the GPUValidated condition.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "agent/node/node_condition.h"
#include "agent/validate/node_writer.h"
#include "hw/nvml/nvml_accelerator.h"
#include "kube/client/resource.h"
#include "test/fakes/node_objects.h"
#include "test/integration/kube_test_util.h"

namespace gpuop::test {
namespace {

using ::testing::HasSubstr;
namespace resources = kube::resources;

// What the kubelet does when a device plugin registers: status.allocatable changes.
void SetAllocatableGpus(kube::Client& client, const std::string& node, const std::string& gpus) {
  const kube::Json patch = {
      {"status",
       {{"capacity", {{"nvidia.com/gpu", gpus}}}, {"allocatable", {{"nvidia.com/gpu", gpus}}}}}};
  auto patched = client.Patch(resources::kNodes, "", node, kube::PatchType::kStrategicMergePatch,
                              patch, {.subresource = "status"});
  ASSERT_TRUE(patched.ok()) << patched.status();
}

TEST(AgentValidateIntegrationTest, DevicePluginCheckWaitsForTheKubeletToAdvertiseTheGpus) {
  auto client = AdminClient();
  ASSERT_NE(client, nullptr);
  const std::string node = UniqueName("validate-node");
  ASSERT_TRUE(client->Create(resources::kNodes, "", fakes::KwokGpuNode(node, 8)).ok());
  SetAllocatableGpus(*client, node, "0");

  setenv("GPUOP_FAKE_NVML_SCENARIO", "h100-8x-nvswitch", 1);
  auto nvml = hw::NvmlAccelerator::Open({.library_path = GPUOP_FAKE_NVML_LIBRARY});
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  std::vector<hw::Accelerator*> accelerators = {nvml->get()};

  agent::NodeValidationWriter writer(*client, node);
  std::vector<std::string> statuses;
  agent::Validator validator(
      {agent::DriverCheck(accelerators),
       agent::DevicePluginCheck(accelerators, agent::NodeAllocatable(*client, node))},
      {.retry = {.base = absl::Milliseconds(50), .cap = absl::Milliseconds(200)},
       .timeout = absl::Seconds(60),
       .status_dir = ""},
      [&](const agent::ValidationState& state) {
        const absl::Status written = writer.Write(state);
        EXPECT_TRUE(written.ok()) << written;
        auto c = agent::GetNodeCondition(*client, node, "GPUValidated");
        ASSERT_TRUE(c.ok()) << c.status();
        statuses.push_back(c->status);
        // The plugin "registers" once the validator has seen it missing.
        if (c->status == "False") {
          EXPECT_EQ(c->reason, "DevicePluginCheckFailed");
          EXPECT_THAT(c->message, HasSubstr("nvidia.com/gpu=0 but the GPUs found yield 8"));
          SetAllocatableGpus(*client, node, "8");
        }
      });
  const absl::Status result = validator.Run({});
  ASSERT_TRUE(result.ok()) << result;
  auto c = agent::GetNodeCondition(*client, node, "GPUValidated");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->status, "True");
  EXPECT_EQ(c->reason, "Validated");
  EXPECT_THAT(c->message, HasSubstr("device-plugin: allocatable nvidia.com/gpu=8"));
  EXPECT_THAT(statuses, ::testing::Contains("False"));
  unsetenv("GPUOP_FAKE_NVML_SCENARIO");
  (void)client->Delete(resources::kNodes, "", node);
}

}  // namespace
}  // namespace gpuop::test
