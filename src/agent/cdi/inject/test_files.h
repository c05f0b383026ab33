#ifndef GPUOP_AGENT_CDI_INJECT_TEST_FILES_H_
#define GPUOP_AGENT_CDI_INJECT_TEST_FILES_H_

// Files for the inject tests: spec directories and bundles in a temporary tree.

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace gpuop::agent::cdi::inject::testing {

// Writes `content` to `path` (its directory created) with `mode`.
inline void WriteTestFile(const std::filesystem::path& path, const std::string& content,
                          std::filesystem::perms mode = std::filesystem::perms(0644)) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << content;
  std::filesystem::permissions(path, mode);
}

// The whole of `path`; "" when it cannot be read.
inline std::string ReadTestFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace gpuop::agent::cdi::inject::testing

#endif  // GPUOP_AGENT_CDI_INJECT_TEST_FILES_H_
