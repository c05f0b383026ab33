#include "agent/mig/mig_node.h"

#include "absl/strings/str_cat.h"
#include "kube/types/json_fields.h"

namespace gpuop::agent::mig {
namespace {

absl::Status Annotate(const absl::Status& status, absl::string_view what) {
  return absl::Status(status.code(), absl::StrCat(what, ": ", status.message()));
}

std::map<std::string, std::string> StringMap(const kube::Json& object) {
  std::map<std::string, std::string> out;
  if (!object.is_object()) return out;
  for (const auto& [key, value] : object.items()) {
    if (value.is_string()) out[key] = value.get<std::string>();
  }
  return out;
}

kube::Json MergeObject(const MetaChanges& changes) {
  kube::Json object = kube::Json::object();
  for (const auto& [key, value] : changes) {
    object[key] = value.has_value() ? kube::Json(*value) : kube::Json(nullptr);
  }
  return object;
}

}  // namespace

KubeMigNode::KubeMigNode(kube::Client& client, std::string node_name, std::string watched_label,
                         kube::EventRecorder* recorder, std::string pod_namespace)
    : client_(client),
      node_name_(std::move(node_name)),
      watched_label_(std::move(watched_label)),
      recorder_(recorder),
      pod_namespace_(std::move(pod_namespace)) {}

KubeMigNode::~KubeMigNode() { StopWatching(); }

absl::StatusOr<NodeMeta> KubeMigNode::Get() {
  absl::StatusOr<kube::Json> node =
      client_.Get(kube::resources::kNodes, "", node_name_, {.metadata_only = true});
  if (!node.ok()) return Annotate(node.status(), absl::StrCat("read node ", node_name_));
  const kube::Json& metadata = kube::Field(*node, "metadata");
  {
    absl::MutexLock lock(&mu_);
    uid_ = kube::StringField(metadata, "uid");
  }
  return NodeMeta{.labels = StringMap(kube::Field(metadata, "labels")),
                  .annotations = StringMap(kube::Field(metadata, "annotations"))};
}

absl::Status KubeMigNode::Patch(const MetaChanges& labels, const MetaChanges& annotations) {
  kube::Json metadata = kube::Json::object();
  if (!labels.empty()) metadata["labels"] = MergeObject(labels);
  if (!annotations.empty()) metadata["annotations"] = MergeObject(annotations);
  if (metadata.empty()) return absl::OkStatus();
  absl::StatusOr<kube::Json> patched =
      client_.Patch(kube::resources::kNodes, "", node_name_, kube::PatchType::kMergePatch,
                    {{"metadata", metadata}}, {.field_manager = kFieldManager});
  if (!patched.ok()) return Annotate(patched.status(), absl::StrCat("patch node ", node_name_));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> KubeMigNode::ActivePods(
    const std::string& label_selector) {
  absl::StatusOr<kube::ObjectList> pods =
      client_.ListAll(kube::resources::kPods, pod_namespace_,
                      {.label_selector = label_selector,
                       .field_selector = "spec.nodeName=" + node_name_,
                       .limit = 500});
  if (!pods.ok()) {
    return Annotate(pods.status(), absl::StrCat("list pods on node ", node_name_, " matching \"",
                                                label_selector, "\""));
  }
  std::vector<std::string> active;
  for (const kube::Json& pod : pods->items) {
    const std::string phase = kube::StringField(kube::Field(pod, "status"), "phase");
    if (phase == "Succeeded" || phase == "Failed") continue;
    const kube::Json& metadata = kube::Field(pod, "metadata");
    active.push_back(absl::StrCat(kube::StringField(metadata, "namespace"), "/",
                                  kube::StringField(metadata, "name")));
  }
  return active;
}

void KubeMigNode::RecordEvent(kube::EventType type, const std::string& reason,
                              const std::string& note) {
  if (recorder_ == nullptr) return;
  kube::ObjectReference node{.api_version = "v1", .kind = "Node", .name = node_name_};
  {
    absl::MutexLock lock(&mu_);
    node.uid = uid_;
  }
  recorder_->Record(node, type, reason, "ConfigureMig", note);
}

void KubeMigNode::Watch(std::function<void()> on_change) {
  StopWatching();
  watch_ = std::make_unique<NodeLabelWatch>(
      client_, node_name_, watched_label_,
      [on_change = std::move(on_change)](const std::string&) { on_change(); });
  watch_->Start();
}

void KubeMigNode::StopWatching() {
  if (watch_ != nullptr) watch_->Stop();
}

}  // namespace gpuop::agent::mig
