#ifndef GPUOP_KUBE_INFORMER_STORE_H_
#define GPUOP_KUBE_INFORMER_STORE_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace gpuop::kube {

// A thread-safe cache of objects by key ("namespace/name" or "name") with secondary indexes.
// Objects are immutable once stored and shared: readers get shared_ptr<const T> and may keep it
// after the store has moved on.
template <typename T>
class Store {
 public:
  using Ptr = std::shared_ptr<const T>;
  // The index values of an object (for example its node name, or one label's value).
  using IndexFunc = std::function<std::vector<std::string>(const T&)>;

  // Adds an index. Must be called before the first object is stored.
  void AddIndex(const std::string& name, IndexFunc func) {
    absl::MutexLock lock(&mu_);
    indexes_[name].func = std::move(func);
  }

  Ptr Get(absl::string_view key) const {
    absl::MutexLock lock(&mu_);
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second.object;
  }

  std::vector<Ptr> List() const {
    absl::MutexLock lock(&mu_);
    std::vector<Ptr> out;
    out.reserve(items_.size());
    for (const auto& [key, entry] : items_) out.push_back(entry.object);
    return out;
  }

  std::vector<std::string> Keys() const {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    out.reserve(items_.size());
    for (const auto& [key, entry] : items_) out.push_back(key);
    return out;
  }

  // Objects whose index `index` has the value `value`; empty for an unknown index.
  std::vector<Ptr> ByIndex(absl::string_view index, absl::string_view value) const {
    absl::MutexLock lock(&mu_);
    std::vector<Ptr> out;
    auto idx = indexes_.find(std::string(index));
    if (idx == indexes_.end()) return out;
    auto keys = idx->second.values.find(std::string(value));
    if (keys == idx->second.values.end()) return out;
    for (const auto& key : keys->second) out.push_back(items_.at(key).object);
    return out;
  }

  size_t size() const {
    absl::MutexLock lock(&mu_);
    return items_.size();
  }

  // Stores `object` under `key` with its resourceVersion; returns the object it replaced.
  Ptr Upsert(const std::string& key, Ptr object, std::string resource_version) {
    absl::MutexLock lock(&mu_);
    Entry& entry = items_[key];
    Ptr old = std::move(entry.object);
    if (old) Unindex(key, *old);
    entry.object = std::move(object);
    entry.resource_version = std::move(resource_version);
    Index(key, *entry.object);
    return old;
  }

  // Removes `key`; returns the removed object or null.
  Ptr Erase(absl::string_view key) {
    absl::MutexLock lock(&mu_);
    auto it = items_.find(key);
    if (it == items_.end()) return nullptr;
    Ptr old = std::move(it->second.object);
    Unindex(it->first, *old);
    items_.erase(it);
    return old;
  }

  // The stored resourceVersion of `key`, or "" when absent.
  std::string ResourceVersion(absl::string_view key) const {
    absl::MutexLock lock(&mu_);
    auto it = items_.find(key);
    return it == items_.end() ? std::string() : it->second.resource_version;
  }

 private:
  struct Entry {
    Ptr object;
    std::string resource_version;
  };
  struct IndexState {
    IndexFunc func;
    std::map<std::string, std::set<std::string>> values;
  };

  void Index(const std::string& key, const T& object) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (auto& [name, index] : indexes_) {
      for (auto& value : index.func(object)) index.values[std::move(value)].insert(key);
    }
  }

  void Unindex(const std::string& key, const T& object) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (auto& [name, index] : indexes_) {
      for (const auto& value : index.func(object)) {
        auto it = index.values.find(value);
        if (it == index.values.end()) continue;
        it->second.erase(key);
        if (it->second.empty()) index.values.erase(it);
      }
    }
  }

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> items_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, IndexState> indexes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_INFORMER_STORE_H_
