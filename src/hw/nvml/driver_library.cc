#include "hw/nvml/driver_library.h"

#include <deque>

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
