// CUDA validation on MIG: each MIG device in a process of its own (the real gpuop-agent
// cuda-vector-add), addressed as CUDA enumerates it, against the fake NVML and fake CUDA, whose
// enumeration follows CUDA's MIG rules.
#include "agent/validate/mig_cuda.h"

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "hw/nvml/nvml_accelerator.h"

namespace gpuop::agent {
namespace {

using ::testing::HasSubstr;

class MigCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The child's fake CUDA finds the fake NVML by its soname, and the machine by the scenario.
    setenv("LD_LIBRARY_PATH", std::filesystem::path(GPUOP_FAKE_NVML_LIBRARY).parent_path().c_str(),
           1);
    setenv("GPUOP_FAKE_NVML_SCENARIO", "a100-8x-mig", 1);
    unsetenv("GPUOP_FAKE_CUDA_DEVICES");
    auto nvml = hw::NvmlAccelerator::Open({.library_path = GPUOP_FAKE_NVML_LIBRARY});
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *std::move(nvml);
  }
  void TearDown() override {
    nvml_.reset();
    unsetenv("GPUOP_FAKE_NVML_SCENARIO");
    unsetenv("LD_LIBRARY_PATH");
  }

  MigCudaRunner Runner() {
    return SubprocessMigCudaRunner({GPUOP_AGENT_BINARY, "cuda-vector-add",
                                    std::string("--cuda-library=") + GPUOP_FAKE_CUDA_LIBRARY});
  }

  std::unique_ptr<hw::NvmlAccelerator> nvml_;
};

TEST_F(MigCudaTest, EachMigDeviceRunsInAProcessOfItsOwn) {
  const hw::Inventory inventory = *nvml_->Discover();
  const hw::MigDevice& device = inventory.gpus[1].mig_devices.at(1);  // a 3g.20gb
  absl::StatusOr<std::string> ran = Runner()(device.uuid);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(*ran, "vector add on NVIDIA A100-SXM4-40GB MIG 3g.20gb");

  // A MIG device that does not exist leaves CUDA without a device.
  absl::StatusOr<std::string> none = Runner()("MIG-00000000-0000-0000-0000-000000000000");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("CUDA_ERROR_NO_DEVICE"));
}

// The a100 preset: GPU 0 7x1g.5gb, GPU 1 2x3g.20gb, GPU 2 three GPU instances of which the
// 4g.20gb holds two compute instances (4 MIG devices), GPU 3 MIG on with none, GPUs 4-7 whole.
TEST_F(MigCudaTest, TheCudaCheckCoversWholeGpusAndEveryMigDevice) {
  std::vector<std::string> ran_on;
  MigCudaRunner counting = [&, runner = Runner()](const std::string& uuid) {
    ran_on.push_back(uuid);
    return runner(uuid);
  };
  auto result = CudaCheck({nvml_.get()},
                          {.library_path = GPUOP_FAKE_CUDA_LIBRARY, .elements = 4096}, counting)
                    .run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(*result, HasSubstr("vector add on 4 GPUs and 13 MIG devices"));
  EXPECT_EQ(ran_on.size(), 13u);

  // Without a way to run a process per MIG device the check cannot pass on MIG.
  auto alone = CudaCheck({nvml_.get()}, {.library_path = GPUOP_FAKE_CUDA_LIBRARY}).run();
  EXPECT_EQ(alone.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(alone.status().message()), HasSubstr("GPU 0 ("));
  EXPECT_THAT(std::string(alone.status().message()), HasSubstr("needs a process of its own"));
}

}  // namespace
}  // namespace gpuop::agent
