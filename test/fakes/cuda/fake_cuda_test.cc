// The fake libcuda's device list: GPUOP_FAKE_CUDA_DEVICES, else what the fake NVML shows this
// process (device visibility included).

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using CUresult = int;

struct Cuda {
  CUresult (*init)(unsigned int) = nullptr;
  CUresult (*count)(int*) = nullptr;
  CUresult (*bus_id)(char*, int, int) = nullptr;
  CUresult (*name)(char*, int, int) = nullptr;
  CUresult (*by_bus_id)(int*, const char*) = nullptr;
};

const Cuda& LoadCuda() {
  static const Cuda cuda = [] {
    Cuda out;
    // The fake NVML first, by its path: the fake CUDA's dlopen("libnvidia-ml.so.1") then finds
    // it by its SONAME, as it would find the node's library in a container.
    EXPECT_NE(dlopen(GPUOP_FAKE_NVML_LIBRARY, RTLD_NOW | RTLD_LOCAL), nullptr) << dlerror();
    void* library = dlopen(GPUOP_FAKE_CUDA_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(library, nullptr) << dlerror();
    if (library == nullptr) return out;
    out.init = reinterpret_cast<CUresult (*)(unsigned int)>(dlsym(library, "cuInit"));
    out.count = reinterpret_cast<CUresult (*)(int*)>(dlsym(library, "cuDeviceGetCount"));
    out.bus_id =
        reinterpret_cast<CUresult (*)(char*, int, int)>(dlsym(library, "cuDeviceGetPCIBusId"));
    out.name = reinterpret_cast<CUresult (*)(char*, int, int)>(dlsym(library, "cuDeviceGetName"));
    out.by_bus_id =
        reinterpret_cast<CUresult (*)(int*, const char*)>(dlsym(library, "cuDeviceGetByPCIBusId"));
    return out;
  }();
  return cuda;
}

class FakeCudaDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"GPUOP_FAKE_CUDA_DEVICES", "GPUOP_FAKE_CUDA_FAULT",
                             "GPUOP_FAKE_NVML_SCENARIO", "GPUOP_FAKE_NVML_NODE"}) {
      unsetenv(name);
    }
    std::string pattern = ::testing::TempDir() + "fake_cuda_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    ASSERT_NE(cuda.init, nullptr);
  }
  std::vector<std::string> BusIds() {
    std::vector<std::string> ids;
    int count = -1;
    EXPECT_EQ(cuda.count(&count), 0);
    for (int i = 0; i < count; ++i) {
      char id[32] = {};
      EXPECT_EQ(cuda.bus_id(id, sizeof(id), i), 0);
      ids.push_back(id);
    }
    return ids;
  }

  const Cuda& cuda = LoadCuda();
  std::string dir_;
};

TEST_F(FakeCudaDevices, AreTheGpusTheFakeNvmlShows) {
  setenv("GPUOP_FAKE_NVML_SCENARIO", "l4-4x-pcie", 1);
  ASSERT_EQ(cuda.init(0), 0);
  EXPECT_EQ(BusIds(), (std::vector<std::string>{"0000:17:00.0", "0000:31:00.0", "0000:b1:00.0",
                                                "0000:ca:00.0"}));
  char name[64] = {};
  ASSERT_EQ(cuda.name(name, sizeof(name), 2), 0);
  EXPECT_STREQ(name, "NVIDIA L4");
  int device = -1;
  ASSERT_EQ(cuda.by_bus_id(&device, "00000000:B1:00.0"), 0);
  EXPECT_EQ(device, 2);
}

TEST_F(FakeCudaDevices, FollowDeviceVisibility) {
  std::ifstream preset(std::string(GPUOP_FAKE_NVML_PRESETS) + "/l4-4x-pcie.yaml");
  std::ostringstream text;
  text << preset.rdbuf() << "\ndevice_nodes: " << dir_ << "\n";
  const std::string scenario = dir_ + "/visible.yaml";
  std::ofstream(scenario) << text.str();
  std::ofstream(dir_ + "/nvidiactl").flush();
  std::ofstream(dir_ + "/nvidia2").flush();
  setenv("GPUOP_FAKE_NVML_SCENARIO", scenario.c_str(), 1);
  ASSERT_EQ(cuda.init(0), 0);
  EXPECT_EQ(BusIds(), std::vector<std::string>{"0000:b1:00.0"});
}

TEST_F(FakeCudaDevices, AreNoneWhenTheFakeNvmlDoesNotInitialise) {
  // No scenario, and the library file carries none: NVML fails, and so does cuInit.
  EXPECT_EQ(cuda.init(0), 100);  // CUDA_ERROR_NO_DEVICE
  int count = -1;
  EXPECT_EQ(cuda.count(&count), 3);  // CUDA_ERROR_NOT_INITIALIZED
}

TEST_F(FakeCudaDevices, ComeFromTheEnvironmentWhenItListsThem) {
  setenv("GPUOP_FAKE_NVML_SCENARIO", "l4-4x-pcie", 1);
  setenv("GPUOP_FAKE_CUDA_DEVICES", "0000:01:00.0,0000:02:00.0", 1);
  ASSERT_EQ(cuda.init(0), 0);
  EXPECT_EQ(BusIds(), (std::vector<std::string>{"0000:01:00.0", "0000:02:00.0"}));
}

}  // namespace
