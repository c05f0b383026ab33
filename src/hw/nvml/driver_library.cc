#include "hw/nvml/driver_library.h"

#include <deque>

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gpuop::hw {
namespace {

// Linux's own limit on links followed in one lookup.
constexpr int kMaxLinks = 40;

void PushFront(std::deque<std::string>& pending, absl::string_view path) {
  std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  pending.insert(pending.begin(), parts.begin(), parts.end());
}

}  // namespace

std::string ResolveInRoot(absl::string_view root, absl::string_view path) {
  // "/" becomes "", so that paths are "/usr/..." and never "//usr/...".
  std::string base(root);
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::deque<std::string> pending;
  PushFront(pending, path);
  std::vector<std::string> resolved;
  const auto join = [&] {
    return resolved.empty() ? base : absl::StrCat(base, "/", absl::StrJoin(resolved, "/"));
  };
  int links = 0;
  while (!pending.empty()) {
    const std::string name = std::move(pending.front());
    pending.pop_front();
    if (name == ".") continue;
    if (name == "..") {
      if (!resolved.empty()) resolved.pop_back();
      continue;
    }
    const std::string candidate = absl::StrCat(join(), "/", name);
    struct stat st;
    if (lstat(candidate.c_str(), &st) != 0) return "";
    if (!S_ISLNK(st.st_mode)) {
      resolved.push_back(name);
      continue;
    }
    if (++links > kMaxLinks) return "";
    std::string target(4096, '\0');
    const ssize_t n = readlink(candidate.c_str(), target.data(), target.size());
    if (n <= 0 || static_cast<size_t>(n) >= target.size()) return "";
    target.resize(static_cast<size_t>(n));
    if (target.front() == '/') resolved.clear();
    PushFront(pending, target);
  }
  const std::string out = join();
  struct stat st;
  if (out.empty() || stat(out.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  return out;
}

std::vector<std::string> PreloadCompanions(const std::string& library,
                                           const std::vector<std::string>& companions) {
  std::vector<std::string> loaded;
  const size_t slash = library.rfind('/');
  if (slash == std::string::npos) return loaded;
  const std::string dir = library.substr(0, slash);
  // "libcuda.so.570.86.15" -> "570.86.15"; empty for "libcuda.so.1" alone.
  const std::string file = library.substr(slash + 1);
  const size_t so = file.find(".so.");
  const std::string version = so == std::string::npos ? "" : file.substr(so + 4);
  for (const std::string& companion : companions) {
    std::string name = companion;
    if (const size_t star = name.find('*'); star != std::string::npos) {
      if (version.empty() || version.find('.') == std::string::npos) continue;
      name.replace(star, 1, version);
    }
    const std::string path = absl::StrCat(dir, "/", name);
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr) loaded.push_back(path);
  }
  return loaded;
}

std::string ResolveDriverLibrary(absl::string_view soname, const DriverLibrarySearch& search) {
  for (const std::string& root : search.roots) {
    if (root.empty()) continue;
    for (const std::string& dir : search.library_dirs) {
      std::string found = ResolveInRoot(root, absl::StrCat(dir, "/", soname));
      if (!found.empty()) return found;
    }
  }
  return std::string(soname);
}

}  // namespace gpuop::hw
