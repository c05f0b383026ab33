#ifndef GPUOP_CMD_GPUOP_AGENT_CONFIG_LABEL_H_
#define GPUOP_CMD_GPUOP_AGENT_CONFIG_LABEL_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "agent/deviceplugin/config_source.h"
#include "agent/node/node_label_watch.h"
#include "kube/client/client.h"

namespace gpuop::cmd {

// Follows the node's nvidia.com/device-plugin.config label, as NVIDIA's components do, for the
// subcommands that read the device plugin configuration: each value is selected in `source` and
// `reload` runs (its error goes to stderr, prefixed "<command>: "). Without a node name nothing
// is followed; without API access neither, and stderr says why.
class ConfigLabelFollower {
 public:
  ConfigLabelFollower(const std::string& node_name, const std::string& kubeconfig,
                      const std::string& component, const std::string& command,
                      agent::ConfigSource& source, std::function<absl::Status()> reload);
  ~ConfigLabelFollower();

 private:
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<agent::NodeLabelWatch> watch_;
};

}  // namespace gpuop::cmd

#endif  // GPUOP_CMD_GPUOP_AGENT_CONFIG_LABEL_H_
