#include "agent/labels/labels.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "agent/labels/gfd_labels.h"
#include "hw/amd/amd_labels.h"

namespace gpuop::agent {

std::string LabelValue(absl::string_view value) {
  std::string out;
  for (char c : value) {
    const bool ok =
        absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    out += ok ? c : '-';
  }
  if (out.size() > 63) out.resize(63);
  while (!out.empty() && !absl::ascii_isalnum(static_cast<unsigned char>(out.back()))) {
    out.pop_back();
  }
  size_t start = 0;
  while (start < out.size() && !absl::ascii_isalnum(static_cast<unsigned char>(out[start]))) {
    ++start;
  }
  return out.substr(start);
}

std::string MachineType(const std::string& path) {
  if (path.empty()) return "unknown";
  std::ifstream in(path);
  if (!in) return "unknown";
  std::stringstream content;
  content << in.rdbuf();
  if (in.bad()) return "unknown";
  return std::string(absl::StripAsciiWhitespace(content.str()));
}

absl::StatusOr<GfdSettings> ResolveGfdSettings(const GfdFlags& config,
                                               const GfdOverrides& command_line) {
  GfdSettings out;
  out.timestamp = !command_line.no_timestamp.value_or(config.no_timestamp);
  const char* interval_field = "--sleep-interval";
  if (command_line.sleep_interval.has_value()) {
    out.interval = *command_line.sleep_interval;
  } else if (config.sleep_interval.has_value()) {
    out.interval = *config.sleep_interval;
    interval_field = "flags.gfd.sleepInterval";
  }
  if (out.interval < absl::Seconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat(interval_field, ": ",
                                                   absl::FormatDuration(out.interval),
                                                   " is shorter than the 1s minimum"));
  }
  if (command_line.machine_type_file.has_value()) {
    out.machine_type_file = *command_line.machine_type_file;
  } else if (!config.machine_type_file.empty()) {
    out.machine_type_file = config.machine_type_file;
  }
  return out;
}

NodeLabels ComputeNodeLabels(const LabelInputs& inputs) {
  NodeLabels labels;
  std::vector<std::string> vendors;
  if (inputs.nvidia.has_value() && !inputs.nvidia->gpus.empty()) {
    internal::AddGfdLabels(inputs, labels);
    labels["nvidia.com/gpu.present"] = "true";
    vendors.push_back("nvidia");
  }
  if (inputs.amd.has_value() && !inputs.amd->inventory.gpus.empty()) {
    for (auto& [k, v] : hw::AmdNodeLabels(*inputs.amd)) labels[k] = v;
    vendors.push_back("amd");
  }
  if (!vendors.empty()) {
    labels["gpuop.io/gpu.present"] = "true";
    labels["gpuop.io/gpu.vendor"] = vendors.size() == 1 ? vendors[0] : "mixed";
  }
  return labels;
}

}  // namespace gpuop::agent
