#ifndef GPUOP_AGENT_MIG_LAYOUT_FILE_H_
#define GPUOP_AGENT_MIG_LAYOUT_FILE_H_

#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/status/statusor.h"

namespace gpuop::agent::mig {

// The layout notification file: the MIG manager rewrites it after every change of the GPUs'
// MIG layout, and the device plugin, CDI generator and labeller watch it and re-plan. Content:
//
//   generation: 12
//   layout: all-1g.10gb
//
// The generation grows by one with every write (read back from the file, so it survives agent
// restarts), so every write changes the content even when the layout name repeats.
struct LayoutNotice {
  int64_t generation = 0;
  std::string layout;
};

// Reads the file; a missing or unreadable file is generation 0 with no layout.
LayoutNotice ReadLayoutFile(const std::filesystem::path& path);

// Writes the next generation for `layout` atomically (readers see the old or the new content)
// and returns it.
[[nodiscard]] absl::StatusOr<LayoutNotice> WriteLayoutFile(const std::filesystem::path& path,
                                                           const std::string& layout);

}  // namespace gpuop::agent::mig

#endif  // GPUOP_AGENT_MIG_LAYOUT_FILE_H_
