#include "common/version.h"

#include "absl/strings/str_cat.h"

namespace gpuop::common {

absl::string_view Version() { return GPUOP_VERSION; }

std::string VersionLine(absl::string_view program) {
  return absl::StrCat(program, " ", Version(), " (", GPUOP_BUILD_TYPE, ")");
}

std::string UserAgent(absl::string_view component) {
  return absl::StrCat("gpuop-", component, "/", Version());
}

}  // namespace gpuop::common
