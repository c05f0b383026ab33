#include "cmd/gpuop-agent/config_label.h"

#include <cstdio>

#include "cmd/gpuop-agent/accelerators.h"

namespace gpuop::cmd {

ConfigLabelFollower::ConfigLabelFollower(const std::string& node_name,
                                         const std::string& kubeconfig,
                                         const std::string& component, const std::string& command,
                                         agent::ConfigSource& source,
                                         std::function<absl::Status()> reload) {
  if (node_name.empty()) return;
  absl::StatusOr<std::unique_ptr<kube::Client>> made = MakeClient(kubeconfig, component);
  if (!made.ok()) {
    std::fprintf(stderr, "%s: no node label selection: %s\n", command.c_str(),
                 made.status().ToString().c_str());
    return;
  }
  client_ = *std::move(made);
  watch_ = std::make_unique<agent::NodeLabelWatch>(
      *client_, node_name, agent::ConfigSource::kNodeLabel,
      [&source, reload = std::move(reload), command](const std::string& value) {
        source.SetSelected(value);
        if (absl::Status s = reload(); !s.ok()) {
          std::fprintf(stderr, "%s: %s\n", command.c_str(), s.ToString().c_str());
        }
      });
  watch_->Start();
}

ConfigLabelFollower::~ConfigLabelFollower() {
  if (watch_) watch_->Stop();
}

}  // namespace gpuop::cmd
