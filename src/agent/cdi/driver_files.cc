#include "agent/cdi/driver_files.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/cdi/elf_soname.h"
#include "common/status_macros.h"

namespace gpuop::agent::cdi {
namespace {

namespace fs = std::filesystem;

struct DirEntry {
  std::string name;
  fs::file_type type = fs::file_type::none;  // of the entry itself, symlinks not followed
};

// The entries of `dir`, sorted by name so that the spec does not depend on directory order.
absl::StatusOr<std::vector<DirEntry>> ListSorted(const fs::path& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  std::vector<DirEntry> entries;
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    const fs::file_status status = it->symlink_status(type_ec);
    entries.push_back(
        {it->path().filename().string(), type_ec ? fs::file_type::unknown : status.type()});
  }
  if (ec) return absl::InternalError(absl::StrCat("list ", dir.string(), ": ", ec.message()));
  std::sort(entries.begin(), entries.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return entries;
}

bool IsDirectory(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

bool IsRegularFile(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

std::string ContainerPath(const fs::path& relative) { return JoinPath("/", relative.string()); }

// One searched library directory: its path inside the root and its sorted entries.
struct LibraryDir {
  fs::path relative;
  std::vector<DirEntry> entries;
};

// A file name a SONAME may give a link: no directory part, not "." or "..".
bool IsPlainName(absl::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == absl::string_view::npos;
}

// Links by container path; the first rule to name a path keeps it.
class Links {
 public:
  explicit Links(const std::set<std::string>& mounted) : mounted_(mounted) {}
  void Add(const std::string& target, const std::string& link) {
    if (mounted_.contains(link)) return;
    links_.emplace(link, target);
  }
  std::vector<std::string> Arguments() const {
    std::vector<std::string> out;
    for (const auto& [link, target] : links_) out.push_back(absl::StrCat(target, "::", link));
    return out;
  }

 private:
  const std::set<std::string>& mounted_;
  std::map<std::string, std::string> links_;
};

}  // namespace

absl::StatusOr<DriverFiles> FindDriverFiles(const HostFiles& files,
                                            const DriverFilesOptions& options) {
  if (options.driver_root.empty() || options.driver_root.front() != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("driver root \"", options.driver_root, "\" is not an absolute path"));
  }
  if (options.driver_version.empty()) {
    return absl::InvalidArgumentError(
        "driver version is empty; driver libraries are matched by their version suffix");
  }
  const fs::path root = files.Open(options.driver_root);
  const std::string suffix = ".so." + options.driver_version;
  DriverFiles out;

  std::vector<LibraryDir> dirs;
  std::set<fs::path> seen_dirs;
  std::set<fs::path> libraries;  // relative to the root
  for (const std::string& dir : options.library_dirs) {
    GPUOP_ASSIGN_OR_RETURN(const std::optional<fs::path> resolved, ResolveInRoot(root, dir));
    if (!resolved.has_value() || !seen_dirs.insert(*resolved).second) continue;
    if (!IsDirectory(root / *resolved)) continue;
    GPUOP_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, ListSorted(root / *resolved));
    bool any = false;
    for (const DirEntry& entry : entries) {
      if (entry.type != fs::file_type::regular || !absl::StartsWith(entry.name, "lib") ||
          !absl::EndsWith(entry.name, suffix)) {
        continue;
      }
      const fs::path relative = *resolved / entry.name;
      libraries.insert(relative);
      out.libraries.push_back(
          {JoinPath(options.driver_root, relative.string()), ContainerPath(relative)});
      any = true;
    }
    if (any) out.library_dirs.push_back(ContainerPath(*resolved));
    dirs.push_back({*resolved, std::move(entries)});
  }

  std::set<std::string> mounted;
  for (const DriverFile& library : out.libraries) mounted.insert(library.container_path);
  Links links(mounted);
  // 1. SONAME links. A file that is not ELF or has no SONAME gets none; its links on disk, if
  // any, still come through rule 2.
  for (const DriverFile& library : out.libraries) {
    const fs::path container(library.container_path);
    absl::StatusOr<std::string> soname = ReadElfSoname(files.Open(library.host_path));
    if (!soname.ok() || !IsPlainName(*soname) || *soname == container.filename().string()) {
      continue;
    }
    links.Add(container.filename().string(), (container.parent_path() / *soname).string());
  }
  // 2. Symlinks on disk that resolve to one of the libraries.
  for (const LibraryDir& dir : dirs) {
    for (const DirEntry& entry : dir.entries) {
      if (entry.type != fs::file_type::symlink || !absl::StartsWith(entry.name, "lib") ||
          !absl::StrContains(entry.name, ".so")) {
        continue;
      }
      const fs::path relative = dir.relative / entry.name;
      GPUOP_ASSIGN_OR_RETURN(const std::optional<fs::path> target, ResolveInRoot(root, relative));
      if (!target.has_value() || !libraries.contains(*target)) continue;
      std::error_code ec;
      const fs::path written = fs::read_symlink(root / relative, ec);
      if (ec) {
        return absl::InternalError(
            absl::StrCat("read link ", (root / relative).string(), ": ", ec.message()));
      }
      links.Add(written.string(), ContainerPath(relative));
    }
  }
  // 3. The development links nvidia-ctk adds (internal/discover/symlinks.go).
  for (const DriverFile& library : out.libraries) {
    const fs::path container(library.container_path);
    const std::string name = container.filename().string();
    const fs::path dir = container.parent_path();
    if (absl::StartsWith(name, "libcuda.so.")) {
      links.Add("libcuda.so.1", (dir / "libcuda.so").string());
    } else if (absl::StartsWith(name, "libnvidia-opticalflow.so.")) {
      links.Add("libnvidia-opticalflow.so.1", (dir / "libnvidia-opticalflow.so").string());
    } else if (absl::StartsWith(name, "libGLX_nvidia.so.")) {
      links.Add(name, (dir / "libGLX_indirect.so.0").string());
    }
  }
  out.links = links.Arguments();

  for (const std::string& binary : options.binaries) {
    for (const std::string& dir : options.binary_dirs) {
      const fs::path relative = fs::path(dir) / binary;
      GPUOP_ASSIGN_OR_RETURN(const std::optional<fs::path> resolved, ResolveInRoot(root, relative));
      if (!resolved.has_value() || !IsRegularFile(root / *resolved)) continue;
      out.binaries.push_back(
          {JoinPath(options.driver_root, resolved->string()), ContainerPath(relative)});
      break;
    }
  }

  for (const std::string& dir : options.firmware_dirs) {
    const fs::path relative = fs::path(dir) / "nvidia" / options.driver_version;
    GPUOP_ASSIGN_OR_RETURN(const std::optional<fs::path> resolved, ResolveInRoot(root, relative));
    if (!resolved.has_value() || !IsDirectory(root / *resolved)) continue;
    out.firmware =
        DriverFile{JoinPath(options.driver_root, resolved->string()), ContainerPath(*resolved)};
    break;
  }

  for (const std::string& path : options.ipc_paths) {
    GPUOP_ASSIGN_OR_RETURN(const std::optional<fs::path> resolved, ResolveInRoot(root, path));
    if (!resolved.has_value() || resolved->empty()) continue;
    out.ipc.push_back(
        DriverFile{JoinPath(options.driver_root, resolved->string()), ContainerPath(*resolved)});
  }
  return out;
}

}  // namespace gpuop::agent::cdi
