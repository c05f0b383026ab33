#ifndef GPUOP_TEST_FAKES_NVML_EMBEDDED_H_
#define GPUOP_TEST_FAKES_NVML_EMBEDDED_H_

// A scenario carried inside the fake library's own file, so that a process that has nothing but
// the library (a container given one bind-mounted file by a CDI spec, with no environment) plays
// the same machine as every other process on the node. The file is
//   <the ELF image> <YAML text> <16-byte magic "gpuop-scenario-1"> <YAML length, 8 bytes LE>
// Trailing bytes after an ELF image are never mapped by the dynamic loader, so the library loads
// as before. The fake reads the trailer when GPUOP_FAKE_NVML_SCENARIO is unset (driver.h).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::fakenvml {

inline constexpr absl::string_view kScenarioMagic = "gpuop-scenario-1";
inline constexpr size_t kScenarioTrailerSize = 16 + 8;
// A larger length field means a damaged trailer, not a scenario.
inline constexpr uint64_t kMaxEmbeddedScenarioBytes = 16ULL << 20;

// The YAML embedded in the file at `path`; nullopt when the file carries none. Errors
// (NotFound, DataLoss) name the file: it cannot be read, or its trailer is damaged.
absl::StatusOr<std::optional<std::string>> ReadEmbeddedScenario(const std::string& path);

// `file` without its embedded scenario (all of it when it carries none).
absl::string_view WithoutEmbeddedScenario(absl::string_view file);

// `library` with any embedded scenario replaced by `yaml`.
std::string WithEmbeddedScenario(absl::string_view library, absl::string_view yaml);

// Writes WithEmbeddedScenario(<the file at library_path>, yaml) to `out_path` atomically: a
// temporary file in the same directory, written, flushed to disk, made mode 0755 and renamed over
// `out_path`. Errors name the file and the step.
absl::Status WriteLibraryWithScenario(const std::string& library_path, absl::string_view yaml,
                                      const std::string& out_path);

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_EMBEDDED_H_
