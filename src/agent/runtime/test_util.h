#ifndef GPUOP_AGENT_RUNTIME_TEST_UTIL_H_
#define GPUOP_AGENT_RUNTIME_TEST_UTIL_H_

// Helpers for the runtime tests: a temporary host root, the sample files in testdata/, and
// golden-file comparison.

#include <filesystem>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "absl/status/status.h"

namespace gpuop::agent::runtime {

// The status's message as a std::string, which GoogleTest prints readably.
inline std::string Message(const absl::Status& status) { return std::string(status.message()); }

// The bytes of testdata/<name>; fails the test when it cannot be read.
std::string Testdata(const std::string& name);

// Compares `actual` with testdata/golden/<name>. With GPUOP_UPDATE_GOLDEN=1 in the environment
// the golden file is rewritten instead (review the diff before committing it).
void ExpectGolden(const std::string& actual, const std::string& name);

// A host root in a fresh temporary directory, removed when the test ends. Short (under /tmp) so
// that sockets under it fit in a socket address.
class TempRoot {
 public:
  TempRoot();
  ~TempRoot();
  TempRoot(const TempRoot&) = delete;
  TempRoot& operator=(const TempRoot&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Where host path `host_path` is under this root.
  std::filesystem::path operator/(const std::filesystem::path& host_path) const;

  // Writes `content` at host path `host_path`, creating directories.
  void Put(const std::filesystem::path& host_path, const std::string& content) const;
  // The file's bytes, or nullopt when absent.
  std::optional<std::string> Get(const std::filesystem::path& host_path) const;
  bool Exists(const std::filesystem::path& host_path) const;
  // Every regular file under the root, as host paths with their bytes, sorted: a snapshot to
  // compare before and after an operation.
  std::string Snapshot() const;

 private:
  std::filesystem::path path_;
};

}  // namespace gpuop::agent::runtime

#endif  // GPUOP_AGENT_RUNTIME_TEST_UTIL_H_
