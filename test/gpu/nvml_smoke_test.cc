// Checks the machine's real NVIDIA driver through its NVML library. Skips on machines without
// the library or without a loaded driver, so the `gpu` label is safe to run anywhere.
#include <dlfcn.h>
#include <gtest/gtest.h>

namespace gpuop {
namespace {

// From nvml.h: nvmlReturn_t values and the versioned entry points used here.
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlErrorDriverNotLoaded = 9;
using InitFn = int (*)();
using CountFn = int (*)(unsigned int*);
using DriverVersionFn = int (*)(char*, unsigned int);

class NvmlSmokeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) GTEST_SKIP() << "no NVIDIA driver library: " << dlerror();
    auto init = reinterpret_cast<InitFn>(dlsym(lib_, "nvmlInit_v2"));
    ASSERT_NE(init, nullptr) << "libnvidia-ml.so.1 lacks nvmlInit_v2";
    const int rc = init();
    if (rc == kNvmlErrorDriverNotLoaded) GTEST_SKIP() << "NVIDIA driver not loaded";
    ASSERT_EQ(rc, kNvmlSuccess) << "nvmlInit_v2";
  }
  void TearDown() override {
    if (lib_ == nullptr) return;
    if (auto shutdown = reinterpret_cast<InitFn>(dlsym(lib_, "nvmlShutdown"))) shutdown();
    dlclose(lib_);
  }
  template <typename Fn>
  Fn Symbol(const char* name) {
    return reinterpret_cast<Fn>(dlsym(lib_, name));
  }

  void* lib_ = nullptr;
};

TEST_F(NvmlSmokeTest, DriverReportsAtLeastOneGpuAndAVersion) {
  auto count_fn = Symbol<CountFn>("nvmlDeviceGetCount_v2");
  ASSERT_NE(count_fn, nullptr);
  unsigned int count = 0;
  ASSERT_EQ(count_fn(&count), kNvmlSuccess);
  EXPECT_GE(count, 1u);

  auto version_fn = Symbol<DriverVersionFn>("nvmlSystemGetDriverVersion");
  ASSERT_NE(version_fn, nullptr);
  char version[80] = {0};
  ASSERT_EQ(version_fn(version, sizeof(version)), kNvmlSuccess);
  EXPECT_NE(std::string(version).find('.'), std::string::npos) << version;
  std::printf("driver %s, %u GPU(s)\n", version, count);
}

}  // namespace
}  // namespace gpuop
