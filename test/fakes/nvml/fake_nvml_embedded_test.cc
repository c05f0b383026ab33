// The scenario embedded in the library file: the trailer format, building the node's scenario,
// and a copy of the library that plays it with no environment at all.

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <dlfcn.h>

#include "test/fakes/nvml/embedded.h"
#include "test/fakes/nvml/embedded_scenario.h"
#include "test/fakes/nvml/fake_nvml_test_util.h"
#include "test/fakes/nvml/scenario.h"

namespace gpuop::fakenvml {
namespace {

using ::testing::HasSubstr;

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string PresetPath(const std::string& name) {
  return std::string(GPUOP_FAKE_NVML_PRESETS) + "/" + name + ".yaml";
}

// A copy of the fake library, loaded on its own (another file: another instance).
struct Copy {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;

  std::vector<std::string> Uuids() {
    std::vector<std::string> uuids;
    unsigned int n = 0;
    if (count(&n) != NVML_SUCCESS) return uuids;
    for (unsigned int i = 0; i < n; ++i) {
      nvmlDevice_t device = nullptr;
      char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
      if (handle(i, &device) == NVML_SUCCESS && uuid(device, text, sizeof(text)) == NVML_SUCCESS) {
        uuids.push_back(text);
      }
    }
    return uuids;
  }
};

Copy LoadCopy(const std::string& path) {
  Copy copy;
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept loaded, as consumers do
  EXPECT_NE(library, nullptr) << dlerror();
  if (library == nullptr) return copy;
  copy.init = reinterpret_cast<nvmlReturn_t (*)()>(dlsym(library, "nvmlInit_v2"));
  copy.shutdown = reinterpret_cast<nvmlReturn_t (*)()>(dlsym(library, "nvmlShutdown"));
  copy.count =
      reinterpret_cast<nvmlReturn_t (*)(unsigned int*)>(dlsym(library, "nvmlDeviceGetCount_v2"));
  copy.handle = reinterpret_cast<nvmlReturn_t (*)(unsigned int, nvmlDevice_t*)>(
      dlsym(library, "nvmlDeviceGetHandleByIndex_v2"));
  copy.uuid = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int)>(
      dlsym(library, "nvmlDeviceGetUUID"));
  return copy;
}

TEST(EmbeddedScenarioFormat, AppendsReplacesAndStrips) {
  const std::string library =
      "\x7f"
      "ELF and the rest of an image";
  const std::string once = WithEmbeddedScenario(library, "name: a\n");
  EXPECT_EQ(once.size(), library.size() + 8 + kScenarioTrailerSize);
  EXPECT_EQ(once.substr(library.size(), 8), "name: a\n");
  EXPECT_EQ(WithoutEmbeddedScenario(once), library);
  const std::string twice = WithEmbeddedScenario(once, "name: bb\n");
  EXPECT_EQ(WithoutEmbeddedScenario(twice), library);
  EXPECT_EQ(twice.substr(library.size(), 9), "name: bb\n");
  EXPECT_EQ(WithoutEmbeddedScenario(library), library);
}

class EmbeddedScenarioFile : public FakeNvmlTest {};

TEST_F(EmbeddedScenarioFile, ReadsWhatWasWrittenAndNothingFromAPlainLibrary) {
  const std::string out = dir_ + "/libnvidia-ml.so.1";
  ASSERT_TRUE(WriteLibraryWithScenario(NvmlLibraryPath(), "name: x\n", out).ok());
  absl::StatusOr<std::optional<std::string>> embedded = ReadEmbeddedScenario(out);
  ASSERT_TRUE(embedded.ok()) << embedded.status();
  ASSERT_TRUE(embedded->has_value());
  EXPECT_EQ(**embedded, "name: x\n");
  EXPECT_EQ(WithoutEmbeddedScenario(Read(out)), Read(NvmlLibraryPath()));

  absl::StatusOr<std::optional<std::string>> plain = ReadEmbeddedScenario(NvmlLibraryPath());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->has_value());
  EXPECT_EQ(ReadEmbeddedScenario(dir_ + "/missing").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(EmbeddedScenarioFile, ADamagedTrailerIsAnErrorNamingTheFile) {
  const std::string path =
      WriteFile("damaged.so", std::string("short") + std::string(kScenarioMagic) +
                                  std::string("\xff\xff\xff\x00\x00\x00\x00\x00", 8));
  absl::StatusOr<std::optional<std::string>> embedded = ReadEmbeddedScenario(path);
  EXPECT_EQ(embedded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(embedded.status().message(), HasSubstr(path));
}

TEST(MakeEmbeddedScenario, FixesTheNodeIdentityAndTheDeviceNodes) {
  const std::string origin = PresetPath("l4-4x-pcie");
  const std::string yaml = Read(origin);
  absl::StatusOr<std::string> embedded = MakeEmbeddedScenario(yaml, origin, "node-7", "/dev");
  ASSERT_TRUE(embedded.ok()) << embedded.status();
  EXPECT_THAT(*embedded, HasSubstr("SIMULATED"));
  absl::StatusOr<Scenario> parsed = ParseScenario(*embedded, "embedded", "");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<Scenario> expected = ParseScenario(yaml, origin, "node-7");
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_EQ(parsed->gpus.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(parsed->gpus[i].uuid, expected->gpus[i].uuid);
  EXPECT_EQ(parsed->device_nodes, "/dev");

  absl::StatusOr<std::string> plain = MakeEmbeddedScenario(yaml, origin, "", "");
  ASSERT_TRUE(plain.ok()) << plain.status();
  absl::StatusOr<Scenario> plain_parsed = ParseScenario(*plain, "elsewhere", "");
  absl::StatusOr<Scenario> preset = ParseScenario(yaml, origin, "");
  ASSERT_TRUE(plain_parsed.ok() && preset.ok());
  EXPECT_EQ(plain_parsed->gpus[0].uuid, preset->gpus[0].uuid);
  EXPECT_EQ(plain_parsed->device_nodes, "");
}

TEST(MakeEmbeddedScenario, RejectsAnInvalidScenarioNamingTheField) {
  absl::StatusOr<std::string> embedded =
      MakeEmbeddedScenario("driver: {version: x}\n", "/etc/bad.yaml", "n", "/dev");
  EXPECT_EQ(embedded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(embedded.status().message(), HasSubstr("/etc/bad.yaml"));
  EXPECT_THAT(embedded.status().message(), HasSubstr("driver.cuda_version"));
}

TEST_F(EmbeddedScenarioFile, ACopyPlaysItsScenarioWithNoEnvironment) {
  // What the environment gives for this node...
  setenv("GPUOP_FAKE_NVML_NODE", "node-7", 1);
  ASSERT_EQ(Start("l4-4x-pcie"), NVML_SUCCESS);
  std::vector<std::string> expected;
  for (unsigned int i = 0; i < 4; ++i) {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    ASSERT_EQ(nvml.nvmlDeviceGetUUID(Gpu(i), uuid, sizeof(uuid)), NVML_SUCCESS);
    expected.push_back(uuid);
  }
  ASSERT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);

  // ...a library carrying the node's scenario gives with none.
  absl::StatusOr<std::string> embedded =
      MakeEmbeddedScenario(Read(PresetPath("l4-4x-pcie")), PresetPath("l4-4x-pcie"), "node-7", "");
  ASSERT_TRUE(embedded.ok()) << embedded.status();
  const std::string path = dir_ + "/libnvidia-ml.so.570.86.15";
  ASSERT_TRUE(WriteLibraryWithScenario(NvmlLibraryPath(), *embedded, path).ok());
  unsetenv("GPUOP_FAKE_NVML_SCENARIO");
  setenv("GPUOP_FAKE_NVML_NODE", "some-other-node", 1);  // ignored: the scenario fixes the node
  Copy copy = LoadCopy(path);
  ASSERT_NE(copy.init, nullptr);
  ASSERT_EQ(copy.init(), NVML_SUCCESS);
  EXPECT_EQ(copy.Uuids(), expected);
  ASSERT_EQ(copy.shutdown(), NVML_SUCCESS);

  // The environment still wins when it names a scenario.
  setenv("GPUOP_FAKE_NVML_SCENARIO", PresetPath("h100-8x-nvswitch").c_str(), 1);
  ASSERT_EQ(copy.init(), NVML_SUCCESS);
  EXPECT_EQ(copy.Uuids().size(), 8u);
  ASSERT_EQ(copy.shutdown(), NVML_SUCCESS);
}

TEST_F(EmbeddedScenarioFile, WithoutEitherInitSaysWhatIsMissing) {
  ForgetPrintedFailures();
  const std::string path = dir_ + "/libnvidia-ml.so.1";
  ASSERT_TRUE(WriteLibraryWithScenario(NvmlLibraryPath(), "", path).ok());
  // An empty scenario is still a scenario: it must be a YAML map.
  Copy copy = LoadCopy(path);
  ASSERT_NE(copy.init, nullptr);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(copy.init(), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("(embedded scenario)"));

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(nvml.nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("carries no embedded scenario"));
}

}  // namespace
}  // namespace gpuop::fakenvml
