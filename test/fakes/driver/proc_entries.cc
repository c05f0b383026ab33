#include "test/fakes/driver/proc_entries.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "test/fakes/nvml/mig_cap_minors.h"

namespace gpuop::fakedriver {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMinorsFile = "nvidia-caps/mig-minors";
constexpr const char* kConfigFile = "nvidia/capabilities/mig/config";
constexpr const char* kMonitorFile = "nvidia/capabilities/mig/monitor";

std::string Capability(unsigned int minor, unsigned int mode) {
  return absl::StrCat("DeviceFileMinor: ", minor, "\nDeviceFileMode: ", mode,
                      "\nDeviceFileModify: 1\n");
}

absl::Status WriteAtomically(const fs::path& path, const std::string& content) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec)
    return absl::UnavailableError(
        absl::StrCat("mkdir ", path.parent_path().string(), ": ", ec.message()));
  const fs::path temp = path.string() + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << content;
    if (!out.flush()) {
      return absl::UnavailableError(absl::StrCat("write ", temp.string(), ": ", strerror(errno)));
    }
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("rename ", path.string(), ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

std::string MigMinors(const std::vector<unsigned int>& gpu_minors) {
  std::string out = "config 1\nmonitor 2\n";
  for (const unsigned int gpu : gpu_minors) {
    for (unsigned int gi = 0; gi < fakenvml::kMigGpuInstancesPerGpu; ++gi) {
      absl::StrAppend(&out, "gpu", gpu, "/gi", gi, "/access ",
                      fakenvml::MigCapabilityMinor(gpu, gi), "\n");
      for (unsigned int ci = 0; ci < fakenvml::kMigComputeInstancesPerGi; ++ci) {
        absl::StrAppend(&out, "gpu", gpu, "/gi", gi, "/ci", ci, "/access ",
                        fakenvml::MigCapabilityMinor(gpu, gi, static_cast<int>(ci)), "\n");
      }
    }
  }
  return out;
}

absl::Status WriteProcEntries(const std::string& dir, const std::vector<unsigned int>& gpu_minors) {
  const fs::path root(dir);
  if (absl::Status s = WriteAtomically(root / kMinorsFile, MigMinors(gpu_minors)); !s.ok()) {
    return s;
  }
  if (absl::Status s = WriteAtomically(root / kConfigFile, Capability(1, 0400)); !s.ok()) return s;
  return WriteAtomically(root / kMonitorFile, Capability(2, 0444));
}

absl::Status RemoveProcEntries(const std::string& dir) {
  const fs::path root(dir);
  for (const char* file : {kMinorsFile, kConfigFile, kMonitorFile}) {
    const fs::path path = root / file;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return absl::UnavailableError(absl::StrCat("remove ", path.string(), ": ", strerror(errno)));
    }
  }
  // The directories, deepest first, when nothing else is in them.
  for (const char* sub :
       {"nvidia/capabilities/mig", "nvidia/capabilities", "nvidia", "nvidia-caps"}) {
    rmdir((root / sub).c_str());
  }
  return absl::OkStatus();
}

}  // namespace gpuop::fakedriver
