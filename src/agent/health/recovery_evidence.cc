#include "agent/health/recovery_evidence.h"

#include <fstream>

#include <sys/stat.h>

#include "absl/strings/ascii.h"
#include "common/files.h"

namespace gpuop::agent {
namespace {

absl::Time ModifiedAt(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return absl::InfinitePast();
  return absl::TimeFromTimespec(st.st_mtim);
}

// A UUID names a file only when it cannot climb out of the directory.
bool SafeName(const std::string& uuid) {
  return !uuid.empty() && uuid.find('/') == std::string::npos && uuid != "." && uuid != "..";
}

}  // namespace

std::string NodeRecoveryEvidence::BootId() const {
  std::ifstream in(options_.boot_id);
  std::string id;
  std::getline(in, id);
  return std::string(absl::StripAsciiWhitespace(id));
}

absl::Time NodeRecoveryEvidence::DriverLoadedAt() const {
  return ModifiedAt(options_.driver_ready);
}

absl::Time NodeRecoveryEvidence::GpuResetAt(const std::string& uuid) const {
  if (!SafeName(uuid)) return absl::InfinitePast();
  return ModifiedAt(options_.reset_dir / uuid);
}

bool RecordGpuReset(const std::filesystem::path& reset_dir, const std::string& uuid) {
  if (!SafeName(uuid)) return false;
  std::error_code ec;
  std::filesystem::create_directories(reset_dir, ec);
  // Rewritten whole, so the modification time is now even when the file existed.
  return common::WriteFileAtomically(reset_dir / uuid, "reset\n").ok();
}

}  // namespace gpuop::agent
