#include "hw/cuda/cuda_validator.h"

#include <filesystem>
#include <fstream>

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "common/process.h"

namespace gpuop::hw {
namespace {

using ::testing::HasSubstr;

// Runs the validator against the fake libcuda (test/fakes/cuda), which adds vectors on the
// host and injects the fault named by GPUOP_FAKE_CUDA_FAULT.
class CudaValidatorTest : public ::testing::Test {
 protected:
  // Holding the library keeps its bookkeeping alive across the validator's dlopen/dlclose.
  void SetUp() override {
    held_ = dlopen(GPUOP_FAKE_CUDA_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(held_, nullptr) << dlerror();
  }
  void TearDown() override {
    unsetenv("GPUOP_FAKE_CUDA_FAULT");
    if (held_ != nullptr) dlclose(held_);
  }

  absl::StatusOr<CudaValidationResult> Run(const char* fault, CudaValidationOptions options = {}) {
    if (fault != nullptr) setenv("GPUOP_FAKE_CUDA_FAULT", fault, 1);
    options.library_path = GPUOP_FAKE_CUDA_LIBRARY;
    return ValidateCuda(options);
  }

  // Allocations, modules and contexts the fake still holds.
  int Live() {
    auto live = reinterpret_cast<int (*)()>(dlsym(held_, "gpuop_fake_cuda_live"));
    return live != nullptr ? live() : -1;
  }

  void* held_ = nullptr;
};

TEST_F(CudaValidatorTest, RunsAndChecksTheKernel) {
  auto result = Run(nullptr, {.elements = 100'000});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->device_name, "Fake CUDA Device");
  EXPECT_EQ(result->driver_version, 12080);
  EXPECT_EQ(result->elements, 100'000);
  EXPECT_EQ(Live(), 0);
}

TEST_F(CudaValidatorTest, SelectsTheGpuByPciBusId) {
  EXPECT_TRUE(Run(nullptr, {.pci_bus_id = "0000:17:00.0", .elements = 10}).ok());
  auto wrong = Run(nullptr, {.pci_bus_id = "0000:99:00.0", .elements = 10});
  EXPECT_THAT(std::string(wrong.status().message()),
              HasSubstr("cuDeviceGetByPCIBusId(GPU 0000:99:00.0): CUDA_ERROR_INVALID_DEVICE"));
}

TEST_F(CudaValidatorTest, WrongResultIsDataLossNamingTheElement) {
  auto result = Run("wrong-result", {.elements = 1000});
  ASSERT_EQ(result.status().code(), absl::StatusCode::kDataLoss) << result.status();
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("element 7 "));
  EXPECT_EQ(Live(), 0);  // Freed on failure too.
}

TEST_F(CudaValidatorTest, DriverErrorsNameTheCall) {
  auto not_ready = Run("not-ready");
  EXPECT_EQ(not_ready.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(not_ready.status().message()),
              HasSubstr("cuCtxCreate_v2(GPU 0): CUDA_ERROR_SYSTEM_NOT_READY (802)"));
  auto bad_ptx = Run("bad-ptx");
  EXPECT_THAT(std::string(bad_ptx.status().message()),
              HasSubstr("cuModuleLoadData(GPU 0): CUDA_ERROR_INVALID_PTX"));
  EXPECT_EQ(Live(), 0);
  auto no_device = Run("no-device");
  EXPECT_THAT(std::string(no_device.status().message()), HasSubstr("CUDA_ERROR_NO_DEVICE"));
}

TEST_F(CudaValidatorTest, MissingDriverIsNotFound) {
  auto result = ValidateCuda({.library_path = "/nonexistent/libcuda.so.1"});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("NVIDIA driver"));
  EXPECT_EQ(ValidateCuda({.elements = 0}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(VectorAddPtxTest, DeclaresTheEntryAndAnOldIsa) {
  const std::string ptx = VectorAddPtx();
  EXPECT_THAT(ptx, HasSubstr(".visible .entry vector_add("));
  EXPECT_THAT(ptx, HasSubstr(".version 6.0"));
  EXPECT_THAT(ptx, HasSubstr(".target sm_50"));
}

// The kernel's PTX through NVIDIA's own assembler, for every architecture from the one it
// targets to the newest gpuop knows, where the machine has ptxas (the CUDA toolkit). No PTX
// parser exists outside the toolkit; without it the PTX is proven by the driver's JIT on a real
// GPU (scripts/gpu-check).
TEST(VectorAddPtxTest, NvidiasAssemblerAcceptsIt) {
  std::string ptxas;
  for (const char* candidate : {"/usr/local/cuda/bin/ptxas", "/usr/bin/ptxas"}) {
    if (std::filesystem::exists(candidate)) ptxas = candidate;
  }
  if (ptxas.empty()) GTEST_SKIP() << "ptxas (the CUDA toolkit) is not on this machine";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gpuop-ptx-test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "vector_add.ptx") << VectorAddPtx();
  for (const char* arch : {"sm_50", "sm_70", "sm_80", "sm_90"}) {
    absl::StatusOr<common::Subprocess> run = common::Subprocess::Spawn(
        {.argv = {ptxas, std::string("--gpu-name=") + arch, (dir / "vector_add.ptx").string(), "-o",
                  (dir / "vector_add.cubin").string()},
         .output_path = dir / "ptxas.log"});
    ASSERT_TRUE(run.ok()) << run.status();
    absl::StatusOr<int> status = run->Wait(absl::Minutes(1));
    ASSERT_TRUE(status.ok());
    EXPECT_EQ(*status, 0) << arch << ": " << run->DescribeExit();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuop::hw
