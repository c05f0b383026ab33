#include "test/fakes/nvml/fake_nvml_test_util.h"

#include <cstdlib>
#include <fstream>

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

namespace gpuop::fakenvml {
namespace {

struct Loaded {
  void* library = nullptr;
  Nvml nvml;
  std::string missing;
};

template <typename Fn>
void Resolve(void* library, const char* name, Fn& out, std::string& missing) {
  out = reinterpret_cast<Fn>(dlsym(library, name));
  if (out == nullptr) missing += std::string(name) + " ";
}

const Loaded& Load() {
  static const Loaded* const loaded = [] {
    auto* result = new Loaded();
    void* library = dlopen(GPUOP_FAKE_NVML_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      result->missing = std::string("dlopen: ") + dlerror();
      return result;
    }
    result->library = library;
#define GPUOP_FAKE_NVML_RESOLVE(name, params) \
  Resolve(library, #name, result->nvml.name, result->missing);
    GPUOP_NVML_REQUIRED_FUNCTIONS(GPUOP_FAKE_NVML_RESOLVE)
    GPUOP_NVML_OPTIONAL_FUNCTIONS(GPUOP_FAKE_NVML_RESOLVE)
    GPUOP_FAKE_NVML_RESOLVE(nvmlErrorString, ())
    GPUOP_FAKE_NVML_RESOLVE(nvmlInit, ())
    GPUOP_FAKE_NVML_RESOLVE(nvmlDeviceGetCount, ())
    GPUOP_FAKE_NVML_RESOLVE(nvmlDeviceGetHandleByIndex, ())
#undef GPUOP_FAKE_NVML_RESOLVE
    return result;
  }();
  return *loaded;
}

}  // namespace

const Nvml& LoadNvml() { return Load().nvml; }

std::string NvmlMissingSymbols() { return Load().missing; }

const char* NvmlLibraryPath() { return GPUOP_FAKE_NVML_LIBRARY; }

void* NvmlLibrary() { return Load().library; }

std::string TestData(const std::string& name) {
  return std::string(GPUOP_FAKE_NVML_TESTDATA) + "/" + name;
}

void FakeNvmlTest::SetUp() {
  ASSERT_EQ(NvmlMissingSymbols(), "");
  for (const char* name :
       {"GPUOP_FAKE_NVML_SCENARIO", "GPUOP_FAKE_NVML_CONTROL", "GPUOP_FAKE_NVML_TIME_SCALE",
        "GPUOP_FAKE_NVML_NODE", "GPUOP_FAKE_NVML_STATE"}) {
    unsetenv(name);
  }
  std::string pattern = ::testing::TempDir() + "fake_nvml_XXXXXX";
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  dir_ = pattern;
}

void FakeNvmlTest::TearDown() {
  if (nvml.nvmlShutdown == nullptr) return;
  while (nvml.nvmlShutdown() == NVML_SUCCESS) {
  }
}

nvmlReturn_t FakeNvmlTest::Start(const std::string& scenario) {
  setenv("GPUOP_FAKE_NVML_SCENARIO", scenario.c_str(), 1);
  return nvml.nvmlInit_v2();
}

void FakeNvmlTest::ForgetPrintedFailures() {
  ASSERT_EQ(Start("no-gpus"), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);
  unsetenv("GPUOP_FAKE_NVML_SCENARIO");
}

void FakeNvmlTest::UseControlFile() {
  control_ = dir_ + "/control";
  setenv("GPUOP_FAKE_NVML_CONTROL", control_.c_str(), 1);
  setenv("GPUOP_FAKE_NVML_TIME_SCALE", "0", 1);
}

void FakeNvmlTest::Control(const std::string& line) {
  ASSERT_FALSE(control_.empty()) << "call UseControlFile() first";
  const int fd = open(control_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  const std::string text = line + "\n";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
}

std::string FakeNvmlTest::WriteFile(const std::string& name, const std::string& contents) {
  const std::string path = dir_ + "/" + name;
  std::ofstream(path) << contents;
  return path;
}

nvmlDevice_t FakeNvmlTest::Gpu(unsigned int index) {
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(index, &device), NVML_SUCCESS) << "GPU " << index;
  return device;
}

}  // namespace gpuop::fakenvml
