// The node's MIG state (GPUOP_FAKE_NVML_STATE) shared between processes and kept across NVML
// sessions; MIG mode changes that wait for a GPU reset; the simulated reset itself.

#include <csignal>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/fakes/driver/test_children.h"
#include "test/fakes/nvml/fake_nvml_test_util.h"
#include "test/fakes/nvml/node_state.h"

namespace gpuop::fakenvml {
namespace {

using ::testing::HasSubstr;

// nvidia-smi mig -lgip profile ids on A100-SXM4-40GB.
constexpr unsigned int kProfile1g5gb = 19;
constexpr unsigned int kProfile3g20gb = 9;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Preset(const std::string& name) {
  return Read(std::string(GPUOP_FAKE_NVML_PRESETS) + "/" + name + ".yaml");
}

class FakeNvmlNodeState : public FakeNvmlTest {
 protected:
  void SetUp() override {
    FakeNvmlTest::SetUp();
    reset_ = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t)>(
        dlsym(NvmlLibrary(), "gpuop_fake_nvml_reset_gpu"));
    ASSERT_NE(reset_, nullptr);
  }
  void TearDown() override {
    for (const pid_t pid : children_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    FakeNvmlTest::TearDown();
  }

  void UseStateFile(const std::string& path = "") {
    state_ = path.empty() ? dir_ + "/state" : path;
    setenv("GPUOP_FAKE_NVML_STATE", state_.c_str(), 1);
  }
  void ShutdownFully() {
    while (nvml.nvmlShutdown() == NVML_SUCCESS) {
    }
  }
  nvmlReturn_t Reset(nvmlDevice_t device) { return reset_(device); }

  // {current, pending}; {9, 9} when the call fails.
  std::pair<unsigned int, unsigned int> MigMode(unsigned int gpu) {
    unsigned int current = 9;
    unsigned int pending = 9;
    EXPECT_EQ(nvml.nvmlDeviceGetMigMode(Gpu(gpu), &current, &pending), NVML_SUCCESS);
    return {current, pending};
  }
  nvmlReturn_t SetMigMode(unsigned int gpu, bool enabled, nvmlReturn_t* activation) {
    *activation = NVML_ERROR_UNKNOWN;
    return nvml.nvmlDeviceSetMigMode(
        Gpu(gpu), enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE, activation);
  }
  nvmlReturn_t Create(unsigned int gpu, unsigned int profile, nvmlGpuInstance_t* out = nullptr) {
    nvmlGpuInstance_t instance = nullptr;
    const nvmlReturn_t result = nvml.nvmlDeviceCreateGpuInstance(Gpu(gpu), profile, &instance);
    if (out != nullptr) *out = instance;
    return result;
  }
  // "<id>:<profile>@<start>" for every GPU instance of the GPU, by id.
  std::vector<std::string> Layout(unsigned int gpu) {
    std::vector<std::string> layout;
    for (unsigned int id = 0; id < 32; ++id) {
      nvmlGpuInstance_t instance = nullptr;
      if (nvml.nvmlDeviceGetGpuInstanceById(Gpu(gpu), id, &instance) != NVML_SUCCESS) continue;
      nvmlGpuInstanceInfo_t info{};
      EXPECT_EQ(nvml.nvmlGpuInstanceGetInfo(instance, &info), NVML_SUCCESS);
      layout.push_back(std::to_string(info.id) + ":" + std::to_string(info.profileId) + "@" +
                       std::to_string(info.placement.start));
    }
    return layout;
  }
  std::vector<nvmlDevice_t> MigDevices(unsigned int gpu) {
    std::vector<nvmlDevice_t> devices;
    for (unsigned int i = 0; i < 7; ++i) {
      nvmlDevice_t device = nullptr;
      if (nvml.nvmlDeviceGetMigDeviceHandleByIndex(Gpu(gpu), i, &device) == NVML_SUCCESS) {
        devices.push_back(device);
      }
    }
    return devices;
  }
  std::string Uuid(nvmlDevice_t device) {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    EXPECT_EQ(nvml.nvmlDeviceGetUUID(device, uuid, sizeof(uuid)), NVML_SUCCESS);
    return uuid;
  }
  // Runs `body` in a forked child (another process of the node: it starts its own NVML session)
  // and returns its exit code: 0 when body returned true.
  int InChild(const std::function<bool()>& body) {
    const pid_t pid = fork();
    if (pid == 0) {
      ShutdownFully();  // what this process inherited is not the child's
      _exit(nvml.nvmlInit_v2() == NVML_SUCCESS && body() ? 0 : 1);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
  }

  std::string state_;
  std::vector<pid_t> children_;
  nvmlReturn_t (*reset_)(nvmlDevice_t) = nullptr;
};

TEST_F(FakeNvmlNodeState, MigStateOutlivesTheLastShutdownWithAStateFile) {
  UseStateFile();
  ASSERT_EQ(Start("a100-8x-mig"), NVML_SUCCESS);
  nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
  ASSERT_EQ(SetMigMode(4, true, &activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_SUCCESS);
  nvmlGpuInstance_t instance = nullptr;
  ASSERT_EQ(Create(4, kProfile3g20gb, &instance), NVML_SUCCESS);
  nvmlComputeInstance_t compute = nullptr;
  ASSERT_EQ(nvml.nvmlGpuInstanceCreateComputeInstance(instance, 2, &compute), NVML_SUCCESS);
  const std::string mig_uuid = Uuid(MigDevices(4).at(0));
  EXPECT_THAT(Read(state_), HasSubstr("gi GPU-"));

  ShutdownFully();
  ASSERT_EQ(nvml.nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_EQ(MigMode(4), std::make_pair(1u, 1u));
  EXPECT_EQ(Layout(4), std::vector<std::string>{"2:9@4"});
  ASSERT_EQ(MigDevices(4).size(), 1u);
  EXPECT_EQ(Uuid(MigDevices(4)[0]), mig_uuid);
  EXPECT_EQ(Layout(1), (std::vector<std::string>{"1:9@0", "2:9@4"})) << "no entry: the scenario's";
}

TEST_F(FakeNvmlNodeState, WithoutAStateFileNothingOutlivesTheLastShutdown) {
  ASSERT_EQ(Start("a100-8x-mig"), NVML_SUCCESS);
  nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
  ASSERT_EQ(SetMigMode(4, true, &activation), NVML_SUCCESS);
  ASSERT_EQ(Create(4, kProfile3g20gb), NVML_SUCCESS);
  ShutdownFully();
  ASSERT_EQ(nvml.nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_EQ(MigMode(4), std::make_pair(0u, 0u));
  EXPECT_EQ(Create(4, kProfile3g20gb), NVML_ERROR_NOT_SUPPORTED);
}

// What another process changes shows at this one's next call, without a new session: instances
// it destroyed are gone with their handles, the ones it created appear, the others keep theirs.
TEST_F(FakeNvmlNodeState, AnotherProcessesChangesShowAtTheNextCall) {
  UseStateFile();
  ASSERT_EQ(Start("a100-8x-mig"), NVML_SUCCESS);
  nvmlGpuInstance_t lower = nullptr;
  nvmlGpuInstance_t upper = nullptr;
  ASSERT_EQ(nvml.nvmlDeviceGetGpuInstanceById(Gpu(1), 1, &lower), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetGpuInstanceById(Gpu(1), 2, &upper), NVML_SUCCESS);
  const std::vector<nvmlDevice_t> before = MigDevices(1);
  ASSERT_EQ(before.size(), 2u);

  EXPECT_EQ(
      InChild([&] {
        nvmlGpuInstance_t gone = nullptr;
        nvmlComputeInstance_t computes[1] = {};
        unsigned int count = 0;
        nvmlDevice_t gpu1 = nullptr;
        nvmlDevice_t gpu3 = nullptr;
        nvmlGpuInstance_t created = nullptr;
        return nvml.nvmlDeviceGetHandleByIndex_v2(1, &gpu1) == NVML_SUCCESS &&
               nvml.nvmlDeviceGetHandleByIndex_v2(3, &gpu3) == NVML_SUCCESS &&
               nvml.nvmlDeviceGetGpuInstanceById(gpu1, 1, &gone) == NVML_SUCCESS &&
               nvml.nvmlGpuInstanceGetComputeInstances(gone, 2, computes, &count) == NVML_SUCCESS &&
               count == 1 && nvml.nvmlComputeInstanceDestroy(computes[0]) == NVML_SUCCESS &&
               nvml.nvmlGpuInstanceDestroy(gone) == NVML_SUCCESS &&
               nvml.nvmlDeviceCreateGpuInstance(gpu3, kProfile1g5gb, &created) == NVML_SUCCESS;
      }),
      0);

  nvmlGpuInstanceInfo_t info{};
  EXPECT_EQ(nvml.nvmlGpuInstanceGetInfo(lower, &info), NVML_ERROR_INVALID_ARGUMENT);
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  EXPECT_EQ(nvml.nvmlDeviceGetName(before[0], name, sizeof(name)), NVML_ERROR_INVALID_ARGUMENT)
      << "the destroyed instance's MIG device";
  nvmlGpuInstance_t still = nullptr;
  ASSERT_EQ(nvml.nvmlDeviceGetGpuInstanceById(Gpu(1), 2, &still), NVML_SUCCESS);
  EXPECT_EQ(still, upper) << "an instance that stayed keeps its handle";
  EXPECT_EQ(MigDevices(1), std::vector<nvmlDevice_t>{before[1]});
  EXPECT_EQ(Layout(3), std::vector<std::string>{"13:19@6"});
}

// Both processes create GPU instances at the same time: the lock and the read inside it keep
// every one of them.
TEST_F(FakeNvmlNodeState, ProcessesChangingAtOnceLoseNothing) {
  UseStateFile();
  ASSERT_EQ(Start("a100-8x-mig"), NVML_SUCCESS);
  const pid_t child = fork();
  if (child == 0) {
    ShutdownFully();
    if (nvml.nvmlInit_v2() != NVML_SUCCESS) _exit(1);
    for (int i = 0; i < 3; ++i) {
      if (Create(3, kProfile1g5gb) != NVML_SUCCESS) _exit(2);
    }
    _exit(0);
  }
  ASSERT_GT(child, 0);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Create(3, kProfile1g5gb), NVML_SUCCESS);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(Layout(3).size(), 6u);
  ShutdownFully();
  ASSERT_EQ(nvml.nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_EQ(Layout(3).size(), 6u);
}

// The real driver resets the GPU to change its MIG mode; while a client uses it the change waits
// (current != pending) for a reset, which itself waits for the clients to go.
TEST_F(FakeNvmlNodeState, ModeChangeOnABusyGpuWaitsForAReset) {
  UseControlFile();
  UseStateFile();
  ASSERT_EQ(Start("a100-8x-mig"), NVML_SUCCESS);
  Control("process 4 4242 1024");
  nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
  ASSERT_EQ(SetMigMode(4, true, &activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_ERROR_IN_USE);
  EXPECT_EQ(MigMode(4), std::make_pair(0u, 1u));
  // Everything MIG follows the current mode.
  EXPECT_EQ(Create(4, kProfile1g5gb), NVML_ERROR_NOT_SUPPORTED);
  nvmlGpuInstanceProfileInfo_v2_t info{};
  info.version = nvmlGpuInstanceProfileInfo_v2;
  EXPECT_EQ(nvml.nvmlDeviceGetGpuInstanceProfileInfoV(Gpu(4), 0, &info), NVML_ERROR_NOT_SUPPORTED);
  nvmlUtilization_t utilization{};
  EXPECT_EQ(nvml.nvmlDeviceGetUtilizationRates(Gpu(4), &utilization), NVML_SUCCESS);

  // Setting the current mode again cancels the pending change.
  ASSERT_EQ(SetMigMode(4, false, &activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_SUCCESS);
  EXPECT_EQ(MigMode(4), std::make_pair(0u, 0u));
  ASSERT_EQ(SetMigMode(4, true, &activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_ERROR_IN_USE);

  // Pending is node state too.
  ShutdownFully();
  ASSERT_EQ(nvml.nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_EQ(MigMode(4), std::make_pair(0u, 1u));

  EXPECT_EQ(Reset(Gpu(4)), NVML_ERROR_IN_USE);
  EXPECT_EQ(MigMode(4), std::make_pair(0u, 1u));
  Control("process-exit 4 4242");
  ASSERT_EQ(Reset(Gpu(4)), NVML_SUCCESS);
  EXPECT_EQ(MigMode(4), std::make_pair(1u, 1u));
  EXPECT_EQ(Create(4, kProfile1g5gb), NVML_SUCCESS);
  // Disabling with GPU instances left is still refused.
  EXPECT_EQ(SetMigMode(4, false, &activation), NVML_ERROR_IN_USE);
}

TEST_F(FakeNvmlNodeState, ResetRequiredKeepsEveryChangePending) {
  std::string yaml = Preset("a100-8x-mig");
  const std::string gpu4 = R"({model: a100, pci_bus_id: "0000:87:00.0")";
  const size_t at = yaml.find(gpu4);
  ASSERT_NE(at, std::string::npos);
  yaml.insert(at + gpu4.size(), ", mig_mode_activation: reset_required");
  ASSERT_EQ(Start(WriteFile("passthrough.yaml", yaml)), NVML_SUCCESS);
  nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
  ASSERT_EQ(SetMigMode(4, true, &activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_ERROR_RESET_REQUIRED) << "idle, but the API cannot reset it";
  EXPECT_EQ(MigMode(4), std::make_pair(0u, 1u));
  ASSERT_EQ(Reset(Gpu(4)), NVML_SUCCESS);
  EXPECT_EQ(MigMode(4), std::make_pair(1u, 1u));
  ASSERT_EQ(SetMigMode(4, false, &activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_ERROR_RESET_REQUIRED);
  EXPECT_EQ(MigMode(4), std::make_pair(1u, 0u));
  ASSERT_EQ(Reset(Gpu(4)), NVML_SUCCESS);
  EXPECT_EQ(MigMode(4), std::make_pair(0u, 0u));
  // The other GPUs reset themselves.
  ASSERT_EQ(SetMigMode(5, true, &activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_SUCCESS);
  EXPECT_EQ(MigMode(5), std::make_pair(1u, 1u));
}

TEST_F(FakeNvmlNodeState, MigModeActivationErrorsNameTheField) {
  const struct {
    const char* value;
    const char* model;
    const char* expected;
  } kCases[] = {
      {"sometimes", "a100",
       "gpus[0] (model a100).mig_mode_activation: expected reset or reset_required, got "
       "\"sometimes\""},
      {"reset", "t4", "gpus[0] (model t4).mig_mode_activation: the GPU has no mig table"},
  };
  for (const auto& c : kCases) {
    ForgetPrintedFailures();
    const std::string yaml = R"(driver: {version: x, cuda_version: 12.8}
models:
  a100: {name: NVIDIA A100-SXM4-40GB, pci_device_id: 0x20b0, architecture: ampere,
         compute_capability: "8.0", memory_mib: 40960,
         mig: {profiles: [{name: 7g.40gb, index: 4, id: 0, slices: 7, instances: 1,
                           memory_mib: 40192, multiprocessors: 98, placement_size: 8,
                           placements: [0]}]}}
  t4: {name: Tesla T4, pci_device_id: 0x1eb8, architecture: turing, compute_capability: "7.5",
       memory_mib: 15360}
gpus:
  - {model: )" + std::string(c.model) +
                             R"(, pci_bus_id: "0000:07:00.0", mig_mode_activation: )" + c.value +
                             "}\n";
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(Start(WriteFile("case.yaml", yaml)), NVML_ERROR_DRIVER_NOT_LOADED) << yaml;
    EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr(c.expected)) << yaml;
  }
}

// A reset destroys every GPU and compute instance, brings a lost GPU back, zeroes the volatile
// ECC counters and applies the row remap that was pending.
TEST_F(FakeNvmlNodeState, AResetClearsWhatAResetClears) {
  UseControlFile();
  ASSERT_EQ(Start("a100-8x-mig"), NVML_SUCCESS);
  nvmlDevice_t gpu = Gpu(0);
  nvmlGpuInstance_t instance = nullptr;
  ASSERT_EQ(nvml.nvmlDeviceGetGpuInstanceById(gpu, 7, &instance), NVML_SUCCESS);
  const nvmlDevice_t mig = MigDevices(0).at(0);
  EXPECT_EQ(Reset(mig), NVML_ERROR_INVALID_ARGUMENT) << "a MIG device is not reset on its own";
  Control("ecc-dbe 0");
  Control("lost 0");
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  EXPECT_EQ(nvml.nvmlDeviceGetName(gpu, name, sizeof(name)), NVML_ERROR_GPU_IS_LOST);

  ASSERT_EQ(Reset(gpu), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlDeviceGetName(gpu, name, sizeof(name)), NVML_SUCCESS);
  nvmlGpuInstanceInfo_t info{};
  EXPECT_EQ(nvml.nvmlGpuInstanceGetInfo(instance, &info), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetName(mig, name, sizeof(name)), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(MigDevices(0).empty());
  EXPECT_EQ(MigMode(0), std::make_pair(1u, 1u));
  unsigned long long errors = 9;
  ASSERT_EQ(nvml.nvmlDeviceGetTotalEccErrors(gpu, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                             NVML_VOLATILE_ECC, &errors),
            NVML_SUCCESS);
  EXPECT_EQ(errors, 0u);
  ASSERT_EQ(nvml.nvmlDeviceGetTotalEccErrors(gpu, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                             NVML_AGGREGATE_ECC, &errors),
            NVML_SUCCESS);
  EXPECT_EQ(errors, 1u);
  unsigned int corrected = 9;
  unsigned int uncorrected = 9;
  unsigned int pending = 9;
  unsigned int failure = 9;
  ASSERT_EQ(nvml.nvmlDeviceGetRemappedRows(gpu, &corrected, &uncorrected, &pending, &failure),
            NVML_SUCCESS);
  EXPECT_EQ(uncorrected, 1u);
  EXPECT_EQ(pending, 0u) << "remapped at the reset";

  // The control file's reset does the same, and is refused while simulated processes run.
  ::testing::internal::CaptureStderr();
  Control("process 1 4242 100 1 0");
  Control("reset 1");
  EXPECT_EQ(Layout(1).size(), 2u);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("in use"));
  Control("process-exit 1 4242");
  Control("reset 1");
  EXPECT_TRUE(Layout(1).empty());

  ShutdownFully();
  EXPECT_EQ(Reset(gpu), NVML_ERROR_UNINITIALIZED);
}

// In device_nodes mode another OS process holding the GPU's node is a client too (the caller
// never counts): the mode change waits, and the reset is refused until it lets go.
TEST_F(FakeNvmlNodeState, AProcessHoldingTheGpusNodeKeepsTheChangePending) {
  const std::string nodes = dir_ + "/dev";
  ASSERT_EQ(mkdir(nodes.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((nodes + "/nvidia-caps").c_str(), 0755), 0);
  std::vector<std::string> names = {"nvidiactl", "nvidia-caps/nvidia-cap1",
                                    "nvidia-caps/nvidia-cap2"};
  for (int minor = 0; minor < 8; ++minor) names.push_back("nvidia" + std::to_string(minor));
  for (const std::string& name : names) std::ofstream(nodes + "/" + name).flush();
  // Before this process opens anything, so that the child holds GPU 4's node only.
  const std::string node4 = nodes + "/nvidia4";
  const pid_t holder =
      fakedriver::ForkHolder([&] { return open(node4.c_str(), O_RDWR) >= 0; }, children_);
  ASSERT_GT(holder, 0);
  ASSERT_EQ(
      Start(WriteFile("visible.yaml", Preset("a100-8x-mig") + "\ndevice_nodes: " + nodes + "\n")),
      NVML_SUCCESS);

  nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
  ASSERT_EQ(SetMigMode(4, true, &activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_ERROR_IN_USE);
  EXPECT_EQ(MigMode(4), std::make_pair(0u, 1u));
  ASSERT_EQ(SetMigMode(5, true, &activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_SUCCESS) << "this process's own hold does not count";
  EXPECT_EQ(MigMode(5), std::make_pair(1u, 1u));
  EXPECT_EQ(Reset(Gpu(4)), NVML_ERROR_IN_USE);

  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  std::erase(children_, holder);
  ASSERT_EQ(Reset(Gpu(4)), NVML_SUCCESS);
  EXPECT_EQ(MigMode(4), std::make_pair(1u, 1u));
}

TEST_F(FakeNvmlNodeState, ADamagedStateFileIsReportedAndLeftAlone) {
  UseStateFile();
  const std::string damaged = "gpuop-fake-nvml-state 1\ngpu what\n";
  std::ofstream(state_) << damaged;
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(Start("a100-8x-mig"), NVML_SUCCESS);
  EXPECT_EQ(Create(3, kProfile1g5gb), NVML_SUCCESS) << "in this process only";
  EXPECT_EQ(Layout(3).size(), 1u);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr(state_ + ": line 2: expected gpu GPU-<uuid>"));
  EXPECT_EQ(log.find(state_), log.rfind(state_)) << "reported once: " << log;
  EXPECT_EQ(Read(state_), damaged);
  ShutdownFully();
  ASSERT_EQ(nvml.nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_TRUE(Layout(3).empty()) << "the scenario's again";
}

// A process that may read the node's state but not write it (another user, a read-only mount)
// sees the node's state, reports that it cannot write, and keeps its own changes to itself.
TEST_F(FakeNvmlNodeState, AStateFileThatCannotBeWrittenIsReportedAndLeftAlone) {
  const std::string node = dir_ + "/node";
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  ASSERT_EQ(mkdir(node.c_str(), 0755), 0);
  UseStateFile(node + "/state");
  ASSERT_EQ(Start("a100-8x-mig"), NVML_SUCCESS);
  ASSERT_EQ(Create(3, kProfile1g5gb), NVML_SUCCESS);
  ShutdownFully();
  const std::string written = Read(state_);
  if (geteuid() != 0) {
    ASSERT_EQ(chmod(node.c_str(), 0555), 0);
  }
  const std::string log = dir_ + "/child-stderr";
  const pid_t child = fork();
  if (child == 0) {
    const int err = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (err < 0 || dup2(err, 2) < 0) _exit(3);
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(100);
    if (nvml.nvmlInit_v2() != NVML_SUCCESS) _exit(4);
    if (Layout(3).size() != 1) _exit(5);  // the node's
    if (Create(3, kProfile1g5gb) != NVML_SUCCESS || Layout(3).size() != 2) _exit(6);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  chmod(node.c_str(), 0755);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 100) GTEST_SKIP() << "cannot drop privileges here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << Read(log);
  EXPECT_THAT(Read(log), HasSubstr(node + "/state.tmp-"));
  EXPECT_THAT(Read(log), HasSubstr("Permission denied"));
  EXPECT_EQ(Read(state_), written);
}

TEST(NodeStateFormat, RoundTripsAndRejectsWhatItCannotRead) {
  NodeMigState state;
  state["GPU-1"] = {.current = true,
                    .pending = false,
                    .instances = {{.id = 1, .profile_id = 9, .start = 0, .computes = {{0, 1, 0}}},
                                  {.id = 2, .profile_id = 9, .start = 4}}};
  state["GPU-2"] = {};
  absl::StatusOr<NodeMigState> parsed = ParseNodeState(FormatNodeState(state));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, state);
  EXPECT_TRUE(ParseNodeState("").ok()) << "an emptied file has no entries";
  const struct {
    const char* text;
    const char* expected;
  } kCases[] = {
      {"gpu GPU-1 mode enabled pending enabled\n", "line 1: expected \"gpuop-fake-nvml-state 1\""},
      {"gpuop-fake-nvml-state 2\n", "line 1: unknown version 2"},
      {"gpuop-fake-nvml-state 1\ngi GPU-1 id 1 profile 9 start 0\n", "line 2: no gpu line"},
      {"gpuop-fake-nvml-state 1\ngpu GPU-1 mode on pending on\n", "line 2: expected gpu"},
      {"gpuop-fake-nvml-state 1\ngpu GPU-1 mode enabled pending enabled\n"
       "ci GPU-1 gi 3 id 0 slices 1 start 0\n",
       "line 3: no GPU instance 3"},
      {"gpuop-fake-nvml-state 1\nvgpu x\n", "line 2: unknown entry \"vgpu\""},
  };
  for (const auto& c : kCases) {
    EXPECT_THAT(std::string(ParseNodeState(c.text).status().message()), HasSubstr(c.expected))
        << c.text;
  }
}

}  // namespace
}  // namespace gpuop::fakenvml
