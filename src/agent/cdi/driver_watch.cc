#include "agent/cdi/driver_watch.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"

namespace gpuop::agent::cdi {
namespace {

namespace fs = std::filesystem;

void Append(std::string& out, absl::string_view label, const fs::path& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    absl::StrAppend(&out, label, "=-;");
    return;
  }
  absl::StrAppend(&out, label, "=", st.st_dev, ":", st.st_ino, ":", st.st_mtim.tv_sec, ".",
                  st.st_mtim.tv_nsec, ":", st.st_ctim.tv_sec, ".", st.st_ctim.tv_nsec, ";");
}

}  // namespace

std::string DriverFingerprint(const HostFiles& files, const DriverFilesOptions& driver,
                              const std::string& dev_root) {
  std::string out = absl::StrCat("root ", driver.driver_root, ";");
  const fs::path root = files.Open(driver.driver_root);
  Append(out, "/", root);
  auto inside = [&](const std::string& relative) {
    absl::StatusOr<std::optional<fs::path>> resolved = ResolveInRoot(root, relative);
    if (!resolved.ok()) {
      absl::StrAppend(&out, relative, "=?;");
    } else if (!resolved->has_value()) {
      absl::StrAppend(&out, relative, "=-;");
    } else {
      Append(out, relative, root / **resolved);
    }
  };
  for (const std::string& dir : driver.library_dirs) inside(dir);
  for (const std::string& dir : driver.binary_dirs) inside(dir);
  for (const std::string& dir : driver.firmware_dirs) inside(dir + "/nvidia");
  for (const std::string& path : driver.ipc_paths) inside(path);
  Append(out, "dev", files.Open(dev_root));
  Append(out, "dev/nvidia-caps", files.Open(JoinPath(dev_root, "nvidia-caps")));
  return out;
}

}  // namespace gpuop::agent::cdi
