#include "kube/types/labels.h"

#include <algorithm>

#include "absl/base/thread_annotations.h"
#include "absl/container/node_hash_set.h"
#include "absl/synchronization/mutex.h"

namespace gpuop::kube {
namespace {

// The process-wide pool behind InternedString. node_hash_set keeps element addresses stable.
struct Pool {
  absl::Mutex mu;
  absl::node_hash_set<std::string> strings ABSL_GUARDED_BY(mu);
};

Pool& GlobalPool() {
  static Pool* const pool = new Pool();
  return *pool;
}

std::shared_ptr<const std::string> Unowned(const std::string* s) {
  return std::shared_ptr<const std::string>(std::shared_ptr<void>(), s);
}

}  // namespace

InternedString::InternedString() {
  static const std::string* const empty = new std::string();
  value_ = Unowned(empty);
}

InternedString::InternedString(absl::string_view value) {
  if (value.size() > kMaxInternedSize) {
    value_ = std::make_shared<const std::string>(value);
    return;
  }
  Pool& pool = GlobalPool();
  absl::MutexLock lock(&pool.mu);
  value_ = Unowned(&*pool.strings.emplace(value).first);
}

size_t InternedStringCount() {
  Pool& pool = GlobalPool();
  absl::MutexLock lock(&pool.mu);
  return pool.strings.size();
}

Labels::Labels(const std::map<std::string, std::string>& values) {
  items_.reserve(values.size());
  for (const auto& [k, v] : values) items_.emplace_back(InternedString(k), InternedString(v));
}

Labels Labels::FromJson(const nlohmann::json& object) {
  Labels labels;
  if (!object.is_object()) return labels;
  labels.items_.reserve(object.size());
  for (const auto& [key, value] : object.items()) {
    if (!value.is_string()) continue;
    labels.items_.emplace_back(InternedString(key),
                               InternedString(value.get_ref<const std::string&>()));
  }
  // nlohmann's default object is a std::map, so keys already arrive sorted; sort anyway in case
  // the JSON type changes.
  std::sort(labels.items_.begin(), labels.items_.end());
  return labels;
}

std::optional<absl::string_view> Labels::Get(absl::string_view key) const {
  auto it = std::lower_bound(
      items_.begin(), items_.end(), key,
      [](const auto& item, absl::string_view k) { return absl::string_view(item.first) < k; });
  if (it == items_.end() || absl::string_view(it->first) != key) return std::nullopt;
  return absl::string_view(it->second);
}

std::map<std::string, std::string> Labels::ToMap() const {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : items_) out.emplace(k.str(), v.str());
  return out;
}

nlohmann::json Labels::ToJson() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : items_) out[k.str()] = v.str();
  return out;
}

}  // namespace gpuop::kube
