#include "agent/cdi/generator.h"

#include <algorithm>

#include "agent/cdi/validate.h"

namespace gpuop::agent::cdi {
namespace {

template <typename T>
void AppendNew(std::vector<T>& to, const std::vector<T>& from) {
  for (const T& item : from) {
    if (std::find(to.begin(), to.end(), item) == to.end()) to.push_back(item);
  }
}

}  // namespace

Device AllDevice(const std::vector<Device>& devices, const std::string& name) {
  Device all{.name = name};
  ContainerEdits& edits = all.container_edits;
  for (const Device& device : devices) {
    AppendNew(edits.env, device.container_edits.env);
    AppendNew(edits.device_nodes, device.container_edits.device_nodes);
    AppendNew(edits.mounts, device.container_edits.mounts);
    AppendNew(edits.hooks, device.container_edits.hooks);
    AppendNew(edits.additional_gids, device.container_edits.additional_gids);
    AppendNew(edits.net_devices, device.container_edits.net_devices);
  }
  return all;
}

absl::Status FinishSpec(Spec& spec) {
  spec.cdi_version = MinimumCdiVersion(spec);
  return ValidateSpec(spec);
}

}  // namespace gpuop::agent::cdi
