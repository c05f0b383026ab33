// Argument checking, buffer sizes, versioned structs, unsupported features, power control,
// telemetry and topology of single devices.

#include <cstring>
#include <string>

#include <dlfcn.h>

#include "test/fakes/nvml/fake_nvml_test_util.h"

namespace gpuop::fakenvml {
namespace {

constexpr unsigned long long kMiB = 1024ULL * 1024ULL;
constexpr unsigned long long kSwPowerCap = 0x4;
constexpr unsigned long long kHwThermalSlowdown = 0x40;

using FakeNvmlDevice = FakeNvmlTest;

TEST_F(FakeNvmlDevice, ShortBuffersAreInsufficientSize) {
  ASSERT_EQ(Start("h100-8x-nvswitch"), NVML_SUCCESS);
  using StringFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
  const struct {
    const char* what;
    StringFn fn;
  } kDeviceStrings[] = {{"name", nvml.nvmlDeviceGetName},
                        {"uuid", nvml.nvmlDeviceGetUUID},
                        {"serial", nvml.nvmlDeviceGetSerial}};
  for (const auto& c : kDeviceStrings) {
    char buffer[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    ASSERT_EQ(c.fn(Gpu(0), buffer, sizeof(buffer)), NVML_SUCCESS) << c.what;
    const auto length = static_cast<unsigned int>(std::strlen(buffer));
    char exact[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    EXPECT_EQ(c.fn(Gpu(0), exact, length), NVML_ERROR_INSUFFICIENT_SIZE) << c.what;
    EXPECT_EQ(c.fn(Gpu(0), exact, length + 1), NVML_SUCCESS) << c.what;
    EXPECT_STREQ(exact, buffer) << c.what;
    EXPECT_EQ(c.fn(Gpu(0), nullptr, sizeof(buffer)), NVML_ERROR_INVALID_ARGUMENT) << c.what;
  }
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  EXPECT_EQ(nvml.nvmlSystemGetDriverVersion(version, 9), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(nvml.nvmlSystemGetDriverVersion(version, 10), NVML_SUCCESS);
  EXPECT_STREQ(version, "570.86.15");
}

TEST_F(FakeNvmlDevice, NullPointersAndBadHandlesAreInvalidArgument) {
  ASSERT_EQ(Start("l4-4x-pcie"), NVML_SUCCESS);
  unsigned int value = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetCount_v2(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(0, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(4, reinterpret_cast<nvmlDevice_t*>(&value)),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetPciInfo_v3(Gpu(0), nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(Gpu(0), NVML_TEMPERATURE_GPU, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(Gpu(0), 1, &value), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetIndex(nullptr, &value), NVML_ERROR_INVALID_ARGUMENT);
  // Something that is not a handle the library gave out.
  const auto forged = reinterpret_cast<nvmlDevice_t>(&value);
  EXPECT_EQ(nvml.nvmlDeviceGetIndex(forged, &value), NVML_ERROR_INVALID_ARGUMENT);
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000", &device),
            NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByUUID(nullptr, &device), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(FakeNvmlDevice, ProcessListsReportTheCountNeeded) {
  ASSERT_EQ(Start(TestData("faults.yaml")), NVML_SUCCESS);
  unsigned int count = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetComputeRunningProcesses_v3(Gpu(0), &count, nullptr),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 3u);
  nvmlProcessInfo_t infos[3] = {};
  count = 2;
  EXPECT_EQ(nvml.nvmlDeviceGetComputeRunningProcesses_v3(Gpu(0), &count, infos),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 3u);
  ASSERT_EQ(nvml.nvmlDeviceGetComputeRunningProcesses_v3(Gpu(0), &count, infos), NVML_SUCCESS);
  EXPECT_EQ(infos[1].pid, 1002u);
  EXPECT_EQ(infos[1].usedGpuMemory, 2048 * kMiB);
  EXPECT_EQ(infos[1].gpuInstanceId, 0xFFFFFFFFu);
  EXPECT_EQ(infos[1].computeInstanceId, 0xFFFFFFFFu);
  EXPECT_EQ(nvml.nvmlDeviceGetComputeRunningProcesses_v3(Gpu(0), nullptr, infos),
            NVML_ERROR_INVALID_ARGUMENT);
  count = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetComputeRunningProcesses_v3(Gpu(1), &count, nullptr), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  count = 1;
  ASSERT_EQ(nvml.nvmlDeviceGetComputeRunningProcesses_v3(Gpu(2), &count, infos), NVML_SUCCESS);
  EXPECT_EQ(infos[0].pid, 2001u);
  EXPECT_EQ(infos[0].gpuInstanceId, 2u);
  EXPECT_EQ(infos[0].computeInstanceId, 0u);
  // Memory in use is what the processes hold.
  nvmlMemory_v2_t memory{};
  memory.version = nvmlMemory_v2;
  ASSERT_EQ(nvml.nvmlDeviceGetMemoryInfo_v2(Gpu(0), &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.used, (1024 + 2048 + 512) * kMiB);
  EXPECT_EQ(memory.reserved, 256 * kMiB);
  EXPECT_EQ(memory.free, (15360 - 256 - 3584) * kMiB);
}

TEST_F(FakeNvmlDevice, VersionedStructsNeedTheRightVersion) {
  ASSERT_EQ(Start("h100-8x-nvswitch"), NVML_SUCCESS);
  nvmlMemory_v2_t memory{};
  memory.version = 2;  // the bare number, a classic mistake
  EXPECT_EQ(nvml.nvmlDeviceGetMemoryInfo_v2(Gpu(0), &memory), NVML_ERROR_FUNCTION_NOT_FOUND);
  memory.version = nvmlMemory_v2;
  EXPECT_EQ(nvml.nvmlDeviceGetMemoryInfo_v2(Gpu(0), &memory), NVML_SUCCESS);
  nvmlMemory_t v1{};
  ASSERT_EQ(nvml.nvmlDeviceGetMemoryInfo(Gpu(0), &v1), NVML_SUCCESS);
  EXPECT_EQ(v1.used, memory.reserved + memory.used) << "v1 counts reserved memory as used";
}

TEST_F(FakeNvmlDevice, MissingFeaturesAreNotSupported) {
  ASSERT_EQ(Start(TestData("faults.yaml")), NVML_SUCCESS);
  nvmlDevice_t t4 = Gpu(0);
  nvmlDevice_t rtx = Gpu(1);
  nvmlDevice_t a100 = Gpu(2);
  unsigned int a = 0;
  unsigned int b = 0;
  unsigned int c = 0;
  unsigned int d = 0;
  unsigned long long count = 0;
  nvmlEnableState_t current = 0;
  nvmlEnableState_t pending = 0;
  // Row remapping arrived with Ampere; Turing retires pages instead.
  EXPECT_EQ(nvml.nvmlDeviceGetRemappedRows(t4, &a, &b, &c, &d), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetRetiredPagesPendingStatus(t4, &pending), NVML_SUCCESS);
  // This A100 has MIG on with a GPU instance: nvml.h says remapped rows are not reported then.
  EXPECT_EQ(nvml.nvmlDeviceGetRemappedRows(a100, &a, &b, &c, &d), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetRetiredPages(a100, 1, &a, nullptr), NVML_ERROR_NOT_SUPPORTED);
  // A consumer card has neither ECC nor a serial number.
  EXPECT_EQ(nvml.nvmlDeviceGetEccMode(rtx, &current, &pending), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetTotalEccErrors(rtx, 1, 0, &count), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetRemappedRows(rtx, &a, &b, &c, &d), NVML_ERROR_NOT_SUPPORTED);
  char serial[NVML_DEVICE_SERIAL_BUFFER_SIZE];
  EXPECT_EQ(nvml.nvmlDeviceGetSerial(rtx, serial, sizeof(serial)), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetEccMode(t4, &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, NVML_FEATURE_ENABLED);
  // Neither has MIG or NVLink.
  EXPECT_EQ(nvml.nvmlDeviceGetMigMode(t4, &a, &b), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetNvLinkState(rtx, 0, &current), NVML_ERROR_NOT_SUPPORTED);
  // The A100 has no thermal table in this scenario.
  EXPECT_EQ(nvml.nvmlDeviceGetTemperatureThreshold(a100, 0, &a), NVML_ERROR_NOT_SUPPORTED);
}

// nvmlDeviceGetGpuFabricInfo: NOT_SUPPORTED without a fabric (every preset), the scenario's
// registration otherwise.
TEST_F(FakeNvmlDevice, FabricInfoIsTheScenarios) {
  ASSERT_EQ(Start("h100-8x-nvswitch"), NVML_SUCCESS);
  nvmlGpuFabricInfo_t info{};
  EXPECT_EQ(nvml.nvmlDeviceGetGpuFabricInfo(Gpu(0), &info), NVML_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);

  ASSERT_EQ(Start(WriteFile("nvl.yaml", R"(driver: {version: "570.86.15", cuda_version: "12.8"}
gpus:
  - {name: NVIDIA GB200, pci_bus_id: "0000:01:00.0", pci_device_id: 0x2941,
     architecture: blackwell, compute_capability: "10.0", memory_mib: 189471,
     fabric: {cluster_uuid: "6d9a5c4e-0a2b-4c1d-9e8f-1a2b3c4d5e6f", clique_id: 32766}}
  - {name: NVIDIA GB200, pci_bus_id: "0000:02:00.0", pci_device_id: 0x2941,
     architecture: blackwell, compute_capability: "10.0", memory_mib: 189471,
     fabric: {cluster_uuid: "6d9a5c4e0a2b4c1d9e8f1a2b3c4d5e6f", state: in_progress}}
)")),
            NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetGpuFabricInfo(Gpu(0), &info), NVML_SUCCESS);
  const unsigned char uuid[16] = {0x6d, 0x9a, 0x5c, 0x4e, 0x0a, 0x2b, 0x4c, 0x1d,
                                  0x9e, 0x8f, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e, 0x6f};
  EXPECT_EQ(std::memcmp(info.clusterUuid, uuid, sizeof(uuid)), 0);
  EXPECT_EQ(info.cliqueId, 32766u);
  EXPECT_EQ(info.state, NVML_GPU_FABRIC_STATE_COMPLETED);
  EXPECT_EQ(info.status, NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetGpuFabricInfo(Gpu(1), &info), NVML_SUCCESS);
  EXPECT_EQ(info.state, NVML_GPU_FABRIC_STATE_IN_PROGRESS);
  EXPECT_EQ(nvml.nvmlDeviceGetGpuFabricInfo(Gpu(0), nullptr), NVML_ERROR_INVALID_ARGUMENT);

  // The versioned form, as go-nvml calls it: the struct's version picks its size.
  auto info_v = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, nvmlGpuFabricInfoV_t*)>(
      dlsym(NvmlLibrary(), "nvmlDeviceGetGpuFabricInfoV"));
  ASSERT_NE(info_v, nullptr);
  nvmlGpuFabricInfoV_t v3{};
  v3.version = nvmlGpuFabricInfo_v3;
  ASSERT_EQ(info_v(Gpu(0), &v3), NVML_SUCCESS);
  EXPECT_EQ(std::memcmp(v3.clusterUuid, uuid, sizeof(uuid)), 0);
  EXPECT_EQ(v3.cliqueId, 32766u);
  EXPECT_EQ(v3.state, NVML_GPU_FABRIC_STATE_COMPLETED);
  EXPECT_EQ(v3.healthMask, 0u);
  EXPECT_EQ(v3.healthSummary, NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY);
  nvmlGpuFabricInfoV_t v2{};
  v2.version = nvmlGpuFabricInfo_v2;
  v2.healthSummary = 0xAB;  // past the end of a version 2 struct: left alone
  ASSERT_EQ(info_v(Gpu(1), &v2), NVML_SUCCESS);
  EXPECT_EQ(v2.state, NVML_GPU_FABRIC_STATE_IN_PROGRESS);
  EXPECT_EQ(v2.healthSummary, 0xAB);
  nvmlGpuFabricInfoV_t unknown{};
  unknown.version = 0x01000020;
  EXPECT_EQ(info_v(Gpu(0), &unknown), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  EXPECT_EQ(info_v(Gpu(0), nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(FakeNvmlDevice, L4HasNoMig) {
  ASSERT_EQ(Start("l4-4x-pcie"), NVML_SUCCESS);
  unsigned int current = 0;
  unsigned int pending = 0;
  nvmlReturn_t activation = NVML_SUCCESS;
  EXPECT_EQ(nvml.nvmlDeviceGetMigMode(Gpu(0), &current, &pending), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceSetMigMode(Gpu(0), NVML_DEVICE_MIG_ENABLE, &activation),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetMaxMigDeviceCount(Gpu(0), &current), NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(FakeNvmlDevice, ComputeModeIsKeptPerGpu) {
  ASSERT_EQ(Start("h100-8x-nvswitch"), NVML_SUCCESS);
  nvmlComputeMode_t mode = -1;
  ASSERT_EQ(nvml.nvmlDeviceGetComputeMode(Gpu(1), &mode), NVML_SUCCESS);
  EXPECT_EQ(mode, NVML_COMPUTEMODE_DEFAULT);
  ASSERT_EQ(nvml.nvmlDeviceSetComputeMode(Gpu(1), NVML_COMPUTEMODE_EXCLUSIVE_PROCESS),
            NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetComputeMode(Gpu(1), &mode), NVML_SUCCESS);
  EXPECT_EQ(mode, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetComputeMode(Gpu(0), &mode), NVML_SUCCESS);
  EXPECT_EQ(mode, NVML_COMPUTEMODE_DEFAULT) << "only GPU 1 changed";
  EXPECT_EQ(nvml.nvmlDeviceSetComputeMode(Gpu(1), NVML_COMPUTEMODE_EXCLUSIVE_THREAD),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceSetComputeMode(Gpu(1), 7), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetComputeMode(Gpu(1), nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(FakeNvmlDevice, PowerLimitIsRangeChecked) {
  UseControlFile();
  ASSERT_EQ(Start("h100-8x-nvswitch"), NVML_SUCCESS);
  nvmlDevice_t gpu = Gpu(0);
  unsigned int min = 0;
  unsigned int max = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetPowerManagementLimitConstraints(gpu, &min, &max), NVML_SUCCESS);
  EXPECT_EQ(min, 200000u);
  EXPECT_EQ(max, 700000u);
  EXPECT_EQ(nvml.nvmlDeviceSetPowerManagementLimit(gpu, 199999), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceSetPowerManagementLimit(gpu, 700001), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(nvml.nvmlDeviceSetPowerManagementLimit(gpu, 350000), NVML_SUCCESS);
  unsigned int limit = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetPowerManagementLimit(gpu, &limit), NVML_SUCCESS);
  EXPECT_EQ(limit, 350000u);
  ASSERT_EQ(nvml.nvmlDeviceGetEnforcedPowerLimit(gpu, &limit), NVML_SUCCESS);
  EXPECT_EQ(limit, 350000u);
  ASSERT_EQ(nvml.nvmlDeviceGetPowerManagementDefaultLimit(gpu, &limit), NVML_SUCCESS);
  EXPECT_EQ(limit, 700000u);
  // A load above the cap is held at the cap, and the GPU says why its clocks dropped.
  Control("set 0 power_w 500");
  unsigned int usage = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetPowerUsage(gpu, &usage), NVML_SUCCESS);
  EXPECT_EQ(usage, 350000u);
  unsigned long long reasons = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetCurrentClocksEventReasons(gpu, &reasons), NVML_SUCCESS);
  EXPECT_NE(reasons & kSwPowerCap, 0u);
  // Other GPUs keep their own limit.
  ASSERT_EQ(nvml.nvmlDeviceGetPowerManagementLimit(Gpu(1), &limit), NVML_SUCCESS);
  EXPECT_EQ(limit, 700000u);
}

// nvml.h: the enforced limit is the one the GPU holds to, which other limiters (out-of-band
// capping) can put below the management limit; the management limit stays what was set.
TEST_F(FakeNvmlDevice, EnforcedPowerLimitCanBeBelowTheManagementLimit) {
  UseControlFile();
  ASSERT_EQ(Start("h100-8x-nvswitch"), NVML_SUCCESS);
  Control("set 2 power_cap_w 450");
  unsigned int management = 0;
  unsigned int enforced = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetPowerManagementLimit(Gpu(2), &management), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetEnforcedPowerLimit(Gpu(2), &enforced), NVML_SUCCESS);
  EXPECT_EQ(management, 700000u);
  EXPECT_EQ(enforced, 450000u);
  Control("set 2 power_w 600");
  unsigned int usage = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetPowerUsage(Gpu(2), &usage), NVML_SUCCESS);
  EXPECT_EQ(usage, 450000u) << "the draw is held at the enforced limit";
  // A management limit below the cap is enforced as set.
  ASSERT_EQ(nvml.nvmlDeviceSetPowerManagementLimit(Gpu(2), 300000), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetEnforcedPowerLimit(Gpu(2), &enforced), NVML_SUCCESS);
  EXPECT_EQ(enforced, 300000u);
}

TEST_F(FakeNvmlDevice, ReportsTelemetry) {
  UseControlFile();
  ASSERT_EQ(Start("h100-8x-nvswitch"), NVML_SUCCESS);
  nvmlDevice_t gpu = Gpu(3);
  unsigned int value = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetTemperature(gpu, NVML_TEMPERATURE_GPU, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 31u);
  ASSERT_EQ(
      nvml.nvmlDeviceGetTemperatureThreshold(gpu, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &value),
      NVML_SUCCESS);
  EXPECT_EQ(value, 89u);
  EXPECT_EQ(nvml.nvmlDeviceGetTemperatureThreshold(gpu, 4, &value), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetTemperatureThreshold(gpu, 99, &value), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(nvml.nvmlDeviceGetClockInfo(gpu, NVML_CLOCK_SM, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 345u);
  ASSERT_EQ(nvml.nvmlDeviceGetMaxClockInfo(gpu, NVML_CLOCK_SM, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 1980u);
  EXPECT_EQ(nvml.nvmlDeviceGetClockInfo(gpu, 7, &value), NVML_ERROR_INVALID_ARGUMENT);
  nvmlFieldValue_t fields[2] = {};
  fields[0].fieldId = NVML_FI_DEV_MEMORY_TEMP;
  fields[1].fieldId = 999999;
  ASSERT_EQ(nvml.nvmlDeviceGetFieldValues(gpu, 2, fields), NVML_SUCCESS);
  EXPECT_EQ(fields[0].nvmlReturn, NVML_SUCCESS);
  EXPECT_EQ(fields[0].valueType, NVML_VALUE_TYPE_UNSIGNED_INT);
  EXPECT_EQ(fields[0].value.uiVal, 36u);
  EXPECT_EQ(fields[1].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);

  Control("set 3 gpu_util 87");
  Control("set 3 encoder_util 12");
  Control("set 3 temperature_c 90");
  nvmlUtilization_t utilization{};
  ASSERT_EQ(nvml.nvmlDeviceGetUtilizationRates(gpu, &utilization), NVML_SUCCESS);
  EXPECT_EQ(utilization.gpu, 87u);
  unsigned int period = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetEncoderUtilization(gpu, &value, &period), NVML_SUCCESS);
  EXPECT_EQ(value, 12u);
  EXPECT_GT(period, 0u);
  unsigned long long reasons = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetCurrentClocksEventReasons(gpu, &reasons), NVML_SUCCESS);
  EXPECT_NE(reasons & kHwThermalSlowdown, 0u) << "90 C is past the 89 C slowdown threshold";
}

TEST_F(FakeNvmlDevice, PcieTopologyLevels) {
  ASSERT_EQ(Start("l4-4x-pcie"), NVML_SUCCESS);
  int level = -1;
  ASSERT_EQ(nvml.nvmlDeviceGetTopologyCommonAncestor(Gpu(0), Gpu(0), &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_INTERNAL);
  ASSERT_EQ(nvml.nvmlDeviceGetTopologyCommonAncestor(Gpu(0), Gpu(1), &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_SINGLE);
  ASSERT_EQ(nvml.nvmlDeviceGetTopologyCommonAncestor(Gpu(3), Gpu(2), &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_SINGLE);
  ASSERT_EQ(nvml.nvmlDeviceGetTopologyCommonAncestor(Gpu(1), Gpu(2), &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_SYSTEM);
  EXPECT_EQ(nvml.nvmlDeviceGetTopologyCommonAncestor(Gpu(0), Gpu(1), nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);

  ASSERT_EQ(Start("a100-8x-mig"), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetTopologyCommonAncestor(Gpu(0), Gpu(1), &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_MULTIPLE);
  ASSERT_EQ(nvml.nvmlDeviceGetTopologyCommonAncestor(Gpu(0), Gpu(2), &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_NODE);
  ASSERT_EQ(nvml.nvmlDeviceGetTopologyCommonAncestor(Gpu(0), Gpu(7), &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_SYSTEM);
}

TEST_F(FakeNvmlDevice, NvLinksReachTheNvSwitchFabric) {
  ASSERT_EQ(Start("h100-8x-nvswitch"), NVML_SUCCESS);
  for (unsigned int g = 0; g < 8; ++g) {
    unsigned int active = 0;
    for (unsigned int link = 0;; ++link) {
      nvmlEnableState_t state = NVML_FEATURE_DISABLED;
      const nvmlReturn_t result = nvml.nvmlDeviceGetNvLinkState(Gpu(g), link, &state);
      if (result != NVML_SUCCESS) {
        EXPECT_EQ(result, NVML_ERROR_INVALID_ARGUMENT);
        break;
      }
      if (state == NVML_FEATURE_ENABLED) ++active;
    }
    EXPECT_EQ(active, 18u) << "GPU " << g;
  }
  nvmlPciInfo_t remote{};
  ASSERT_EQ(nvml.nvmlDeviceGetNvLinkRemotePciInfo_v2(Gpu(5), 0, &remote), NVML_SUCCESS);
  EXPECT_STREQ(remote.busId, "00000000:05:00.0");
  EXPECT_EQ(remote.pciDeviceId, 0x22a3u << 16 | 0x10de);
  ASSERT_EQ(nvml.nvmlDeviceGetNvLinkRemotePciInfo_v2(Gpu(5), 17, &remote), NVML_SUCCESS);
  EXPECT_STREQ(remote.busId, "00000000:08:00.0");
  int level = -1;
  ASSERT_EQ(nvml.nvmlDeviceGetTopologyCommonAncestor(Gpu(0), Gpu(1), &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_NODE);
  ASSERT_EQ(nvml.nvmlDeviceGetTopologyCommonAncestor(Gpu(3), Gpu(4), &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_SYSTEM);
}

TEST_F(FakeNvmlDevice, PeerLinksAndTopologyOverrides) {
  const std::string path = WriteFile("pair.yaml", R"(
driver: {version: "535.183.01", cuda_version: "12.2"}
models:
  v100:
    name: Tesla V100-SXM2-16GB
    pci_device_id: 0x1db1
    architecture: volta
    compute_capability: "7.0"
    memory_mib: 16384
gpus:
  - {model: v100, pci_bus_id: "0000:15:00.0", nvlink: {version: 2, links: [{gpu: 1, count: 2}]}}
  - {model: v100, pci_bus_id: "0000:16:00.0", nvlink: {version: 2, links: [{gpu: 0, count: 2}]}}
topology:
  - {gpus: [0, 1], level: hostbridge}
)");
  ASSERT_EQ(Start(path), NVML_SUCCESS);
  nvmlPciInfo_t remote{};
  ASSERT_EQ(nvml.nvmlDeviceGetNvLinkRemotePciInfo_v2(Gpu(0), 1, &remote), NVML_SUCCESS);
  EXPECT_STREQ(remote.busId, "00000000:16:00.0");
  EXPECT_EQ(remote.pciDeviceId, 0x1db1u << 16 | 0x10de);
  nvmlEnableState_t state = NVML_FEATURE_DISABLED;
  EXPECT_EQ(nvml.nvmlDeviceGetNvLinkState(Gpu(0), 2, &state), NVML_ERROR_INVALID_ARGUMENT);
  int level = -1;
  ASSERT_EQ(nvml.nvmlDeviceGetTopologyCommonAncestor(Gpu(1), Gpu(0), &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_HOSTBRIDGE);
}

}  // namespace
}  // namespace gpuop::fakenvml
