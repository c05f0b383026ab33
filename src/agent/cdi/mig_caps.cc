#include "agent/cdi/mig_caps.h"

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace gpuop::agent::cdi {
namespace {

namespace fs = std::filesystem;

constexpr absl::string_view kDeviceFileMinorKey = "DeviceFileMinor";

}  // namespace

absl::StatusOr<unsigned int> ParseDeviceFileMinor(absl::string_view content,
                                                  const std::string& path) {
  for (absl::string_view line : absl::StrSplit(content, '\n')) {
    const std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits(':', 1));
    if (absl::StripAsciiWhitespace(kv.first) != kDeviceFileMinorKey) continue;
    unsigned int minor = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(kv.second), &minor)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": DeviceFileMinor \"",
                                                     absl::StripAsciiWhitespace(kv.second),
                                                     "\" is not a number"));
    }
    return minor;
  }
  return absl::InvalidArgumentError(absl::StrCat(path, ": no DeviceFileMinor line"));
}

std::map<std::string, unsigned int> ParseMigMinors(absl::string_view content) {
  std::map<std::string, unsigned int> minors;
  for (absl::string_view line : absl::StrSplit(content, '\n', absl::SkipWhitespace())) {
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    unsigned int minor = 0;
    if (fields.size() != 2 || !absl::SimpleAtoi(fields[1], &minor)) continue;
    minors[std::string(fields[0])] = minor;
  }
  return minors;
}

MigCapResolver::MigCapResolver(fs::path proc_dir) : proc_dir_(std::move(proc_dir)) {}

absl::StatusOr<unsigned int> MigCapResolver::GpuInstance(unsigned int gpu_minor, unsigned int gi) {
  const fs::path dir = proc_dir_ / "driver/nvidia/capabilities" / absl::StrCat("gpu", gpu_minor) /
                       "mig" / absl::StrCat("gi", gi);
  return Resolve(absl::StrCat("gpu", gpu_minor, "/gi", gi, "/access"), dir / "access");
}

absl::StatusOr<unsigned int> MigCapResolver::ComputeInstance(unsigned int gpu_minor,
                                                             unsigned int gi, unsigned int ci) {
  const fs::path dir = proc_dir_ / "driver/nvidia/capabilities" / absl::StrCat("gpu", gpu_minor) /
                       "mig" / absl::StrCat("gi", gi) / absl::StrCat("ci", ci);
  return Resolve(absl::StrCat("gpu", gpu_minor, "/gi", gi, "/ci", ci, "/access"), dir / "access");
}

absl::StatusOr<unsigned int> MigCapResolver::Resolve(const std::string& capability,
                                                     const fs::path& access_file) {
  GPUOP_ASSIGN_OR_RETURN(const std::optional<std::string> content,
                         common::ReadFileIfExists(access_file));
  if (content.has_value()) return ParseDeviceFileMinor(*content, access_file.string());

  const fs::path minors_file = proc_dir_ / "driver/nvidia-caps/mig-minors";
  if (!mig_minors_.has_value()) {
    GPUOP_ASSIGN_OR_RETURN(const std::optional<std::string> minors,
                           common::ReadFileIfExists(minors_file));
    mig_minors_.emplace();
    if (minors.has_value()) mig_minors_->emplace(ParseMigMinors(*minors));
  }
  if (mig_minors_->has_value()) {
    if (auto it = (*mig_minors_)->find(capability); it != (*mig_minors_)->end()) {
      return it->second;
    }
  }
  return absl::NotFoundError(absl::StrCat(
      "MIG capability ", capability, ": ", access_file.string(), " does not exist and ",
      minors_file.string(), mig_minors_->has_value() ? " does not list it" : " does not exist"));
}

}  // namespace gpuop::agent::cdi
