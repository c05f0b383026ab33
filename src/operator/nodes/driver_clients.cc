#include "operator/nodes/driver_clients.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "operator/render/render.h"

namespace gpuop::op {

bool IsDriverClient(const std::string& name) {
  return std::any_of(std::begin(kDriverClients), std::end(kDriverClients),
                     [&](Component c) { return name == ComponentName(c); });
}

std::map<std::string, std::string> DriverClients::PauseLabels() const {
  std::map<std::string, std::string> out;
  for (const std::string& label : to_pause) out[label] = kPausedForDriverValue;
  return out;
}

std::map<std::string, std::string> DriverClients::ResumeLabels() const {
  std::map<std::string, std::string> out;
  for (const std::string& label : paused) out[label] = "true";
  return out;
}

std::string DriverClients::ComponentsOf(const std::vector<std::string>& labels) {
  std::vector<std::string> names;
  for (const std::string& label : labels) {
    names.push_back(absl::StartsWith(label, kDeployLabelPrefix)
                        ? label.substr(sizeof(kDeployLabelPrefix) - 1)
                        : label);
  }
  return absl::StrJoin(names, ", ");
}

DriverClients DescribeDriverClients(const kube::Labels& labels, const PolicySpec& policy,
                                    const std::vector<ClientPod>& pods) {
  DriverClients out;
  for (Component c : kDriverClients) {
    const std::string label = absl::StrCat(kDeployLabelPrefix, ComponentName(c));
    const std::optional<absl::string_view> value = labels.Get(label);
    if (value == std::optional<absl::string_view>(kPausedForDriverValue)) {
      out.paused.push_back(label);
    } else if (policy.Enabled(c) && value == std::optional<absl::string_view>("true")) {
      out.to_pause.push_back(label);
    }
  }
  for (const ClientPod& pod : pods) {
    if (!IsDriverClient(pod.component) || pod.phase == "Succeeded" || pod.phase == "Failed") {
      continue;
    }
    out.running.push_back(pod.name);
  }
  std::sort(out.running.begin(), out.running.end());
  return out;
}

}  // namespace gpuop::op
