// Errors a GPU answers from chosen calls (call_errors.h): a scenario's `errors`, and the control
// file's fail / unfail.

#include <gtest/gtest.h>

#include "absl/strings/str_replace.h"
#include "test/fakes/nvml/fake_nvml_test_util.h"

namespace gpuop::fakenvml {
namespace {

constexpr char kTwoGpus[] = R"(name: errors
driver: {version: "570.86.15", cuda_version: "12.8"}
models:
  l4: {name: NVIDIA L4, pci_device_id: 0x27b8, architecture: ada, compute_capability: "8.9",
       memory_mib: 23034, power: {default_w: 72, min_w: 40, max_w: 72}}
gpus:
  - {model: l4, pci_bus_id: "0000:01:00.0"}
  - {model: l4, pci_bus_id: "0000:02:00.0",
     errors: {nvmlDeviceGetPowerUsage: NO_PERMISSION, nvmlDeviceGetUUID: UNKNOWN}}
)";

class FakeNvmlErrors : public FakeNvmlTest {};

TEST_F(FakeNvmlErrors, AScenarioMakesOneGpuAnswerChosenCallsWithAnError) {
  ASSERT_EQ(Start(WriteFile("errors.yaml", kTwoGpus)), NVML_SUCCESS);
  unsigned int mw = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetPowerUsage(Gpu(0), &mw), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlDeviceGetPowerUsage(Gpu(1), &mw), NVML_ERROR_NO_PERMISSION);
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  EXPECT_EQ(nvml.nvmlDeviceGetUUID(Gpu(1), uuid, sizeof(uuid)), NVML_ERROR_UNKNOWN);
  // Every other call answers.
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  EXPECT_EQ(nvml.nvmlDeviceGetName(Gpu(1), name, sizeof(name)), NVML_SUCCESS);
  unsigned int limit = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetPowerManagementLimit(Gpu(1), &limit), NVML_SUCCESS);
}

TEST_F(FakeNvmlErrors, TheControlFileFailsAndRestoresCalls) {
  UseControlFile();
  ASSERT_EQ(Start("l4-4x-pcie"), NVML_SUCCESS);
  nvmlDevice_t gpu2 = Gpu(2);
  Control("fail 2 nvmlDeviceGetHandleByIndex_v2 NO_PERMISSION");
  nvmlDevice_t device = nullptr;
  // As the real library answers for a GPU whose device node this process may not open.
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(2, &device), NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(1, &device), NVML_SUCCESS);
  Control("fail 2 * UNKNOWN");
  unsigned int temperature = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(gpu2, NVML_TEMPERATURE_GPU, &temperature),
            NVML_ERROR_UNKNOWN);
  // A call's own entry wins over "*".
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(2, &device), NVML_ERROR_NO_PERMISSION);
  Control("unfail 2");
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(gpu2, NVML_TEMPERATURE_GPU, &temperature), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(2, &device), NVML_SUCCESS);
}

TEST_F(FakeNvmlErrors, CallsThroughSharedHelpersAnswerByTheirOwnName) {
  // Entry points built on a shared helper (utilization with a period, power limits, MIG
  // queries) are still failed by their own name.
  UseControlFile();
  ASSERT_EQ(Start("h100-8x-nvswitch"), NVML_SUCCESS);
  Control("fail 0 nvmlDeviceGetEncoderUtilization NO_PERMISSION");
  Control("fail 0 nvmlDeviceGetPowerManagementLimit UNKNOWN");
  Control("fail 0 nvmlDeviceGetMigMode NOT_SUPPORTED");
  unsigned int value = 0;
  unsigned int period = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetEncoderUtilization(Gpu(0), &value, &period),
            NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(nvml.nvmlDeviceGetDecoderUtilization(Gpu(0), &value, &period), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlDeviceGetPowerManagementLimit(Gpu(0), &value), NVML_ERROR_UNKNOWN);
  EXPECT_EQ(nvml.nvmlDeviceGetEnforcedPowerLimit(Gpu(0), &value), NVML_SUCCESS);
  unsigned int current = 0;
  unsigned int pending = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetMigMode(Gpu(0), &current, &pending), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetMigMode(Gpu(1), &current, &pending), NVML_SUCCESS);
}

TEST_F(FakeNvmlErrors, BadErrorsAreRefusedByName) {
  ForgetPrintedFailures();
  const std::string bad = WriteFile(
      "bad.yaml",
      absl::StrReplaceAll(kTwoGpus, {{"nvmlDeviceGetUUID: UNKNOWN", "nvmlDeviceGetUUID: BROKEN"}}));
  testing::internal::CaptureStderr();
  EXPECT_EQ(Start(bad), NVML_ERROR_DRIVER_NOT_LOADED);
  const std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_NE(printed.find("gpus[1] (model l4).errors.nvmlDeviceGetUUID: unknown error \"BROKEN\""),
            std::string::npos)
      << printed;
}

}  // namespace
}  // namespace gpuop::fakenvml
