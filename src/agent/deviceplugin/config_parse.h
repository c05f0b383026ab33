#ifndef GPUOP_AGENT_DEVICEPLUGIN_CONFIG_PARSE_H_
#define GPUOP_AGENT_DEVICEPLUGIN_CONFIG_PARSE_H_

// The parts of ParseDevicePluginConfig in config_sharing.cc. Internal to config*.cc.

#include <yaml-cpp/yaml.h>

#include "absl/status/status.h"
#include "agent/deviceplugin/config.h"
#include "common/yaml_fields.h"

namespace gpuop::agent::config_parse {

// A key that is there with a value (YAML's `key:` alone is null, which NVIDIA's parser takes
// as unset).
inline bool Present(const YAML::Node& node) { return node && !node.IsNull(); }

// `resources`: resources.gpus[] and resources.mig[].
absl::Status ParseResources(const YAML::Node& node, const common::YamlFields& r,
                            DevicePluginConfig& config);
// `sharing`: timeSlicing or mps.
absl::Status ParseSharing(const YAML::Node& node, const common::YamlFields& r,
                          DevicePluginConfig& config);
// `imex`: channelIDs and required.
absl::Status ParseImex(const YAML::Node& node, const common::YamlFields& r,
                       DevicePluginConfig& config);

}  // namespace gpuop::agent::config_parse

#endif  // GPUOP_AGENT_DEVICEPLUGIN_CONFIG_PARSE_H_
