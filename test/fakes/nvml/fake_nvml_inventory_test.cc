// What each preset machine reports: the inventory a node agent discovers.

#include <ostream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <dlfcn.h>

#include "test/fakes/nvml/fake_nvml_test_util.h"

namespace gpuop::fakenvml {
namespace {

constexpr unsigned long long kMiB = 1024ULL * 1024ULL;

struct Preset {
  const char* name;
  unsigned int count;
  const char* product;
  unsigned long long memory_mib;
  int major;
  int minor;
  unsigned int architecture;
  unsigned int device_id;
  std::vector<unsigned int> numa;  // per GPU
};

// Names the parameter in test output.
void PrintTo(const Preset& preset, std::ostream* out) { *out << preset.name; }

class FakeNvmlInventory : public FakeNvmlTest, public ::testing::WithParamInterface<Preset> {};

TEST_P(FakeNvmlInventory, ReportsThePresetMachine) {
  const Preset& preset = GetParam();
  ASSERT_EQ(Start(preset.name), NVML_SUCCESS);
  char text[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  ASSERT_EQ(nvml.nvmlSystemGetDriverVersion(text, sizeof(text)), NVML_SUCCESS);
  EXPECT_STREQ(text, "570.86.15");
  ASSERT_EQ(nvml.nvmlSystemGetNVMLVersion(text, sizeof(text)), NVML_SUCCESS);
  EXPECT_STREQ(text, "12.570.86.15");
  int cuda = 0;
  ASSERT_EQ(nvml.nvmlSystemGetCudaDriverVersion(&cuda), NVML_SUCCESS);
  EXPECT_EQ(cuda, 12080);

  unsigned int count = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  ASSERT_EQ(count, preset.count);
  const std::regex uuid_format("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  const std::regex bus_format("[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\\.0");
  const std::regex legacy_format("[0-9A-F]{4}:[0-9A-F]{2}:[0-9A-F]{2}\\.0");
  std::set<std::string> uuids;
  std::set<std::string> bus_ids;
  std::set<unsigned int> minors;
  for (unsigned int i = 0; i < count; ++i) {
    SCOPED_TRACE("GPU " + std::to_string(i));
    nvmlDevice_t gpu = Gpu(i);
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    ASSERT_EQ(nvml.nvmlDeviceGetName(gpu, name, sizeof(name)), NVML_SUCCESS);
    EXPECT_STREQ(name, preset.product);
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    ASSERT_EQ(nvml.nvmlDeviceGetUUID(gpu, uuid, sizeof(uuid)), NVML_SUCCESS);
    EXPECT_TRUE(std::regex_match(uuid, uuid_format)) << uuid;
    uuids.insert(uuid);
    nvmlDevice_t by_uuid = nullptr;
    ASSERT_EQ(nvml.nvmlDeviceGetHandleByUUID(uuid, &by_uuid), NVML_SUCCESS);
    EXPECT_EQ(by_uuid, gpu);

    nvmlPciInfo_t pci{};
    ASSERT_EQ(nvml.nvmlDeviceGetPciInfo_v3(gpu, &pci), NVML_SUCCESS);
    EXPECT_TRUE(std::regex_match(pci.busId, bus_format)) << pci.busId;
    EXPECT_TRUE(std::regex_match(pci.busIdLegacy, legacy_format)) << pci.busIdLegacy;
    EXPECT_EQ(std::string(pci.busId).substr(4), pci.busIdLegacy);
    EXPECT_EQ(pci.domain, 0u);
    EXPECT_EQ(pci.pciDeviceId, preset.device_id << 16 | 0x10de);
    bus_ids.insert(pci.busId);

    nvmlMemory_t memory{};
    ASSERT_EQ(nvml.nvmlDeviceGetMemoryInfo(gpu, &memory), NVML_SUCCESS);
    EXPECT_EQ(memory.total, preset.memory_mib * kMiB);
    EXPECT_EQ(memory.free + memory.used, memory.total);
    int major = 0;
    int minor = 0;
    ASSERT_EQ(nvml.nvmlDeviceGetCudaComputeCapability(gpu, &major, &minor), NVML_SUCCESS);
    EXPECT_EQ(major, preset.major);
    EXPECT_EQ(minor, preset.minor);
    nvmlDeviceArchitecture_t architecture = 0;
    ASSERT_EQ(nvml.nvmlDeviceGetArchitecture(gpu, &architecture), NVML_SUCCESS);
    EXPECT_EQ(architecture, preset.architecture);
    // x86 presets: the GPUs are not NUMA nodes, so NVML has no NUMA node to report (nvml.h);
    // their PCI affinity shows only in the topology level between them.
    unsigned int numa = 0;
    EXPECT_EQ(nvml.nvmlDeviceGetNumaNodeId(gpu, &numa), NVML_ERROR_NOT_SUPPORTED);
    ASSERT_NE(nvml.nvmlDeviceGetTopologyCommonAncestor, nullptr);
    if (i > 0 && preset.numa[i] != preset.numa[0]) {
      int level = 0;
      ASSERT_EQ(nvml.nvmlDeviceGetTopologyCommonAncestor(Gpu(0), gpu, &level), NVML_SUCCESS);
      EXPECT_EQ(level, NVML_TOPOLOGY_SYSTEM);
    }
    unsigned int index = 0;
    ASSERT_EQ(nvml.nvmlDeviceGetIndex(gpu, &index), NVML_SUCCESS);
    EXPECT_EQ(index, i);
    unsigned int minor_number = 0;
    ASSERT_EQ(nvml.nvmlDeviceGetMinorNumber(gpu, &minor_number), NVML_SUCCESS);
    minors.insert(minor_number);
    char serial[NVML_DEVICE_SERIAL_BUFFER_SIZE] = {};
    ASSERT_EQ(nvml.nvmlDeviceGetSerial(gpu, serial, sizeof(serial)), NVML_SUCCESS);
    EXPECT_TRUE(std::regex_match(serial, std::regex("1[0-9]{12}"))) << serial;
  }
  EXPECT_EQ(uuids.size(), count);
  EXPECT_EQ(bus_ids.size(), count);
  EXPECT_EQ(minors.size(), count);
}

INSTANTIATE_TEST_SUITE_P(
    Presets, FakeNvmlInventory,
    ::testing::Values(
        Preset{"h100-8x-nvswitch",
               8,
               "NVIDIA H100 80GB HBM3",
               81559,
               9,
               0,
               NVML_DEVICE_ARCH_HOPPER,
               0x2330,
               {0, 0, 0, 0, 1, 1, 1, 1}},
        Preset{"a100-8x-mig",
               8,
               "NVIDIA A100-SXM4-40GB",
               40960,
               8,
               0,
               NVML_DEVICE_ARCH_AMPERE,
               0x20b0,
               {0, 0, 0, 0, 1, 1, 1, 1}},
        Preset{
            "l4-4x-pcie", 4, "NVIDIA L4", 23034, 8, 9, NVML_DEVICE_ARCH_ADA, 0x27b8, {0, 0, 1, 1}}),
    [](const ::testing::TestParamInfo<Preset>& param) {
      std::string name = param.param.name;
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

using FakeNvmlPresets = FakeNvmlTest;

TEST_F(FakeNvmlPresets, OnlyAGpuThatIsANumaNodeReportsOne) {
  const std::string path = WriteFile("grace.yaml", R"(
driver: {version: "570.86.15", cuda_version: "12.8"}
models:
  gh200:
    name: NVIDIA GH200 480GB
    pci_device_id: 0x2342
    architecture: hopper
    compute_capability: "9.0"
    memory_mib: 97871
gpus:
  - {model: gh200, pci_bus_id: "0009:01:00.0", numa_node: 0, gpu_numa_node: 1}
)");
  ASSERT_EQ(Start(path), NVML_SUCCESS);
  unsigned int numa = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetNumaNodeId(Gpu(0), &numa), NVML_SUCCESS);
  EXPECT_EQ(numa, 1u);
}

TEST_F(FakeNvmlPresets, NoGpusIsALoadedDriverWithoutDevices) {
  ASSERT_EQ(Start("no-gpus"), NVML_SUCCESS);
  unsigned int count = 99;
  ASSERT_EQ(nvml.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(0, &device), NVML_ERROR_INVALID_ARGUMENT);
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  EXPECT_EQ(nvml.nvmlSystemGetDriverVersion(version, sizeof(version)), NVML_SUCCESS);
}

TEST_F(FakeNvmlPresets, H100MemoryV2SeparatesReservedMemory) {
  ASSERT_EQ(Start("h100-8x-nvswitch"), NVML_SUCCESS);
  nvmlMemory_v2_t memory{};
  memory.version = nvmlMemory_v2;
  ASSERT_EQ(nvml.nvmlDeviceGetMemoryInfo_v2(Gpu(0), &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, 81559 * kMiB);
  EXPECT_EQ(memory.reserved, 512 * kMiB);
  EXPECT_EQ(memory.used, 0u);
  EXPECT_EQ(memory.free, (81559 - 512) * kMiB);
  unsigned int limit = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetPowerManagementDefaultLimit(Gpu(0), &limit), NVML_SUCCESS);
  EXPECT_EQ(limit, 700000u);
  unsigned int current = 0;
  unsigned int pending = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetMigMode(Gpu(0), &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, static_cast<unsigned int>(NVML_DEVICE_MIG_DISABLE));
}

TEST_F(FakeNvmlPresets, FindsGpusByBusIdInEitherSpelling) {
  ASSERT_EQ(Start("l4-4x-pcie"), NVML_SUCCESS);
  using ByBusId = nvmlReturn_t (*)(const char*, nvmlDevice_t*);
  const auto by_bus_id =
      reinterpret_cast<ByBusId>(dlsym(NvmlLibrary(), "nvmlDeviceGetHandleByPciBusId_v2"));
  ASSERT_NE(by_bus_id, nullptr);
  nvmlPciInfo_t pci{};
  ASSERT_EQ(nvml.nvmlDeviceGetPciInfo_v3(Gpu(2), &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:B1:00.0");
  for (const char* spelling : {"0000:b1:00.0", "00000000:B1:00.0", "b1:00.0"}) {
    nvmlDevice_t device = nullptr;
    ASSERT_EQ(by_bus_id(spelling, &device), NVML_SUCCESS) << spelling;
    EXPECT_EQ(device, Gpu(2)) << spelling;
  }
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(by_bus_id("0000:b2:00.0", &device), NVML_ERROR_NOT_FOUND);
}

}  // namespace
}  // namespace gpuop::fakenvml
