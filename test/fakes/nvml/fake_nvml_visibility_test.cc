// Device visibility (a scenario's device_nodes): the GPUs a process sees are those whose device
// nodes it can open, renumbered densely; the library holds the nodes while initialised.

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/fakes/nvml/fake_nvml_test_util.h"
#include "test/fakes/nvml/mig_cap_minors.h"

namespace gpuop::fakenvml {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

std::string Preset(const std::string& name) {
  std::ifstream in(std::string(GPUOP_FAKE_NVML_PRESETS) + "/" + name + ".yaml");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The files this process has open under `dir`.
std::vector<std::string> OpenUnder(const std::string& dir) {
  std::vector<std::string> open;
  DIR* fds = opendir("/proc/self/fd");
  while (const dirent* entry = readdir(fds)) {
    char target[4096];
    const std::string link = std::string("/proc/self/fd/") + entry->d_name;
    const ssize_t length = readlink(link.c_str(), target, sizeof(target) - 1);
    if (length <= 0) continue;
    const std::string path(target, static_cast<size_t>(length));
    if (path.rfind(dir + "/", 0) == 0) open.push_back(path.substr(dir.size() + 1));
  }
  closedir(fds);
  return open;
}

class FakeNvmlVisibility : public FakeNvmlTest {
 protected:
  void SetUp() override {
    FakeNvmlTest::SetUp();
    nodes_ = dir_ + "/dev";
    ASSERT_EQ(mkdir(nodes_.c_str(), 0755), 0);
  }
  // A regular file stands in for a device node: outside /dev any file that opens will do.
  void Node(const std::string& name, mode_t mode = 0666) {
    const std::string path = nodes_ + "/" + name;
    std::ofstream(path).flush();
    ASSERT_EQ(chmod(path.c_str(), mode), 0);
  }
  // `preset` with device visibility on, looking in nodes_.
  std::string Scenario(const std::string& preset) {
    return WriteFile(preset + "-visible.yaml", Preset(preset) + "\ndevice_nodes: " + nodes_ + "\n");
  }
  std::string Uuid(unsigned int index) {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    EXPECT_EQ(nvml.nvmlDeviceGetUUID(Gpu(index), uuid, sizeof(uuid)), NVML_SUCCESS);
    return uuid;
  }
  unsigned int Count() {
    unsigned int count = 0;
    EXPECT_EQ(nvml.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    return count;
  }

  std::string nodes_;
};

TEST_F(FakeNvmlVisibility, SeesOnlyTheGpusWhoseNodesOpenRenumberedInOrder) {
  ASSERT_EQ(Start("h100-8x-nvswitch"), NVML_SUCCESS);
  const std::string uuid3 = Uuid(3);
  const std::string uuid5 = Uuid(5);
  ASSERT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);

  Node("nvidiactl");
  Node("nvidia3");
  Node("nvidia5");
  ASSERT_EQ(Start(Scenario("h100-8x-nvswitch")), NVML_SUCCESS);
  EXPECT_EQ(Count(), 2u);
  const std::pair<unsigned int, const std::string*> expected[] = {{3, &uuid3}, {5, &uuid5}};
  for (unsigned int index = 0; index < 2; ++index) {
    unsigned int minor = 0;
    unsigned int reported = 99;
    EXPECT_EQ(nvml.nvmlDeviceGetMinorNumber(Gpu(index), &minor), NVML_SUCCESS);
    EXPECT_EQ(nvml.nvmlDeviceGetIndex(Gpu(index), &reported), NVML_SUCCESS);
    EXPECT_EQ(minor, expected[index].first);
    EXPECT_EQ(reported, index);
    EXPECT_EQ(Uuid(index), *expected[index].second);
  }
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(2, &device), NVML_ERROR_INVALID_ARGUMENT);
}

// The MIG capabilities are device nodes too (/dev/nvidia-caps/nvidia-cap1 config, -cap2
// monitor): a process that cannot open them, as a container without NVIDIA_MIG_MONITOR_DEVICES,
// gets NO_PERMISSION for GPU and compute instances and for a MIG-enabled GPU's aggregate memory
// and processes (nvml.h), and cannot change MIG; it sees the MIG devices whose two access
// capabilities it holds, as a container given those MIG devices does, and they answer for
// themselves.
class FakeNvmlMigCapabilities : public FakeNvmlVisibility {
 protected:
  void StartA100() {
    Node("nvidiactl");
    for (int minor = 0; minor < 8; ++minor) Node("nvidia" + std::to_string(minor));
    ASSERT_EQ(Start(Scenario("a100-8x-mig")), NVML_SUCCESS);
  }
  void Capability(const std::string& name) {
    ASSERT_EQ(mkdir((nodes_ + "/nvidia-caps").c_str(), 0755) == 0 || errno == EEXIST, true);
    Node("nvidia-caps/" + name, 0444);
  }
  nvmlReturn_t GpuInstance(unsigned int gpu, unsigned int id) {
    nvmlGpuInstance_t instance = nullptr;
    return nvml.nvmlDeviceGetGpuInstanceById(Gpu(gpu), id, &instance);
  }
  nvmlReturn_t CreateOn3() {
    nvmlGpuInstance_t instance = nullptr;
    return nvml.nvmlDeviceCreateGpuInstance(Gpu(3), /*1g.5gb*/ 19, &instance);
  }
};

TEST_F(FakeNvmlMigCapabilities, WithoutTheMonitorCapabilityInstancesAreNotShown) {
  // GPU 1's two MIG devices, as a process with every capability sees them.
  ASSERT_EQ(Start("a100-8x-mig"), NVML_SUCCESS);
  struct Seen {
    std::string uuid;
    unsigned int gi = 0;
    unsigned int ci = 0;
  };
  std::vector<Seen> seen(2);
  for (unsigned int index = 0; index < 2; ++index) {
    nvmlDevice_t mig = nullptr;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    ASSERT_EQ(nvml.nvmlDeviceGetMigDeviceHandleByIndex(Gpu(1), index, &mig), NVML_SUCCESS);
    ASSERT_EQ(nvml.nvmlDeviceGetUUID(mig, uuid, sizeof(uuid)), NVML_SUCCESS);
    ASSERT_EQ(nvml.nvmlDeviceGetGpuInstanceId(mig, &seen[index].gi), NVML_SUCCESS);
    ASSERT_EQ(nvml.nvmlDeviceGetComputeInstanceId(mig, &seen[index].ci), NVML_SUCCESS);
    seen[index].uuid = uuid;
  }
  ASSERT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);
  // The access capabilities of the second one only: what its CDI spec gives a container.
  Capability("nvidia-cap" + std::to_string(MigCapabilityMinor(1, seen[1].gi)));
  Capability("nvidia-cap" +
             std::to_string(MigCapabilityMinor(1, seen[1].gi, static_cast<int>(seen[1].ci))));

  StartA100();
  EXPECT_EQ(GpuInstance(1, 1), NVML_ERROR_NO_PERMISSION);
  nvmlGpuInstance_t instances[2] = {};
  unsigned int count = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetGpuInstances(Gpu(1), /*3g.20gb*/ 9, instances, &count),
            NVML_ERROR_NO_PERMISSION);
  nvmlMemory_t memory{};
  EXPECT_EQ(nvml.nvmlDeviceGetMemoryInfo(Gpu(1), &memory), NVML_ERROR_NO_PERMISSION)
      << "a MIG-enabled GPU's aggregate";
  unsigned int processes = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetComputeRunningProcesses_v3(Gpu(1), &processes, nullptr),
            NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(nvml.nvmlDeviceGetMemoryInfo(Gpu(4), &memory), NVML_SUCCESS) << "MIG off";
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(nvml.nvmlDeviceGetMigDeviceHandleByIndex(Gpu(1), 0, &mig), NVML_SUCCESS);
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  ASSERT_EQ(nvml.nvmlDeviceGetUUID(mig, uuid, sizeof(uuid)), NVML_SUCCESS);
  EXPECT_EQ(uuid, seen[1].uuid) << "the one MIG device it holds the capabilities of";
  EXPECT_EQ(nvml.nvmlDeviceGetMemoryInfo(mig, &memory), NVML_SUCCESS) << "the instance's own";
  EXPECT_EQ(memory.total, 19968ull << 20);
  nvmlDevice_t other = nullptr;
  EXPECT_EQ(nvml.nvmlDeviceGetMigDeviceHandleByIndex(Gpu(1), 1, &other), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByUUID(seen[0].uuid.c_str(), &other), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvml.nvmlDeviceGetMigDeviceHandleByIndex(Gpu(0), 0, &other), NVML_ERROR_NOT_FOUND)
      << "GPU 0's MIG devices are not its";
  EXPECT_EQ(CreateOn3(), NVML_ERROR_NO_PERMISSION);
  nvmlReturn_t activation = NVML_SUCCESS;
  EXPECT_EQ(nvml.nvmlDeviceSetMigMode(Gpu(4), NVML_DEVICE_MIG_ENABLE, &activation),
            NVML_ERROR_NO_PERMISSION);
}

TEST_F(FakeNvmlMigCapabilities, MonitorShowsInstancesAndConfigChangesThem) {
  Capability("nvidia-cap2");
  StartA100();
  EXPECT_EQ(GpuInstance(1, 1), NVML_SUCCESS);
  nvmlMemory_t memory{};
  EXPECT_EQ(nvml.nvmlDeviceGetMemoryInfo(Gpu(1), &memory), NVML_SUCCESS);
  EXPECT_EQ(CreateOn3(), NVML_ERROR_NO_PERMISSION) << "monitoring is not configuring";
  ASSERT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);

  Capability("nvidia-cap1");
  ASSERT_EQ(Start(Scenario("a100-8x-mig")), NVML_SUCCESS);
  EXPECT_EQ(CreateOn3(), NVML_SUCCESS);
}

// A root process (nvidia-smi) gets the capability nodes of the instances that exist created, as
// the real user-space driver creates them: what a container runtime needs to give a MIG device.
TEST_F(FakeNvmlMigCapabilities, RootGetsTheCapabilityNodesOfExistingInstancesCreated) {
  ASSERT_EQ(mkdir((nodes_ + "/nvidia-caps").c_str(), 0755), 0);
  const std::string monitor = nodes_ + "/nvidia-caps/nvidia-cap2";
  if (geteuid() != 0 || mknod(monitor.c_str(), S_IFCHR | 0444, makedev(1, 7)) != 0) {
    GTEST_SKIP() << "cannot mknod here: " << std::strerror(errno);
  }
  StartA100();
  // GPU 0 (minor 0): seven 1g.5gb, GPU instances 7-13 with compute instance 0 each; GPU 1
  // (minor 1): two 3g.20gb; GPU 3 has none; GPUs 4-7 have MIG off.
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(nvml.nvmlDeviceGetMigDeviceHandleByIndex(Gpu(1), 0, &mig), NVML_SUCCESS);
  unsigned int gi = 0, ci = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetGpuInstanceId(mig, &gi), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetComputeInstanceId(mig, &ci), NVML_SUCCESS);
  for (const unsigned int minor : {MigCapabilityMinor(1, gi), MigCapabilityMinor(1, gi, ci)}) {
    struct stat node {};
    const std::string path = nodes_ + "/nvidia-caps/nvidia-cap" + std::to_string(minor);
    ASSERT_EQ(stat(path.c_str(), &node), 0) << path;
    EXPECT_TRUE(S_ISCHR(node.st_mode)) << path;
    EXPECT_EQ(node.st_mode & 0777, 0444u) << path;
  }
  size_t created = 0;
  for (const auto& entry : std::filesystem::directory_iterator(nodes_ + "/nvidia-caps")) {
    created += entry.path().filename() != "nvidia-cap2";
  }
  // Two per compute instance of the preset's MIG GPUs: 7 + 2 + (2 sharing a GPU instance + 2)
  // compute instances, the shared GPU instance's node counted once.
  EXPECT_EQ(created, 2u * 7 + 2u * 2 + 3u + 2u * 2);
}

TEST_F(FakeNvmlVisibility, HoldsTheNodesUntilTheLastShutdown) {
  Node("nvidiactl");
  Node("nvidia0");
  Node("nvidia2");
  ASSERT_EQ(Start(Scenario("l4-4x-pcie")), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_THAT(OpenUnder(nodes_), UnorderedElementsAre("nvidiactl", "nvidia0", "nvidia2"));
  ASSERT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);
  EXPECT_THAT(OpenUnder(nodes_), UnorderedElementsAre("nvidiactl", "nvidia0", "nvidia2"));
  ASSERT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);
  EXPECT_THAT(OpenUnder(nodes_), IsEmpty());
}

TEST_F(FakeNvmlVisibility, WithoutNvidiactlTheDriverIsNotLoaded) {
  ForgetPrintedFailures();
  Node("nvidia0");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Start(Scenario("l4-4x-pcie")), NVML_ERROR_DRIVER_NOT_LOADED);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr(nodes_ + "/nvidiactl"));
  EXPECT_THAT(log, HasSubstr("No such file or directory"));
  EXPECT_THAT(OpenUnder(nodes_), IsEmpty());
}

TEST_F(FakeNvmlVisibility, UnderDevOnlyCharacterDevicesCount) {
  // In a child with a /dev of its own (a private mount namespace, as a container has): regular
  // files named like the nodes do not count there; character devices do.
  const std::string path = WriteFile("dev.yaml", Preset("l4-4x-pcie") + "\ndevice_nodes: /dev/\n");
  setenv("GPUOP_FAKE_NVML_SCENARIO", path.c_str(), 1);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (unshare(CLONE_NEWNS) != 0 ||
        mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("tmpfs", "/dev", "tmpfs", 0, nullptr) != 0) {
      _exit(77);
    }
    for (const char* name : {"/dev/nvidiactl", "/dev/nvidia1"}) std::ofstream(name).flush();
    if (nvml.nvmlInit_v2() != NVML_ERROR_DRIVER_NOT_LOADED) _exit(1);
    for (const char* name : {"/dev/nvidiactl", "/dev/nvidia1"}) {
      if (unlink(name) != 0 || mknod(name, S_IFCHR | 0666, makedev(1, 7)) != 0) _exit(77);
    }
    unsigned int count = 0;
    nvmlDevice_t device = nullptr;
    unsigned int minor = 0;
    if (nvml.nvmlInit_v2() != NVML_SUCCESS || nvml.nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS ||
        count != 1 || nvml.nvmlDeviceGetHandleByIndex_v2(0, &device) != NVML_SUCCESS ||
        nvml.nvmlDeviceGetMinorNumber(device, &minor) != NVML_SUCCESS || minor != 1) {
      _exit(2);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "cannot give a child a /dev of its own here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: regular files were taken for nodes; 2: nodes were not";
}

// The module's nodes (module_device_nodes) exist: a root process gets the ones it lacks created,
// as the real user-space driver creates device files; a non-root one gets nothing.
TEST_F(FakeNvmlVisibility, ALoadedModulesNodesAreCreatedForRootOnly) {
  if (geteuid() != 0) GTEST_SKIP() << "creating device nodes needs root";
  const std::string module = dir_ + "/module";
  ASSERT_EQ(mkdir(module.c_str(), 0755), 0);
  const std::string path =
      WriteFile("module.yaml", Preset("l4-4x-pcie") + "\ndevice_nodes: " + nodes_ +
                                   "\nmodule_device_nodes: " + module + "\n");
  ForgetPrintedFailures();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Start(path), NVML_ERROR_DRIVER_NOT_LOADED) << "no module nodes: not loaded";
  (void)::testing::internal::GetCapturedStderr();
  EXPECT_THAT(OpenUnder(nodes_), IsEmpty());
  for (const char* name : {"nvidiactl", "nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidia-uvm"}) {
    const std::string node = module + "/" + name;
    if (mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0) {
      GTEST_SKIP() << "cannot mknod here: " << std::strerror(errno);
    }
  }
  // A non-root child: nothing is created and the driver stays unreachable.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(77);
    const bool refused = nvml.nvmlInit_v2() == NVML_ERROR_DRIVER_NOT_LOADED;
    struct stat st {};
    _exit(refused && stat((nodes_ + "/nvidiactl").c_str(), &st) != 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) != 77) {
    EXPECT_EQ(WEXITSTATUS(status), 0) << "a non-root process made nodes";
  }
  // Root: every node is created with the module's number, and every GPU is visible.
  ASSERT_EQ(nvml.nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_EQ(Count(), 4u);
  for (const char* name : {"nvidiactl", "nvidia0", "nvidia3", "nvidia-uvm"}) {
    struct stat st {};
    ASSERT_EQ(stat((nodes_ + "/" + name).c_str(), &st), 0) << name;
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << name;
    EXPECT_EQ(st.st_rdev, makedev(1, 7)) << name;
  }
  EXPECT_THAT(OpenUnder(nodes_),
              UnorderedElementsAre("nvidiactl", "nvidia0", "nvidia1", "nvidia2", "nvidia3"));
}

TEST_F(FakeNvmlVisibility, AnNvidiactlThatCannotBeOpenedIsNoPermission) {
  Node("nvidiactl", 0);
  Node("nvidia0");
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  const std::string scenario = Scenario("l4-4x-pcie");
  ASSERT_EQ(chmod(scenario.c_str(), 0644), 0);
  // Root opens any file whatever its mode, so the check runs in a child that has dropped to
  // nobody (as root), or in this process (as anyone else).
  if (geteuid() != 0) {
    EXPECT_EQ(Start(scenario), NVML_ERROR_NO_PERMISSION);
    return;
  }
  setenv("GPUOP_FAKE_NVML_SCENARIO", scenario.c_str(), 1);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(100);
    _exit(static_cast<int>(nvml.nvmlInit_v2()));
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 100) GTEST_SKIP() << "cannot drop privileges here";
  EXPECT_EQ(WEXITSTATUS(status), NVML_ERROR_NO_PERMISSION);
}

TEST_F(FakeNvmlVisibility, NvLinksToHiddenGpusKeepTheirRemoteIdentity) {
  const std::string scenario = WriteFile("linked.yaml", R"(
name: linked
driver: {version: "570.86.15", cuda_version: "12.8"}
models:
  a100: {name: NVIDIA A100-SXM4-40GB, pci_device_id: 0x20b0, architecture: ampere,
         compute_capability: "8.0", memory_mib: 40960}
gpus:
  - {model: a100, pci_bus_id: "0000:07:00.0", nvlink: {version: 3, links: [{gpu: 1, count: 2}]}}
  - {model: a100, pci_bus_id: "0000:0f:00.0", nvlink: {version: 3, links: [{gpu: 0, count: 2}]}}
topology:
  - {gpus: [0, 1], level: single}
device_nodes: )" + nodes_ + "\n");
  Node("nvidiactl");
  Node("nvidia0");
  ASSERT_EQ(Start(scenario), NVML_SUCCESS);
  EXPECT_EQ(Count(), 1u);
  nvmlPciInfo_t remote{};
  ASSERT_EQ(nvml.nvmlDeviceGetNvLinkRemotePciInfo_v2(Gpu(0), 1, &remote), NVML_SUCCESS);
  EXPECT_STREQ(remote.busId, "00000000:0F:00.0");
  EXPECT_EQ(remote.pciDeviceId, 0x20b010deu);
}

TEST_F(FakeNvmlVisibility, DeviceNodesMustBeAnAbsoluteDirectory) {
  ForgetPrintedFailures();
  const std::string path = WriteFile("relative.yaml", Preset("no-gpus") + "\ndevice_nodes: dev\n");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Start(path), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("device_nodes: expected an absolute directory"));
}

}  // namespace
}  // namespace gpuop::fakenvml
