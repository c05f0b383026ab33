#include "operator/upgrade/revisions.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gpuop::op::upgrade {

const kube::ResourceType kControllerRevisions{"apps", "v1", "controllerrevisions",
                                              "ControllerRevision", true};

namespace {

bool ControlledBy(const kube::Json& object, const std::string& uid) {
  const kube::Json& meta = object.value("metadata", kube::Json::object());
  auto owners = meta.find("ownerReferences");
  if (owners == meta.end() || !owners->is_array()) return false;
  for (const auto& owner : *owners) {
    if (owner.is_object() && owner.value("controller", false) && owner.value("uid", "") == uid) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::optional<std::string> LatestRevisionHash(const std::vector<kube::Json>& revisions,
                                              const std::string& ds_name,
                                              const std::string& ds_uid) {
  const kube::Json* latest = nullptr;
  int64_t latest_revision = 0;
  for (const kube::Json& r : revisions) {
    if (!r.is_object() || !ControlledBy(r, ds_uid)) continue;
    auto number = r.find("revision");
    const int64_t revision =
        number != r.end() && number->is_number_integer() ? number->get<int64_t>() : 0;
    if (latest == nullptr || revision > latest_revision) {
      latest = &r;
      latest_revision = revision;
    }
  }
  if (latest == nullptr) return std::nullopt;
  const kube::Json& meta = latest->value("metadata", kube::Json::object());
  const kube::Json& labels = meta.value("labels", kube::Json::object());
  if (auto hash = labels.find("controller-revision-hash");
      hash != labels.end() && hash->is_string() && !hash->get<std::string>().empty()) {
    return hash->get<std::string>();
  }
  std::string name = meta.value("name", "");
  const std::string prefix = ds_name + "-";
  if (!absl::StartsWith(name, prefix)) return std::nullopt;
  return name.substr(prefix.size());
}

absl::StatusOr<std::optional<std::string>> RevisionResolver::UpdateRevision(
    const kube::DaemonSet& ds) {
  if (ds.observed_generation < ds.metadata.generation) return std::nullopt;
  {
    absl::MutexLock lock(&mu_);
    auto it = known_.find(ds.metadata.name);
    if (it != known_.end() && it->second.uid == ds.metadata.uid &&
        it->second.generation == ds.metadata.generation) {
      return it->second.hash;
    }
  }
  absl::StatusOr<kube::ObjectList> list =
      client_.ListAll(kControllerRevisions, ns_, {.label_selector = selector_});
  if (!list.ok()) return list.status();
  std::optional<std::string> hash =
      LatestRevisionHash(list->items, ds.metadata.name, ds.metadata.uid);
  if (hash.has_value()) {  // none yet: look again next time
    absl::MutexLock lock(&mu_);
    known_[ds.metadata.name] =
        Known{.uid = ds.metadata.uid, .generation = ds.metadata.generation, .hash = *hash};
  }
  return hash;
}

}  // namespace gpuop::op::upgrade
