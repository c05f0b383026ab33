#include "agent/cdi/fake_driver_root.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <system_error>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/files.h"

namespace gpuop::agent::cdi::testing {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fake driver root: %s\n", what.c_str());
  std::abort();
}

fs::path Under(const fs::path& sysroot, const std::string& host_path) {
  return sysroot / fs::path(host_path).relative_path();
}

}  // namespace

void WriteFile(const fs::path& path, const std::string& content) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) Fail("create " + path.parent_path().string() + ": " + ec.message());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out.good()) Fail("write " + path.string());
}

void Symlink(const std::string& target, const fs::path& link) {
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  if (!ec) fs::create_symlink(target, link, ec);
  if (ec) Fail("symlink " + link.string() + ": " + ec.message());
}

void FakeDevices::AddChar(const std::string& host_path, int64_t major, int64_t minor) {
  const fs::path path = Under(sysroot_, host_path);
  WriteFile(path);
  numbers_[path.string()] = DeviceNumbers{.type = "c", .major = major, .minor = minor};
}

DeviceStatFn FakeDevices::stat() const {
  return
      [numbers = numbers_](const fs::path& path) -> absl::StatusOr<std::optional<DeviceNumbers>> {
        absl::StatusOr<std::optional<DeviceNumbers>> real = StatDeviceNode(path);
        auto it = numbers.find(path.string());
        if (!real.ok() || it == numbers.end()) return real;
        return std::optional<DeviceNumbers>(it->second);
      };
}

void InstallNvidiaDriver(const fs::path& sysroot, const std::string& driver_root,
                         const std::string& version) {
  const fs::path root = Under(sysroot, driver_root);
  const fs::path lib = root / "usr/lib/x86_64-linux-gnu";
  for (const char* name : {"libnvidia-ml", "libcuda", "libnvidia-ptxjitcompiler", "libnvidia-nvvm",
                           "libcudadebugger", "libnvidia-cfg"}) {
    const std::string versioned = absl::StrCat(name, ".so.", version);
    WriteFile(lib / versioned, "ELF");
    Symlink(versioned, lib / absl::StrCat(name, ".so.1"));
  }
  Symlink("libcuda.so.1", lib / "libcuda.so");
  WriteFile(lib / "libnvidia-ml.so.535.54.03", "ELF");  // left over from an older driver
  WriteFile(lib / "libc.so.6", "ELF");
  fs::create_directories(root / "usr/lib64");
  Symlink("usr/lib64", root / "lib64");
  for (const char* name : {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced"}) {
    WriteFile(root / "usr/bin" / name, "#!");
  }
  WriteFile(root / "lib/firmware/nvidia" / version / "gsp_ga10x.bin", "fw");
}

void AddNvidiaDeviceNodes(FakeDevices& devices, const std::string& dev_root,
                          const std::vector<unsigned int>& gpu_minors) {
  devices.AddChar(dev_root + "/nvidiactl", 195, 255);
  devices.AddChar(dev_root + "/nvidia-uvm", 509, 0);
  devices.AddChar(dev_root + "/nvidia-uvm-tools", 509, 1);
  devices.AddChar(dev_root + "/nvidia-modeset", 195, 254);
  for (unsigned int minor : gpu_minors) {
    devices.AddChar(absl::StrCat(dev_root, "/nvidia", minor), 195, minor);
  }
}

void AddMigCaps(const fs::path& sysroot, FakeDevices& devices, const std::string& dev_root,
                unsigned int gpu_minor, unsigned int gi, unsigned int ci, unsigned int gi_cap,
                unsigned int ci_cap) {
  const fs::path gi_dir =
      sysroot / absl::StrFormat("proc/driver/nvidia/capabilities/gpu%u/mig/gi%u", gpu_minor, gi);
  WriteFile(gi_dir / "access", absl::StrCat("DeviceFileMinor: ", gi_cap,
                                            "\nDeviceFileMode: 292\nDeviceFileModify: 1\n"));
  WriteFile(
      gi_dir / absl::StrCat("ci", ci) / "access",
      absl::StrCat("DeviceFileMinor: ", ci_cap, "\nDeviceFileMode: 292\nDeviceFileModify: 1\n"));
  devices.AddChar(absl::StrCat(dev_root, "/nvidia-caps/nvidia-cap", gi_cap), 511, gi_cap);
  devices.AddChar(absl::StrCat(dev_root, "/nvidia-caps/nvidia-cap", ci_cap), 511, ci_cap);
}

hw::Inventory NvidiaInventory(int count) {
  hw::Inventory inventory{.driver_version = kDriverVersion, .cuda_driver_version = 12080};
  for (int i = 0; i < count; ++i) {
    hw::Gpu gpu;
    gpu.vendor = hw::Vendor::kNvidia;
    gpu.index = i;
    gpu.uuid = absl::StrFormat("GPU-%d0000000-1111-2222-3333-44444444444%d", i, i);
    gpu.pci_bus_id = absl::StrFormat("0000:%02x:00.0", 0x18 + i);
    gpu.product = "NVIDIA H100 80GB HBM3";
    gpu.minor_number = static_cast<unsigned int>(i);
    gpu.device_nodes = {absl::StrCat("/dev/nvidia", i)};
    inventory.gpus.push_back(std::move(gpu));
  }
  return inventory;
}

hw::Inventory MigInventory() {
  hw::Inventory inventory = NvidiaInventory(2);
  hw::Gpu& gpu = inventory.gpus[0];
  gpu.product = "NVIDIA A100-SXM4-40GB";
  gpu.mig_capable = gpu.mig_enabled = true;
  gpu.mig_devices = {
      {.uuid = "MIG-aaaaaaaa-0000-5000-8000-000000000001",
       .profile = "3g.20gb",
       .gpu_instance_id = 1,
       .compute_instance_id = 0},
      {.uuid = "MIG-aaaaaaaa-0000-5000-8000-000000000002",
       .profile = "3g.20gb",
       .gpu_instance_id = 2,
       .compute_instance_id = 0},
  };
  inventory.gpus[1].product = "NVIDIA A100-SXM4-40GB";
  return inventory;
}

void ExpectGolden(const std::string& actual, const std::string& name) {
  const fs::path path = fs::path(GPUOP_CDI_TESTDATA) / name;
  if (const char* update = std::getenv("GPUOP_UPDATE_GOLDEN");
      update && update == std::string("1")) {
    WriteFile(path, actual);
  }
  absl::StatusOr<std::string> expected = common::ReadFile(path);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(actual, *expected) << "generated spec differs from " << path.string()
                               << "; if the change is intended, rerun with GPUOP_UPDATE_GOLDEN=1 "
                                  "and review the diff";
}

}  // namespace gpuop::agent::cdi::testing
