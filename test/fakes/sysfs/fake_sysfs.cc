#include "test/fakes/sysfs/fake_sysfs.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

namespace gpuop::fakes {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void Fail(const std::string& what, const std::error_code& ec) {
  std::fprintf(stderr, "FakeSysfs: %s: %s\n", what.c_str(), ec.message().c_str());
  std::abort();
}

// The module a PCI driver belongs to, as /sys/bus/pci/drivers/<driver>/module names it.
std::string ModuleOf(const std::string& driver) {
  if (driver == "nvidia-nvswitch") return "nvidia";
  return absl::StrReplaceAll(driver, {{"-", "_"}});
}

}  // namespace

FakeSysfs::FakeSysfs(fs::path root) : root_(std::move(root)) {
  MakeDirs(Abs("bus/pci/devices"));
  MakeDirs(Abs("bus/pci/drivers"));
  MakeDirs(Abs("devices"));
  MakeDirs(Abs("module"));
  MakeDirs(Abs("class/drm"));
  MakeDirs(Abs("class/hwmon"));
}

void FakeSysfs::MakeDirs(const fs::path& dir) const {
  if (made_dirs_.contains(dir.native())) return;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) Fail("create " + dir.string(), ec);
  made_dirs_.insert(dir.native());
}

void FakeSysfs::Write(const fs::path& path, const std::string& content) const {
  MakeDirs(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) Fail("write " + path.string(), std::make_error_code(std::errc::io_error));
}

void FakeSysfs::Link(const fs::path& link, const fs::path& target) const {
  MakeDirs(link.parent_path());
  std::error_code ec;
  fs::remove(link, ec);
  fs::create_symlink(target.lexically_relative(link.parent_path()), link, ec);
  if (ec) Fail("link " + link.string() + " -> " + target.string(), ec);
}

void FakeSysfs::WriteFile(const std::string& relative, const std::string& content) {
  Write(Abs(relative), content);
}

std::string FakeSysfs::ReadFile(const std::string& relative) const {
  std::ifstream in(Abs(relative), std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void FakeSysfs::Remove(const std::string& relative) {
  std::error_code ec;
  fs::remove_all(Abs(relative), ec);
  if (ec) Fail("remove " + relative, ec);
  // Forget the directories at or under it.
  const std::string prefix = Abs(relative).native();
  for (auto it = made_dirs_.lower_bound(prefix);
       it != made_dirs_.end() && it->compare(0, prefix.size(), prefix) == 0;) {
    it = made_dirs_.erase(it);
  }
}

bool FakeSysfs::Exists(const std::string& relative) const {
  std::error_code ec;
  return fs::exists(Abs(relative), ec);
}

std::string FakeSysfs::DevicePath(const std::string& address) const {
  auto it = device_paths_.find(address);
  return it == device_paths_.end() ? "" : it->second;
}

std::string FakeSysfs::HwmonPath(const std::string& address) const {
  auto it = amd_gpus_.find(address);
  if (it == amd_gpus_.end()) return "";
  return absl::StrCat(DevicePath(address), "/hwmon/hwmon", it->second.hwmon);
}

void FakeSysfs::AddPciDevice(const FakePciDevice& d) {
  std::string relative;
  if (d.parent.empty()) {
    // The root bus: "0000:17:00.0" lives under devices/pci0000:17.
    relative =
        absl::StrCat("devices/pci", d.address.substr(0, d.address.size() - 5), "/", d.address);
  } else {
    auto parent = device_paths_.find(d.parent);
    if (parent == device_paths_.end()) {
      Fail("add " + d.address + " under unknown bridge " + d.parent,
           std::make_error_code(std::errc::no_such_device));
    }
    relative = absl::StrCat(parent->second, "/", d.address);
  }
  device_paths_[d.address] = relative;
  const fs::path dir = Abs(relative);
  MakeDirs(dir);
  Write(dir / "vendor", absl::StrFormat("0x%04x\n", d.vendor));
  Write(dir / "device", absl::StrFormat("0x%04x\n", d.device));
  if (d.subsystem_vendor) {
    Write(dir / "subsystem_vendor", absl::StrFormat("0x%04x\n", *d.subsystem_vendor));
  }
  if (d.subsystem_device) {
    Write(dir / "subsystem_device", absl::StrFormat("0x%04x\n", *d.subsystem_device));
  }
  Write(dir / "class", absl::StrFormat("0x%06x\n", d.class_code));
  Write(dir / "revision", absl::StrFormat("0x%02x\n", d.revision));
  Write(dir / "numa_node", absl::StrCat(d.numa_node, "\n"));
  Write(dir / "enable", "1\n");
  if (!d.local_cpulist.empty()) Write(dir / "local_cpulist", d.local_cpulist + "\n");
  if (d.sriov_totalvfs) {
    Write(dir / "sriov_totalvfs", absl::StrCat(*d.sriov_totalvfs, "\n"));
    Write(dir / "sriov_numvfs", "0\n");
  }
  const uint16_t sv = d.subsystem_vendor.value_or(0), sd = d.subsystem_device.value_or(0);
  const std::string modalias =
      absl::StrFormat("pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X", d.vendor, d.device, sv, sd,
                      d.class_code >> 16, (d.class_code >> 8) & 0xff, d.class_code & 0xff);
  Write(dir / "modalias", modalias + "\n");
  Write(dir / "uevent",
        absl::StrCat(d.driver.empty() ? "" : absl::StrCat("DRIVER=", d.driver, "\n"),
                     absl::StrFormat("PCI_CLASS=%X\nPCI_ID=%04X:%04X\nPCI_SUBSYS_ID=%04X:%04X\n",
                                     d.class_code, d.vendor, d.device, sv, sd),
                     "PCI_SLOT_NAME=", d.address, "\nMODALIAS=", modalias, "\n"));
  Link(Abs("bus/pci/devices") / d.address, dir);
  Link(dir / "subsystem", Abs("bus/pci"));
  if (d.iommu_group) {
    const fs::path group = Abs(absl::StrCat("kernel/iommu_groups/", *d.iommu_group));
    Write(group / "type", d.iommu_group_type + "\n");
    Link(group / "devices" / d.address, dir);
    Link(dir / "iommu_group", group);
  }
  if (!d.driver.empty()) BindDriver(d.address, d.driver);
}

void FakeSysfs::BindDriver(const std::string& address, const std::string& driver) {
  const fs::path driver_dir = Abs("bus/pci/drivers") / driver;
  const fs::path module_dir = Abs("module") / ModuleOf(driver);
  for (const char* file : {"bind", "unbind", "new_id", "remove_id", "uevent"}) {
    if (!fs::exists(driver_dir / file)) Write(driver_dir / file, "");
  }
  if (!fs::exists(module_dir / "initstate")) Write(module_dir / "initstate", "live\n");
  Link(driver_dir / "module", module_dir);
  Link(module_dir / "drivers" / ("pci:" + driver), driver_dir);
  const fs::path dir = Abs(device_paths_.at(address));
  Link(driver_dir / address, dir);
  Link(dir / "driver", driver_dir);
}

void FakeSysfs::RemovePciDevice(const std::string& address) {
  auto it = device_paths_.find(address);
  if (it == device_paths_.end()) return;
  std::error_code ec;
  for (const fs::directory_entry& driver : fs::directory_iterator(Abs("bus/pci/drivers"), ec)) {
    fs::remove(driver.path() / address, ec);
  }
  if (fs::exists(Abs("kernel/iommu_groups"), ec)) {
    for (const fs::directory_entry& group :
         fs::directory_iterator(Abs("kernel/iommu_groups"), ec)) {
      fs::remove(group.path() / "devices" / address, ec);
    }
  }
  fs::remove(Abs("bus/pci/devices") / address, ec);
  Remove(it->second);
  device_paths_.erase(it);
  if (amd_gpus_.erase(address) > 0) WriteKfdTopology();
}

TempDir::TempDir() {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string pattern = (base / "gpuop-sysfs-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    Fail("mkdtemp " + pattern, std::error_code(errno, std::generic_category()));
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace gpuop::fakes
