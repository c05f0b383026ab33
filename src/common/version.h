#ifndef GPUOP_COMMON_VERSION_H_
#define GPUOP_COMMON_VERSION_H_

#include <string>

#include "absl/strings/string_view.h"

namespace gpuop::common {

// The release version of gpuop, e.g. "0.1.0".
absl::string_view Version();

// One line for `--version`: "<program> <version> (<build type>)".
std::string VersionLine(absl::string_view program);

// The User-Agent gpuop components send to servers: "gpuop-<component>/<version>".
std::string UserAgent(absl::string_view component);

}  // namespace gpuop::common

#endif  // GPUOP_COMMON_VERSION_H_
