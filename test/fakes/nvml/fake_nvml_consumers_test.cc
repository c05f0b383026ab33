// What NVIDIA's own NVML consumers call, beyond what gpuop does: go-nvml's walk from a MIG
// device to its profile (the device plugin's and GPU feature discovery's mixed strategy,
// mig-parted), through the unversioned profile calls and a compute instance by id.
#include <dlfcn.h>

#include "test/fakes/nvml/fake_nvml_test_util.h"

namespace gpuop::fakenvml {
namespace {

struct GiProfileV1 {
  unsigned int id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount, copyEngineCount,
      decoderCount, encoderCount, jpegCount, ofaCount;
  unsigned long long memorySizeMB;
};
struct CiProfileV1 {
  unsigned int id, sliceCount, instanceCount, multiprocessorCount, sharedCopyEngineCount,
      sharedDecoderCount, sharedEncoderCount, sharedJpegCount, sharedOfaCount;
};

template <typename Fn>
Fn Symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(NvmlLibrary(), name));
}

using FakeNvmlConsumers = FakeNvmlTest;

TEST_F(FakeNvmlConsumers, AMigDevicesProfileIsFoundTheWayGoNvmlFindsIt) {
  ASSERT_EQ(Start("a100-8x-mig"), NVML_SUCCESS);
  auto gi_profile = Symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned int, GiProfileV1*)>(
      "nvmlDeviceGetGpuInstanceProfileInfo");
  auto ci_profile =
      Symbol<nvmlReturn_t (*)(nvmlGpuInstance_t, unsigned int, unsigned int, CiProfileV1*)>(
          "nvmlGpuInstanceGetComputeInstanceProfileInfo");
  auto ci_by_id = Symbol<nvmlReturn_t (*)(nvmlGpuInstance_t, unsigned int, nvmlComputeInstance_t*)>(
      "nvmlGpuInstanceGetComputeInstanceById");
  ASSERT_NE(gi_profile, nullptr);
  ASSERT_NE(ci_profile, nullptr);
  ASSERT_NE(ci_by_id, nullptr);

  // GPU 1 of the preset: two 3g.20gb GPU instances, one compute instance each.
  nvmlDevice_t gpu = Gpu(1);
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(nvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, 0, &mig), NVML_SUCCESS);
  unsigned int gi_id = 0;
  unsigned int ci_id = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetGpuInstanceId(mig, &gi_id), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetComputeInstanceId(mig, &ci_id), NVML_SUCCESS);
  nvmlGpuInstance_t gi = nullptr;
  ASSERT_EQ(nvml.nvmlDeviceGetGpuInstanceById(gpu, gi_id, &gi), NVML_SUCCESS);
  nvmlGpuInstanceInfo_t gi_info{};
  ASSERT_EQ(nvml.nvmlGpuInstanceGetInfo(gi, &gi_info), NVML_SUCCESS);
  nvmlComputeInstance_t ci = nullptr;
  ASSERT_EQ(ci_by_id(gi, ci_id, &ci), NVML_SUCCESS);
  nvmlComputeInstanceInfo_t ci_info{};
  ASSERT_EQ(nvml.nvmlComputeInstanceGetInfo_v2(ci, &ci_info), NVML_SUCCESS);
  EXPECT_EQ(ci_info.id, ci_id);
  EXPECT_EQ(ci_by_id(gi, 7, &ci), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(ci_by_id(gi, ci_id, nullptr), NVML_ERROR_INVALID_ARGUMENT);

  // The profile whose id the GPU instance has, among the profile indexes.
  int found = -1;
  for (unsigned int index = 0; index < NVML_GPU_INSTANCE_PROFILE_COUNT; ++index) {
    GiProfileV1 info{};
    if (gi_profile(gpu, index, &info) != NVML_SUCCESS) continue;
    if (info.id == gi_info.profileId) {
      found = static_cast<int>(index);
      EXPECT_EQ(info.sliceCount, 3u);
      EXPECT_EQ(info.memorySizeMB, 19968u);
    }
  }
  EXPECT_EQ(found, 2) << "3g.20gb is NVML_GPU_INSTANCE_PROFILE_3_SLICE";
  CiProfileV1 ci_info_v1{};
  ASSERT_EQ(ci_profile(gi, ci_info.profileId, 0, &ci_info_v1), NVML_SUCCESS);
  EXPECT_EQ(ci_info_v1.sliceCount, 3u);
  EXPECT_EQ(gi_profile(gpu, 0, nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace gpuop::fakenvml
