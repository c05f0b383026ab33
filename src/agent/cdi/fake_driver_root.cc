#include "agent/cdi/fake_driver_root.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <system_error>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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

namespace {

// A listening-free unix socket bound at `path`, as a daemon leaves one.
void Socket(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (fd < 0 || path.string().size() >= sizeof(address.sun_path)) Fail("socket " + path.string());
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    Fail("bind " + path.string() + ": " + std::strerror(errno));
  }
  close(fd);
}

void Copy(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  if (!ec) fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) Fail("copy " + from.string() + " to " + to.string() + ": " + ec.message());
}

}  // namespace

void InstallDriverContainer(const fs::path& sysroot, const std::string& driver_root,
                            const std::string& version) {
  const fs::path root = Under(sysroot, driver_root);
  const fs::path lib = root / "usr/lib/x86_64-linux-gnu";
  Copy(GPUOP_FAKE_NVML_LIBRARY, lib / absl::StrCat("libnvidia-ml.so.", version));
  Copy(GPUOP_FAKE_CUDA_LIBRARY, lib / absl::StrCat("libcuda.so.", version));
  WriteFile(root / "usr/bin/nvidia-smi", "#!");
  Symlink("../run", root / "var/run");
  // Socket paths are limited to 107 bytes; a temp sysroot under /tmp stays well within.
  Socket(root / "run/nvidia-persistenced/socket");
  Socket(root / "run/nvidia-fabricmanager/socket");
  std::error_code ec;
  fs::create_directories(root / "tmp/nvidia-mps", ec);
  if (ec) Fail("create " + (root / "tmp/nvidia-mps").string());
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

void ExpectSpec(const Spec& actual, const std::string& name) {
  const fs::path path = fs::path(GPUOP_CDI_TESTDATA) / name;
  absl::StatusOr<std::string> text = common::ReadFile(path);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<Spec> expected = SpecFromJson(*text);
  ASSERT_TRUE(expected.ok()) << path.string() << ": " << expected.status();
  EXPECT_TRUE(actual == *expected)
      << "generated spec differs from " << path.string() << "\ngenerated:\n"
      << SpecToJsonText(actual) << "expected:\n"
      << SpecToJsonText(*expected);
}

std::vector<std::string> CdiDocumentProblems(const std::string& json_text) {
  using nlohmann::json;
  std::vector<std::string> problems;
  const json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return {"not a JSON object"};
  auto only = [&](const json& object, const std::string& where, std::set<std::string> keys) {
    for (const auto& [key, value] : object.items()) {
      if (!keys.contains(key)) problems.push_back(where + ": unknown key " + key);
    }
  };
  const std::regex version(R"(v?[0-9]+\.[0-9]+\.[0-9]+)");
  const std::regex vendor(R"([A-Za-z]([A-Za-z0-9._-]*[A-Za-z0-9])?)");
  const std::regex device_name(R"([A-Za-z0-9]([A-Za-z0-9._:-]*[A-Za-z0-9])?)");
  only(doc, "spec", {"cdiVersion", "kind", "annotations", "devices", "containerEdits"});
  if (!doc.contains("cdiVersion") || !doc["cdiVersion"].is_string() ||
      !std::regex_match(doc["cdiVersion"].get<std::string>(), version)) {
    problems.push_back("cdiVersion missing or not a version");
  }
  const std::string kind = doc.value("kind", "");
  const size_t slash = kind.find('/');
  if (slash == std::string::npos || slash > 253 || kind.size() - slash - 1 > 63 ||
      !std::regex_match(kind.substr(0, slash), vendor) ||
      !std::regex_match(kind.substr(slash + 1), vendor)) {
    problems.push_back("kind \"" + kind + "\" is not <vendor>/<class>");
  }
  const std::set<std::string> hook_names = {"prestart",       "createRuntime", "createContainer",
                                            "startContainer", "poststart",     "poststop"};
  auto edits = [&](const json& e, const std::string& where) {
    if (!e.is_object()) {
      problems.push_back(where + " is not an object");
      return;
    }
    only(e, where,
         {"env", "deviceNodes", "mounts", "hooks", "additionalGids", "intelRdt", "netDevices"});
    for (const json& node : e.value("deviceNodes", json::array())) {
      only(node, where + ".deviceNodes[]",
           {"path", "hostPath", "type", "major", "minor", "fileMode", "permissions", "uid", "gid"});
      const std::string p = node.value("path", "");
      if (p.empty() || p[0] != '/') problems.push_back(where + ": device node without a path");
    }
    for (const json& mount : e.value("mounts", json::array())) {
      only(mount, where + ".mounts[]", {"hostPath", "containerPath", "options", "type"});
      if (mount.value("hostPath", "").empty() || mount.value("containerPath", "").empty()) {
        problems.push_back(where + ": mount without hostPath or containerPath");
      }
    }
    for (const json& hook : e.value("hooks", json::array())) {
      only(hook, where + ".hooks[]", {"hookName", "path", "args", "env", "timeout"});
      if (!hook_names.contains(hook.value("hookName", ""))) {
        problems.push_back(where + ": hook with an unknown hookName");
      }
      const std::string p = hook.value("path", "");
      if (p.empty() || p[0] != '/') problems.push_back(where + ": hook path not absolute");
    }
  };
  if (!doc.contains("devices") || !doc["devices"].is_array() || doc["devices"].empty()) {
    problems.push_back("no devices");
  } else {
    for (const json& device : doc["devices"]) {
      only(device, "device", {"name", "annotations", "containerEdits"});
      const std::string name = device.value("name", "");
      if (!std::regex_match(name, device_name)) {
        problems.push_back("device name \"" + name + "\" is not valid");
      }
      if (!device.contains("containerEdits")) {
        problems.push_back("device " + name + " has no containerEdits");
      } else {
        edits(device["containerEdits"], "device " + name + " containerEdits");
      }
    }
  }
  if (doc.contains("containerEdits")) edits(doc["containerEdits"], "containerEdits");
  return problems;
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
