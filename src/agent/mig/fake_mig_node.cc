#include "agent/mig/fake_mig_node.h"

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gpuop::agent::mig {

absl::Status FakeMigNode::Failure::Take() {
  if (left == 0) return absl::OkStatus();
  if (left > 0) --left;
  return status;
}

absl::StatusOr<NodeMeta> FakeMigNode::Get() {
  absl::MutexLock lock(&mu_);
  if (absl::Status failed = get_failure_.Take(); !failed.ok()) return failed;
  return meta_;
}

absl::Status FakeMigNode::Patch(const MetaChanges& labels, const MetaChanges& annotations) {
  std::function<void(FakeMigNode&)> hook;
  bool label_changed = false;
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status failed = patch_failure_.Take(); !failed.ok()) return failed;
    auto apply = [](std::map<std::string, std::string>& into, const MetaChanges& changes) {
      for (const auto& [key, value] : changes) {
        if (value.has_value()) {
          into[key] = *value;
        } else {
          into.erase(key);
        }
      }
    };
    apply(meta_.labels, labels);
    apply(meta_.annotations, annotations);
    writes_.push_back({labels, annotations});
    hook = on_patch_;
    label_changed = !labels.empty();
  }
  if (hook) hook(*this);
  if (label_changed) Notify();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> FakeMigNode::ActivePods(
    const std::string& label_selector) {
  std::function<void(FakeMigNode&)> hook;
  {
    absl::MutexLock lock(&mu_);
    hook = on_pod_list_;
  }
  if (hook) hook(*this);
  absl::MutexLock lock(&mu_);
  ++pod_lists_;
  if (absl::Status failed = list_failure_.Take(); !failed.ok()) return failed;
  std::vector<std::string> active;
  for (const Pod& pod : pods_) {
    if (pod.phase == "Succeeded" || pod.phase == "Failed") continue;
    if (MatchesSelector(pod.labels, label_selector)) active.push_back(pod.key);
  }
  return active;
}

void FakeMigNode::RecordEvent(kube::EventType type, const std::string& reason,
                              const std::string& note) {
  absl::MutexLock lock(&mu_);
  events_.push_back({type, reason, note});
}

void FakeMigNode::Watch(std::function<void()> on_change) {
  {
    absl::MutexLock lock(&mu_);
    on_change_ = std::move(on_change);
  }
  Notify();
}

void FakeMigNode::StopWatching() {
  absl::MutexLock lock(&mu_);
  on_change_ = nullptr;
}

void FakeMigNode::Notify() {
  std::function<void()> on_change;
  {
    absl::MutexLock lock(&mu_);
    on_change = on_change_;
  }
  if (on_change) on_change();
}

void FakeMigNode::SetLabel(const std::string& key, const std::string& value) {
  {
    absl::MutexLock lock(&mu_);
    meta_.labels[key] = value;
  }
  Notify();
}

void FakeMigNode::RemoveLabel(const std::string& key) {
  {
    absl::MutexLock lock(&mu_);
    meta_.labels.erase(key);
  }
  Notify();
}

void FakeMigNode::SetAnnotation(const std::string& key, const std::string& value) {
  absl::MutexLock lock(&mu_);
  meta_.annotations[key] = value;
}

void FakeMigNode::RemoveAnnotation(const std::string& key) {
  absl::MutexLock lock(&mu_);
  meta_.annotations.erase(key);
}

NodeMeta FakeMigNode::meta() const {
  absl::MutexLock lock(&mu_);
  return meta_;
}

std::optional<std::string> FakeMigNode::label(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  const auto it = meta_.labels.find(key);
  return it == meta_.labels.end() ? std::nullopt : std::optional<std::string>(it->second);
}

std::optional<std::string> FakeMigNode::annotation(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  const auto it = meta_.annotations.find(key);
  return it == meta_.annotations.end() ? std::nullopt : std::optional<std::string>(it->second);
}

void FakeMigNode::AddPod(Pod pod) {
  absl::MutexLock lock(&mu_);
  pods_.push_back(std::move(pod));
}

void FakeMigNode::RemovePods(const std::string& label_key, const std::string& label_value) {
  absl::MutexLock lock(&mu_);
  std::erase_if(pods_, [&](const Pod& pod) {
    const auto it = pod.labels.find(label_key);
    return it != pod.labels.end() && it->second == label_value;
  });
}

std::vector<FakeMigNode::Write> FakeMigNode::writes() const {
  absl::MutexLock lock(&mu_);
  return writes_;
}

std::vector<FakeMigNode::Event> FakeMigNode::events() const {
  absl::MutexLock lock(&mu_);
  return events_;
}

int FakeMigNode::pod_lists() const {
  absl::MutexLock lock(&mu_);
  return pod_lists_;
}

void FakeMigNode::FailGets(absl::Status status, int count) {
  absl::MutexLock lock(&mu_);
  get_failure_ = {std::move(status), count};
}

void FakeMigNode::FailPatches(absl::Status status, int count) {
  absl::MutexLock lock(&mu_);
  patch_failure_ = {std::move(status), count};
}

void FakeMigNode::FailPodLists(absl::Status status, int count) {
  absl::MutexLock lock(&mu_);
  list_failure_ = {std::move(status), count};
}

void FakeMigNode::OnPatch(std::function<void(FakeMigNode&)> hook) {
  absl::MutexLock lock(&mu_);
  on_patch_ = std::move(hook);
}

void FakeMigNode::OnPodList(std::function<void(FakeMigNode&)> hook) {
  absl::MutexLock lock(&mu_);
  on_pod_list_ = std::move(hook);
}

bool MatchesSelector(const std::map<std::string, std::string>& labels,
                     const std::string& selector) {
  for (absl::string_view term : absl::StrSplit(selector, ',', absl::SkipWhitespace())) {
    term = absl::StripAsciiWhitespace(term);
    const size_t op = term.find_first_of("!=");
    if (op == absl::string_view::npos) {
      if (labels.find(std::string(term)) == labels.end()) return false;
      continue;
    }
    if (op == 0) {  // "!key"
      if (labels.find(std::string(term.substr(1))) != labels.end()) return false;
      continue;
    }
    const std::string key(absl::StripAsciiWhitespace(term.substr(0, op)));
    const bool negate = term[op] == '!';
    absl::string_view value = term.substr(op);
    if (!absl::ConsumePrefix(&value, "!=") && !absl::ConsumePrefix(&value, "==")) {
      absl::ConsumePrefix(&value, "=");
    }
    value = absl::StripAsciiWhitespace(value);
    const auto it = labels.find(key);
    const bool equal = it != labels.end() && it->second == value;
    if (equal == negate) return false;
  }
  return true;
}

}  // namespace gpuop::agent::mig
