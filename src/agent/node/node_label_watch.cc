#include "agent/node/node_label_watch.h"

#include "kube/types/json_fields.h"

namespace gpuop::agent {

NodeLabelWatch::NodeLabelWatch(kube::Client& client, std::string node_name, std::string label,
                               std::function<void(const std::string&)> on_change)
    : label_(std::move(label)), on_change_(std::move(on_change)) {
  // The store keeps only the label's value; the watch sees only this Node.
  informer_ = std::make_unique<kube::Informer<std::string>>(
      client, kube::resources::kNodes,
      kube::ReflectorOptions{.field_selector = "metadata.name=" + node_name, .metadata_only = true},
      [this](const kube::Json& node) -> absl::StatusOr<std::string> {
        return kube::StringField(kube::Field(kube::Field(node, "metadata"), "labels"),
                                 label_.c_str());
      });
  informer_->AddHandlers({.on_add = [this](const std::string& value) { on_change_(value); },
                          .on_update =
                              [this](const std::string& old_value, const std::string& value) {
                                if (old_value != value) on_change_(value);
                              },
                          .on_delete = [this](const std::string&) { on_change_(""); }});
}

NodeLabelWatch::~NodeLabelWatch() { Stop(); }

void NodeLabelWatch::Start() { informer_->Start(); }

void NodeLabelWatch::Stop() { informer_->Stop(); }

bool NodeLabelWatch::WaitForSync(absl::Duration timeout) const {
  return informer_->WaitForSync(timeout);
}

}  // namespace gpuop::agent
