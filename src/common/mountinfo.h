#ifndef GPUOP_COMMON_MOUNTINFO_H_
#define GPUOP_COMMON_MOUNTINFO_H_

// Reading a mount table in the format of /proc/<pid>/mountinfo (proc(5)): one mount per line,
// the mount point in the fifth field with space, tab, newline and backslash written as octal
// escapes (\040). Header-only, so that programs with no library of gpuop's can use it too.

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace gpuop::common {

// A mountinfo path with its octal escapes decoded.
inline std::string UnescapeMountPath(absl::string_view text) {
  auto octal = [](char c) { return c >= '0' && c <= '7'; };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size() && octal(text[i + 1]) && octal(text[i + 2]) &&
        octal(text[i + 3])) {
      out.push_back(static_cast<char>((text[i + 1] - '0') * 64 + (text[i + 2] - '0') * 8 +
                                      (text[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

// Whether the mount table `mountinfo` lists a mount on `path` (compared as written: pass a
// canonical path); nullopt when the table cannot be read.
inline std::optional<bool> MountedOn(const std::string& mountinfo, const std::string& path) {
  std::ifstream in(mountinfo);
  if (!in) return std::nullopt;
  std::string line;
  while (std::getline(in, line)) {
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    if (fields.size() > 4 && UnescapeMountPath(fields[4]) == path) return true;
  }
  return false;
}

}  // namespace gpuop::common

#endif  // GPUOP_COMMON_MOUNTINFO_H_
