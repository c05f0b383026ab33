// Loading, exports, init and shutdown, scenario selection and errors.

#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <elf.h>

#include "test/fakes/nvml/fake_nvml_test_util.h"

namespace gpuop::fakenvml {
namespace {

using ::testing::HasSubstr;

// The names of the defined symbols in the dynamic symbol table of an ELF64 shared library.
std::vector<std::string> ExportedSymbols(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> names;
  if (image.size() < sizeof(Elf64_Ehdr)) return names;
  Elf64_Ehdr header;
  std::memcpy(&header, image.data(), sizeof(header));
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  std::memcpy(sections.data(), image.data() + header.e_shoff, header.e_shnum * sizeof(Elf64_Shdr));
  for (const Elf64_Shdr& section : sections) {
    if (section.sh_type != SHT_DYNSYM) continue;
    const Elf64_Shdr& strings = sections[section.sh_link];
    for (size_t offset = 0; offset < section.sh_size; offset += sizeof(Elf64_Sym)) {
      Elf64_Sym symbol;
      std::memcpy(&symbol, image.data() + section.sh_offset + offset, sizeof(symbol));
      if (symbol.st_shndx == SHN_UNDEF || symbol.st_name == 0) continue;
      names.emplace_back(image.data() + strings.sh_offset + symbol.st_name);
    }
  }
  return names;
}

TEST(FakeNvmlExports, ResolvesEveryDeclaredEntryPoint) {
  LoadNvml();
  EXPECT_EQ(NvmlMissingSymbols(), "");
}

TEST(FakeNvmlExports, ExportsOnlyNvmlSymbolsAndItsOwn) {
  const std::vector<std::string> names = ExportedSymbols(NvmlLibraryPath());
  ASSERT_FALSE(names.empty());
  for (const std::string& name : names) {
    if (name == "gpuop_fake_nvml_simulated") continue;  // how the fake libcuda recognises it
    if (name == "gpuop_fake_nvml_reset_gpu") continue;  // the simulated nvidia-smi -r
    EXPECT_EQ(name.rfind("nvml", 0), 0u) << "exported: " << name;
  }
  const std::set<std::string> set(names.begin(), names.end());
  EXPECT_TRUE(set.contains("gpuop_fake_nvml_reset_gpu"));
  for (const char* legacy : {"nvmlInit", "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex",
                             "nvmlInit_v2", "nvmlErrorString"}) {
    EXPECT_TRUE(set.contains(legacy)) << legacy;
  }
}

using FakeNvmlInit = FakeNvmlTest;

TEST_F(FakeNvmlInit, CallsBeforeInitAreUninitialized) {
  unsigned int count = 0;
  nvmlDevice_t device = nullptr;
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  nvmlEventSet_t set = nullptr;
  EXPECT_EQ(nvml.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(0, &device), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml.nvmlSystemGetDriverVersion(version, sizeof(version)), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml.nvmlEventSetCreate(&set), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml.nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(FakeNvmlInit, InitIsReferenceCounted) {
  ASSERT_EQ(Start("l4-4x-pcie"), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlInit_v2(), NVML_SUCCESS);
  unsigned int count = 0;
  EXPECT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS) << "one reference is left";
  EXPECT_EQ(count, 4u);
  EXPECT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml.nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(FakeNvmlInit, HandlesAreUnusableAfterTheLastShutdown) {
  ASSERT_EQ(Start("l4-4x-pcie"), NVML_SUCCESS);
  nvmlDevice_t device = Gpu(0);
  ASSERT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  EXPECT_EQ(nvml.nvmlDeviceGetName(device, name, sizeof(name)), NVML_ERROR_UNINITIALIZED);
}

TEST_F(FakeNvmlInit, LegacyEntryPointsBehaveLikeVersionedOnes) {
  setenv("GPUOP_FAKE_NVML_SCENARIO", "h100-8x-nvswitch", 1);
  ASSERT_EQ(nvml.nvmlInit(), NVML_SUCCESS);
  unsigned int count = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetCount(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 8u);
  nvmlDevice_t legacy = nullptr;
  ASSERT_EQ(nvml.nvmlDeviceGetHandleByIndex(7, &legacy), NVML_SUCCESS);
  EXPECT_EQ(legacy, Gpu(7));
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex(8, &legacy), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(FakeNvmlInit, WithoutScenarioTheDriverIsNotLoaded) {
  ForgetPrintedFailures();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(nvml.nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("GPUOP_FAKE_NVML_SCENARIO"));
  unsigned int count = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml.nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(FakeNvmlInit, UnknownPresetIsNotLoaded) {
  ForgetPrintedFailures();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Start("dgx-b300"), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("no preset \"dgx-b300\""));
}

TEST_F(FakeNvmlInit, BrokenScenarioNamesTheFileAndTheField) {
  ForgetPrintedFailures();
  const std::string path = WriteFile("broken.yaml", R"(
driver: {version: "570.86.15", cuda_version: "12.8"}
gpus:
  - name: NVIDIA L4
    pci_bus_id: "0000:17:00.0"
    pci_device_id: 0x27b8
    architecture: ada
    compute_capability: "8.9"
    memory_mib: lots
)");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Start(path), NVML_ERROR_DRIVER_NOT_LOADED);
  // A consumer retrying init does not flood the log.
  EXPECT_EQ(nvml.nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr(path));
  EXPECT_THAT(log, HasSubstr("gpus[0].memory_mib"));
  EXPECT_THAT(log, HasSubstr("\"lots\""));
  EXPECT_EQ(log.find(path), log.rfind(path)) << "printed twice: " << log;
}

TEST_F(FakeNvmlInit, ScenarioErrorsAreSpecific) {
  const struct {
    const char* yaml;
    const char* expected;
  } kCases[] = {
      {"gpus: []", "driver: required"},
      {"driver: {version: x, cuda_version: twelve}", "driver.cuda_version"},
      {"driver: {version: x, cuda_version: 12.8}\nextra: 1", "extra: unknown field"},
      {"driver: {version: x, cuda_version: 12.8}\ngpus: [{model: nope}]", "gpus[0].model"},
      {"driver: {version: x, cuda_version: 12.8}\ntimeline: [{at: soon, gpu: all, lost: true}]",
       "timeline[0].at"},
      {"driver: [", "invalid YAML"},
      {R"(driver: {version: x, cuda_version: 12.8}
gpus:
  - name: NVIDIA A100-SXM4-40GB
    pci_bus_id: "0000:07:00.0"
    pci_device_id: 0x20b0
    architecture: ampere
    compute_capability: "8.0"
    memory_mib: 40960
    mig:
      profiles:
        - {name: 4g.20gb, index: 3, id: 5, slices: 4, instances: 1, memory_mib: 19968,
           multiprocessors: 56, placement_size: 4, placements: [0]}
    mig_mode: enabled
    mig_instances: [{profile: 4g.20gb}, {profile: 4g.20gb}]
)",
       "gpus[0].mig_instances[1]: 4g.20gb does not fit"},
      {R"(driver: {version: x, cuda_version: 12.8}
gpus:
  - {name: NVIDIA GB200, pci_bus_id: "0000:01:00.0", pci_device_id: 0x2941,
     architecture: blackwell, compute_capability: "10.0", memory_mib: 189471,
     fabric: {cluster_uuid: "not-a-uuid", clique_id: 1}}
)",
       "gpus[0].fabric.cluster_uuid: expected a UUID of 32 hex digits, got \"not-a-uuid\""},
      {R"(driver: {version: x, cuda_version: 12.8}
gpus:
  - {name: NVIDIA GB200, pci_bus_id: "0000:01:00.0", pci_device_id: 0x2941,
     architecture: blackwell, compute_capability: "10.0", memory_mib: 189471,
     fabric: {cluster_uuid: "6d9a5c4e-0a2b-4c1d-9e8f-1a2b3c4d5e6f", state: done}}
)",
       "gpus[0].fabric.state: expected not_started, in_progress or completed"},
  };
  for (const auto& c : kCases) {
    ForgetPrintedFailures();
    const std::string path = WriteFile("case.yaml", c.yaml);
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(Start(path), NVML_ERROR_DRIVER_NOT_LOADED) << c.yaml;
    EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr(c.expected)) << c.yaml;
  }
}

TEST_F(FakeNvmlInit, RereadsTheScenarioAfterAFullShutdown) {
  ASSERT_EQ(Start("l4-4x-pcie"), NVML_SUCCESS);
  unsigned int count = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 4u);
  ASSERT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);
  ASSERT_EQ(Start("no-gpus"), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
}

TEST_F(FakeNvmlInit, LoadsAScenarioByPath) {
  ASSERT_EQ(Start(TestData("faults.yaml")), NVML_SUCCESS);
  unsigned int count = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 3u);
}

TEST_F(FakeNvmlInit, DerivedIdentitiesAreStablePerNode) {
  auto uuid_of_gpu0 = [&](const char* node) {
    setenv("GPUOP_FAKE_NVML_NODE", node, 1);
    EXPECT_EQ(Start("l4-4x-pcie"), NVML_SUCCESS);
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    EXPECT_EQ(nvml.nvmlDeviceGetUUID(Gpu(0), uuid, sizeof(uuid)), NVML_SUCCESS);
    EXPECT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);
    return std::string(uuid);
  };
  const std::string first = uuid_of_gpu0("node-a");
  EXPECT_EQ(uuid_of_gpu0("node-a"), first);
  EXPECT_NE(uuid_of_gpu0("node-b"), first);
}

TEST_F(FakeNvmlInit, ErrorStringsAreStable) {
  const struct {
    nvmlReturn_t code;
    const char* text;
  } kCases[] = {
      {NVML_SUCCESS, "Success"},
      {NVML_ERROR_UNINITIALIZED, "Uninitialized"},
      {NVML_ERROR_INVALID_ARGUMENT, "Invalid Argument"},
      {NVML_ERROR_NOT_SUPPORTED, "Not Supported"},
      {NVML_ERROR_NOT_FOUND, "Not Found"},
      {NVML_ERROR_INSUFFICIENT_SIZE, "Insufficient Size"},
      {NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded"},
      {NVML_ERROR_TIMEOUT, "Timeout"},
      {NVML_ERROR_FUNCTION_NOT_FOUND, "Function Not Found"},
      {NVML_ERROR_GPU_IS_LOST, "GPU is lost"},
      {NVML_ERROR_IN_USE, "In use by another client"},
      {NVML_ERROR_INSUFFICIENT_RESOURCES, "Insufficient resources for request"},
      {NVML_ERROR_UNKNOWN, "Unknown Error"},
      {12345, "Unknown Error"},
  };
  for (const auto& c : kCases) EXPECT_STREQ(nvml.nvmlErrorString(c.code), c.text) << c.code;
  // Usable before init.
  EXPECT_EQ(nvml.nvmlErrorString(NVML_SUCCESS), nvml.nvmlErrorString(NVML_SUCCESS));
}

}  // namespace
}  // namespace gpuop::fakenvml
