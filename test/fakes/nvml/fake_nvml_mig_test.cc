// MIG: the A100 profile table, placements and capacity, GPU and compute instances, MIG devices.

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "test/fakes/nvml/fake_nvml_test_util.h"

namespace gpuop::fakenvml {
namespace {

constexpr unsigned long long kMiB = 1024ULL * 1024ULL;
// nvidia-smi mig -lgip profile ids on A100-SXM4-40GB.
constexpr unsigned int kProfile1g5gb = 19;
constexpr unsigned int kProfile3g20gb = 9;
constexpr unsigned int kProfile4g20gb = 5;
constexpr unsigned int kProfile7g40gb = 0;

class FakeNvmlMig : public FakeNvmlTest {
 protected:
  void SetUp() override {
    FakeNvmlTest::SetUp();
    ASSERT_EQ(Start("a100-8x-mig"), NVML_SUCCESS);
  }

  std::string Uuid(nvmlDevice_t device) {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    EXPECT_EQ(nvml.nvmlDeviceGetUUID(device, uuid, sizeof(uuid)), NVML_SUCCESS);
    return uuid;
  }

  std::vector<nvmlDevice_t> MigDevices(unsigned int gpu) {
    unsigned int max = 0;
    EXPECT_EQ(nvml.nvmlDeviceGetMaxMigDeviceCount(Gpu(gpu), &max), NVML_SUCCESS);
    std::vector<nvmlDevice_t> devices;
    for (unsigned int i = 0; i < max; ++i) {
      nvmlDevice_t device = nullptr;
      const nvmlReturn_t result = nvml.nvmlDeviceGetMigDeviceHandleByIndex(Gpu(gpu), i, &device);
      if (result == NVML_ERROR_NOT_FOUND) continue;
      EXPECT_EQ(result, NVML_SUCCESS);
      devices.push_back(device);
    }
    return devices;
  }

  unsigned int Remaining(unsigned int gpu, unsigned int profile_id) {
    unsigned int count = 0;
    EXPECT_EQ(nvml.nvmlDeviceGetGpuInstanceRemainingCapacity(Gpu(gpu), profile_id, &count),
              NVML_SUCCESS);
    return count;
  }
};

TEST_F(FakeNvmlMig, ProfileTableIsTheA100s) {
  const struct {
    unsigned int index;
    const char* name;
    unsigned int id;
    unsigned int slices;
    unsigned int instances;
    unsigned long long memory_mib;
    unsigned int multiprocessors;
  } kExpected[] = {
      {0, "MIG 1g.5gb", 19, 1, 7, 4864, 14},  {1, "MIG 2g.10gb", 14, 2, 3, 9856, 28},
      {2, "MIG 3g.20gb", 9, 3, 2, 19968, 42}, {3, "MIG 4g.20gb", 5, 4, 1, 19968, 56},
      {4, "MIG 7g.40gb", 0, 7, 1, 40192, 98}, {7, "MIG 1g.5gb+me", 20, 1, 1, 4864, 14},
      {9, "MIG 1g.10gb", 15, 1, 4, 9856, 14},
  };
  std::set<unsigned int> supported;
  for (const auto& e : kExpected) {
    SCOPED_TRACE(e.name);
    supported.insert(e.index);
    nvmlGpuInstanceProfileInfo_v2_t info{};
    info.version = nvmlGpuInstanceProfileInfo_v2;
    ASSERT_EQ(nvml.nvmlDeviceGetGpuInstanceProfileInfoV(Gpu(3), e.index, &info), NVML_SUCCESS);
    EXPECT_STREQ(info.name, e.name);
    EXPECT_EQ(info.id, e.id);
    EXPECT_EQ(info.sliceCount, e.slices);
    EXPECT_EQ(info.instanceCount, e.instances);
    EXPECT_EQ(info.memorySizeMB, e.memory_mib);
    EXPECT_EQ(info.multiprocessorCount, e.multiprocessors);
  }
  // Enumerating indexes until INVALID_ARGUMENT finds exactly the table.
  for (unsigned int index = 0;; ++index) {
    nvmlGpuInstanceProfileInfo_v2_t info{};
    info.version = nvmlGpuInstanceProfileInfo_v2;
    const nvmlReturn_t result = nvml.nvmlDeviceGetGpuInstanceProfileInfoV(Gpu(3), index, &info);
    if (result == NVML_ERROR_INVALID_ARGUMENT) {
      EXPECT_EQ(index, static_cast<unsigned int>(NVML_GPU_INSTANCE_PROFILE_COUNT));
      break;
    }
    EXPECT_EQ(result, supported.contains(index) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED) << index;
  }
  nvmlGpuInstanceProfileInfo_v2_t info{};
  info.version = 2;
  EXPECT_EQ(nvml.nvmlDeviceGetGpuInstanceProfileInfoV(Gpu(3), 0, &info),
            NVML_ERROR_FUNCTION_NOT_FOUND);
  // The v3 struct (no isP2pSupported, capabilities at the end) is accepted as well.
  struct {
    unsigned int version, id, sliceCount, instanceCount, multiprocessorCount, copyEngineCount,
        decoderCount, encoderCount, jpegCount, ofaCount;
    unsigned long long memorySizeMB;
    char name[96];
    unsigned int capabilities;
  } v3{};
  static_assert(sizeof(v3) == 152);
  v3.version = NvmlStructVersion(sizeof(v3), 3);
  ASSERT_EQ(nvml.nvmlDeviceGetGpuInstanceProfileInfoV(
                Gpu(3), 2, reinterpret_cast<nvmlGpuInstanceProfileInfo_v2_t*>(&v3)),
            NVML_SUCCESS);
  EXPECT_EQ(v3.id, kProfile3g20gb);
  EXPECT_EQ(v3.sliceCount, 3u);
  EXPECT_EQ(v3.memorySizeMB, 19968u);
  EXPECT_STREQ(v3.name, "MIG 3g.20gb");
  // MIG mode off: no profiles.
  info.version = nvmlGpuInstanceProfileInfo_v2;
  EXPECT_EQ(nvml.nvmlDeviceGetGpuInstanceProfileInfoV(Gpu(4), 0, &info), NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(FakeNvmlMig, PlacementsAreTheHardwares) {
  unsigned int count = 0;
  ASSERT_EQ(
      nvml.nvmlDeviceGetGpuInstancePossiblePlacements_v2(Gpu(3), kProfile3g20gb, nullptr, &count),
      NVML_SUCCESS);
  ASSERT_EQ(count, 2u);
  nvmlGpuInstancePlacement_t placements[8] = {};
  count = 1;
  EXPECT_EQ(nvml.nvmlDeviceGetGpuInstancePossiblePlacements_v2(Gpu(3), kProfile3g20gb, placements,
                                                               &count),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 2u);
  ASSERT_EQ(nvml.nvmlDeviceGetGpuInstancePossiblePlacements_v2(Gpu(3), kProfile3g20gb, placements,
                                                               &count),
            NVML_SUCCESS);
  EXPECT_EQ(placements[0].start, 0u);
  EXPECT_EQ(placements[1].start, 4u);
  EXPECT_EQ(placements[1].size, 4u);
  count = 8;
  ASSERT_EQ(nvml.nvmlDeviceGetGpuInstancePossiblePlacements_v2(Gpu(3), kProfile7g40gb, placements,
                                                               &count),
            NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(placements[0].size, 8u);
  EXPECT_EQ(nvml.nvmlDeviceGetGpuInstancePossiblePlacements_v2(Gpu(3), 77, placements, &count),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(FakeNvmlMig, CreatesAndDestroysInstancesWithinCapacity) {
  nvmlDevice_t gpu = Gpu(3);
  EXPECT_EQ(Remaining(3, kProfile1g5gb), 7u);
  nvmlGpuInstance_t half = nullptr;
  ASSERT_EQ(nvml.nvmlDeviceCreateGpuInstance(gpu, kProfile3g20gb, &half), NVML_SUCCESS);
  nvmlGpuInstanceInfo_t info{};
  ASSERT_EQ(nvml.nvmlGpuInstanceGetInfo(half, &info), NVML_SUCCESS);
  EXPECT_EQ(info.device, gpu);
  EXPECT_EQ(info.profileId, kProfile3g20gb);
  EXPECT_EQ(info.placement.start, 4u);
  EXPECT_EQ(info.placement.size, 4u);
  EXPECT_EQ(info.id, 2u) << "the driver numbers the upper half 2";
  EXPECT_EQ(Remaining(3, kProfile3g20gb), 1u);
  EXPECT_EQ(Remaining(3, kProfile1g5gb), 4u);

  nvmlGpuInstance_t rest = nullptr;
  const nvmlGpuInstancePlacement_t taken{4, 4};
  EXPECT_EQ(nvml.nvmlDeviceCreateGpuInstanceWithPlacement(gpu, kProfile3g20gb, &taken, &rest),
            NVML_ERROR_INSUFFICIENT_RESOURCES);
  const nvmlGpuInstancePlacement_t unaligned{2, 4};
  EXPECT_EQ(nvml.nvmlDeviceCreateGpuInstanceWithPlacement(gpu, kProfile3g20gb, &unaligned, &rest),
            NVML_ERROR_INVALID_ARGUMENT);
  const nvmlGpuInstancePlacement_t lower{0, 4};
  ASSERT_EQ(nvml.nvmlDeviceCreateGpuInstanceWithPlacement(gpu, kProfile4g20gb, &lower, &rest),
            NVML_SUCCESS);
  EXPECT_EQ(Remaining(3, kProfile1g5gb), 0u);
  nvmlGpuInstance_t none = nullptr;
  EXPECT_EQ(nvml.nvmlDeviceCreateGpuInstance(gpu, kProfile1g5gb, &none),
            NVML_ERROR_INSUFFICIENT_RESOURCES);

  nvmlGpuInstance_t listed[2] = {};
  unsigned int count = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetGpuInstances(gpu, kProfile3g20gb, listed, &count), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(listed[0], half);
  nvmlGpuInstance_t by_id = nullptr;
  ASSERT_EQ(nvml.nvmlDeviceGetGpuInstanceById(gpu, 1, &by_id), NVML_SUCCESS);
  EXPECT_EQ(by_id, rest);
  EXPECT_EQ(nvml.nvmlDeviceGetGpuInstanceById(gpu, 9, &by_id), NVML_ERROR_NOT_FOUND);

  nvmlComputeInstance_t compute = nullptr;
  ASSERT_EQ(nvml.nvmlGpuInstanceCreateComputeInstance(half, 2, &compute), NVML_SUCCESS);
  nvmlComputeInstance_t more = nullptr;
  EXPECT_EQ(nvml.nvmlGpuInstanceCreateComputeInstance(half, 0, &more),
            NVML_ERROR_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(nvml.nvmlGpuInstanceDestroy(half), NVML_ERROR_IN_USE);
  ASSERT_EQ(nvml.nvmlComputeInstanceDestroy(compute), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlGpuInstanceDestroy(half), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlGpuInstanceGetInfo(half, &info), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlComputeInstanceDestroy(compute), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(Remaining(3, kProfile3g20gb), 1u);
}

TEST_F(FakeNvmlMig, ComputeInstancesSplitAGpuInstance) {
  nvmlGpuInstance_t whole = nullptr;
  ASSERT_EQ(nvml.nvmlDeviceCreateGpuInstance(Gpu(3), kProfile7g40gb, &whole), NVML_SUCCESS);
  const struct {
    unsigned int profile;
    const char* name;
    unsigned int slices;
    unsigned int instances;
    unsigned int multiprocessors;
  } kExpected[] = {{0, "MIG 1c.7g.40gb", 1, 7, 14},
                   {1, "MIG 2c.7g.40gb", 2, 3, 28},
                   {2, "MIG 3c.7g.40gb", 3, 2, 42},
                   {3, "MIG 4c.7g.40gb", 4, 1, 56},
                   {4, "MIG 7g.40gb", 7, 1, 98}};
  for (const auto& e : kExpected) {
    nvmlComputeInstanceProfileInfo_v2_t info{};
    info.version = nvmlComputeInstanceProfileInfo_v2;
    ASSERT_EQ(nvml.nvmlGpuInstanceGetComputeInstanceProfileInfoV(whole, e.profile, 0, &info),
              NVML_SUCCESS);
    EXPECT_STREQ(info.name, e.name);
    EXPECT_EQ(info.id, e.profile);
    EXPECT_EQ(info.sliceCount, e.slices);
    EXPECT_EQ(info.instanceCount, e.instances);
    EXPECT_EQ(info.multiprocessorCount, e.multiprocessors);
  }
  nvmlComputeInstanceProfileInfo_v2_t info{};
  info.version = nvmlComputeInstanceProfileInfo_v2;
  EXPECT_EQ(nvml.nvmlGpuInstanceGetComputeInstanceProfileInfoV(whole, 5, 0, &info),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlGpuInstanceGetComputeInstanceProfileInfoV(whole, 9, 0, &info),
            NVML_ERROR_INVALID_ARGUMENT);
  info.version = 2;
  EXPECT_EQ(nvml.nvmlGpuInstanceGetComputeInstanceProfileInfoV(whole, 0, 0, &info),
            NVML_ERROR_FUNCTION_NOT_FOUND);

  nvmlComputeInstance_t first = nullptr;
  nvmlComputeInstance_t second = nullptr;
  ASSERT_EQ(nvml.nvmlGpuInstanceCreateComputeInstance(whole, 2, &first), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlGpuInstanceCreateComputeInstance(whole, 2, &second), NVML_SUCCESS);
  unsigned int remaining = 9;
  ASSERT_EQ(nvml.nvmlGpuInstanceGetComputeInstanceRemainingCapacity(whole, 0, &remaining),
            NVML_SUCCESS);
  EXPECT_EQ(remaining, 1u) << "slice 3 is left between the two 3-slice instances";
  nvmlComputeInstanceInfo_t ci{};
  ASSERT_EQ(nvml.nvmlComputeInstanceGetInfo_v2(second, &ci), NVML_SUCCESS);
  EXPECT_EQ(ci.device, Gpu(3));
  EXPECT_EQ(ci.gpuInstance, whole);
  EXPECT_EQ(ci.id, 1u);
  EXPECT_EQ(ci.profileId, 2u);
  EXPECT_EQ(ci.placement.start, 4u);
  EXPECT_EQ(ci.placement.size, 3u);
  nvmlComputeInstance_t listed[2] = {};
  unsigned int count = 0;
  ASSERT_EQ(nvml.nvmlGpuInstanceGetComputeInstances(whole, 2, listed, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  std::vector<nvmlDevice_t> devices = MigDevices(3);
  ASSERT_EQ(devices.size(), 2u);
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  ASSERT_EQ(nvml.nvmlDeviceGetName(devices[1], name, sizeof(name)), NVML_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA A100-SXM4-40GB MIG 3c.7g.40gb");
}

// On an idle GPU the driver resets it at once to apply the mode (a busy one:
// fake_nvml_node_state_test.cc).
TEST_F(FakeNvmlMig, ModeChangesOnAnIdleGpuApplyAtOnce) {
  nvmlDevice_t gpu = Gpu(4);
  nvmlGpuInstance_t instance = nullptr;
  EXPECT_EQ(nvml.nvmlDeviceCreateGpuInstance(gpu, kProfile1g5gb, &instance),
            NVML_ERROR_NOT_SUPPORTED);
  nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
  ASSERT_EQ(nvml.nvmlDeviceSetMigMode(gpu, NVML_DEVICE_MIG_ENABLE, &activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_SUCCESS);
  unsigned int current = 0;
  unsigned int pending = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetMigMode(gpu, &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, 1u);
  EXPECT_EQ(pending, 1u);
  ASSERT_EQ(nvml.nvmlDeviceCreateGpuInstance(gpu, kProfile1g5gb, &instance), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlDeviceSetMigMode(gpu, NVML_DEVICE_MIG_DISABLE, &activation),
            NVML_ERROR_IN_USE);
  ASSERT_EQ(nvml.nvmlGpuInstanceDestroy(instance), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceSetMigMode(gpu, NVML_DEVICE_MIG_DISABLE, &activation), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlDeviceSetMigMode(gpu, 2, &activation), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(FakeNvmlMig, MigDevicesHaveHandlesAndUuids) {
  const std::vector<nvmlDevice_t> devices = MigDevices(0);
  ASSERT_EQ(devices.size(), 7u);
  nvmlDevice_t beyond = nullptr;
  EXPECT_EQ(nvml.nvmlDeviceGetMigDeviceHandleByIndex(Gpu(0), 7, &beyond), NVML_ERROR_NOT_FOUND);
  const std::regex format("MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  const std::string parent_uuid = Uuid(Gpu(0));
  std::set<std::string> uuids;
  std::set<unsigned int> gpu_instances;
  for (nvmlDevice_t device : devices) {
    unsigned int is_mig = 0;
    ASSERT_EQ(nvml.nvmlDeviceIsMigDeviceHandle(device, &is_mig), NVML_SUCCESS);
    EXPECT_EQ(is_mig, 1u);
    nvmlDevice_t parent = nullptr;
    ASSERT_EQ(nvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(device, &parent), NVML_SUCCESS);
    EXPECT_EQ(parent, Gpu(0));
    unsigned int gi = 0;
    unsigned int ci = 9;
    ASSERT_EQ(nvml.nvmlDeviceGetGpuInstanceId(device, &gi), NVML_SUCCESS);
    ASSERT_EQ(nvml.nvmlDeviceGetComputeInstanceId(device, &ci), NVML_SUCCESS);
    EXPECT_EQ(ci, 0u);
    gpu_instances.insert(gi);
    const std::string uuid = Uuid(device);
    EXPECT_TRUE(std::regex_match(uuid, format)) << uuid;
    uuids.insert(uuid);
    nvmlDevice_t found = nullptr;
    ASSERT_EQ(nvml.nvmlDeviceGetHandleByUUID(uuid.c_str(), &found), NVML_SUCCESS);
    EXPECT_EQ(found, device);
    const std::string legacy = "MIG-" + parent_uuid + "/" + std::to_string(gi) + "/0";
    ASSERT_EQ(nvml.nvmlDeviceGetHandleByUUID(legacy.c_str(), &found), NVML_SUCCESS) << legacy;
    EXPECT_EQ(found, device);
    nvmlMemory_t memory{};
    ASSERT_EQ(nvml.nvmlDeviceGetMemoryInfo(device, &memory), NVML_SUCCESS);
    EXPECT_EQ(memory.total, 4864 * kMiB);
    unsigned int temperature = 0;
    EXPECT_EQ(nvml.nvmlDeviceGetTemperature(device, NVML_TEMPERATURE_GPU, &temperature),
              NVML_ERROR_NOT_SUPPORTED);
  }
  EXPECT_EQ(uuids.size(), 7u);
  EXPECT_EQ(gpu_instances, (std::set<unsigned int>{7, 8, 9, 10, 11, 12, 13}));
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  ASSERT_EQ(nvml.nvmlDeviceGetName(devices[0], name, sizeof(name)), NVML_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA A100-SXM4-40GB MIG 1g.5gb");

  unsigned int is_mig = 1;
  ASSERT_EQ(nvml.nvmlDeviceIsMigDeviceHandle(Gpu(0), &is_mig), NVML_SUCCESS);
  EXPECT_EQ(is_mig, 0u);
  nvmlDevice_t parent = nullptr;
  EXPECT_EQ(nvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(Gpu(0), &parent),
            NVML_ERROR_INVALID_ARGUMENT);
  unsigned int id = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetGpuInstanceId(Gpu(0), &id), NVML_ERROR_NOT_SUPPORTED);
}

// nvmlDeviceGetAttributes_v2 answers for MIG devices only: a 1g.5gb of GPU 0, and a compute
// instance of 2 slices inside GPU 2's 4g.20gb (it shares the GPU instance's engines).
TEST_F(FakeNvmlMig, MigDevicesReportTheirAttributes) {
  nvmlDeviceAttributes_t a{};
  EXPECT_EQ(nvml.nvmlDeviceGetAttributes_v2(Gpu(0), &a), NVML_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(nvml.nvmlDeviceGetAttributes_v2(MigDevices(0)[0], &a), NVML_SUCCESS);
  EXPECT_EQ(a.multiprocessorCount, 14u);
  EXPECT_EQ(a.gpuInstanceSliceCount, 1u);
  EXPECT_EQ(a.computeInstanceSliceCount, 1u);
  EXPECT_EQ(a.sharedCopyEngineCount, 1u);
  EXPECT_EQ(a.sharedDecoderCount, 0u);
  EXPECT_EQ(a.sharedEncoderCount, 0u);
  EXPECT_EQ(a.sharedJpegCount, 0u);
  EXPECT_EQ(a.sharedOfaCount, 0u);
  EXPECT_EQ(a.memorySizeMB, 4864u);
  ASSERT_EQ(nvml.nvmlDeviceGetAttributes_v2(MigDevices(2)[0], &a), NVML_SUCCESS);
  EXPECT_EQ(a.multiprocessorCount, 28u);
  EXPECT_EQ(a.gpuInstanceSliceCount, 4u);
  EXPECT_EQ(a.computeInstanceSliceCount, 2u);
  EXPECT_EQ(a.sharedCopyEngineCount, 4u);
  EXPECT_EQ(a.sharedDecoderCount, 2u);
  EXPECT_EQ(a.memorySizeMB, 19968u);
  EXPECT_EQ(nvml.nvmlDeviceGetAttributes_v2(MigDevices(0)[0], nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(FakeNvmlMig, ScenarioLayoutsAreCreated) {
  EXPECT_EQ(MigDevices(1).size(), 2u);
  const std::vector<nvmlDevice_t> mixed = MigDevices(2);
  ASSERT_EQ(mixed.size(), 4u);
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  ASSERT_EQ(nvml.nvmlDeviceGetName(mixed[0], name, sizeof(name)), NVML_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA A100-SXM4-40GB MIG 2c.4g.20gb");
  nvmlMemory_t memory{};
  ASSERT_EQ(nvml.nvmlDeviceGetMemoryInfo(mixed[1], &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, 19968 * kMiB) << "compute instances share their GPU instance's memory";
  EXPECT_TRUE(MigDevices(3).empty());
  unsigned int current = 1;
  unsigned int pending = 1;
  ASSERT_EQ(nvml.nvmlDeviceGetMigMode(Gpu(5), &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, 0u);
}

TEST_F(FakeNvmlMig, MigUuidsAreStableAcrossRestarts) {
  std::vector<std::string> before;
  for (nvmlDevice_t device : MigDevices(2)) before.push_back(Uuid(device));
  ASSERT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlInit_v2(), NVML_SUCCESS);
  std::vector<std::string> after;
  for (nvmlDevice_t device : MigDevices(2)) after.push_back(Uuid(device));
  EXPECT_EQ(before, after);
}

}  // namespace
}  // namespace gpuop::fakenvml
