#ifndef GPUOP_KUBE_INFORMER_INFORMER_H_
#define GPUOP_KUBE_INFORMER_INFORMER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "kube/informer/reflector.h"
#include "kube/informer/store.h"

namespace gpuop::kube {

// Event handlers of an informer. Each is optional. They run on the informer's thread, in the
// order the changes happened, after the store already reflects the change; they must be quick
// (typically: enqueue a key).
template <typename T>
struct InformerHandlers {
  std::function<void(const T& object)> on_add;
  std::function<void(const T& old_object, const T& new_object)> on_update;
  std::function<void(const T& object)> on_delete;
};

// A list+watch cache of one resource type, kept in a Store<T>. `transform` turns each JSON object
// into the T the controllers need; keeping only the fields they use is what keeps 5,000 Nodes
// small. Objects the transform rejects are left out of the store and counted.
//
// Lifecycle: construct, AddIndex()/AddHandlers(), Start(), read store() any time, Stop() (or
// destroy). Thread-safe after Start().
template <typename T>
class Informer final : private ReflectorSink {
 public:
  using Transform = std::function<absl::StatusOr<T>(const Json& object)>;

  Informer(Client& client, ResourceType type, ReflectorOptions options, Transform transform)
      : reflector_(client, std::move(type), std::move(options), *this),
        transform_(std::move(transform)) {}
  ~Informer() override { Stop(); }

  void AddIndex(const std::string& name, typename Store<T>::IndexFunc func) {
    store_.AddIndex(name, std::move(func));
  }
  void AddHandlers(InformerHandlers<T> handlers) { handlers_.push_back(std::move(handlers)); }

  void Start() {
    thread_ = std::jthread([this](std::stop_token stop) { reflector_.Run(stop); });
  }
  void Stop() {
    if (thread_.joinable()) {
      thread_.request_stop();
      thread_.join();
    }
  }

  // True once the first list has been stored and its add handlers have run.
  bool HasSynced() const { return synced_.load(); }
  // Blocks until HasSynced() or `timeout` (real time) passes; returns HasSynced().
  bool WaitForSync(absl::Duration timeout) const {
    absl::MutexLock lock(&sync_mu_);
    auto synced = [this] { return synced_.load(); };
    sync_mu_.AwaitWithTimeout(absl::Condition(&synced), timeout);
    return synced_.load();
  }

  const Store<T>& store() const { return store_; }
  const Reflector& reflector() const { return reflector_; }
  // Objects the transform rejected.
  int64_t rejected() const { return rejected_.load(); }

 private:
  static std::string VersionOf(const Json& object) {
    const Json& meta = object.value("metadata", Json::object());
    return meta.value("resourceVersion", "");
  }

  // Stores the object; fires add or update. Returns false when the transform rejected it.
  bool Put(const Json& object) {
    std::string key = ObjectKey(object);
    absl::StatusOr<T> typed = transform_(object);
    if (!typed.ok()) {
      // A stale copy would be worse than none.
      rejected_.fetch_add(1);
      Remove(key);
      return false;
    }
    auto ptr = std::make_shared<const T>(*std::move(typed));
    auto old = store_.Upsert(key, ptr, VersionOf(object));
    for (const auto& h : handlers_) {
      if (old && h.on_update) h.on_update(*old, *ptr);
      if (!old && h.on_add) h.on_add(*ptr);
    }
    return true;
  }

  void Remove(const std::string& key) {
    auto old = store_.Erase(key);
    if (!old) return;
    for (const auto& h : handlers_) {
      if (h.on_delete) h.on_delete(*old);
    }
  }

  void Replace(std::vector<Json> items, const std::string&) override {
    absl::flat_hash_set<std::string> seen;
    seen.reserve(items.size());
    for (Json& item : items) {
      std::string key = ObjectKey(item);
      // Unchanged objects keep their stored copy and fire nothing, so a relist after a
      // disconnect costs handlers only for what really changed.
      const std::string version = VersionOf(item);
      if (version.empty() || store_.ResourceVersion(key) != version) Put(item);
      seen.insert(std::move(key));
      item = Json();  // Free as we go: the list can be large.
    }
    for (const auto& key : store_.Keys()) {
      if (!seen.contains(key)) Remove(key);
    }
    if (!synced_.exchange(true)) {
      absl::MutexLock lock(&sync_mu_);  // Wakes WaitForSync.
    }
  }

  void Apply(WatchEventType type, Json object) override {
    if (type == WatchEventType::kDeleted) {
      Remove(ObjectKey(object));
    } else {
      Put(object);
    }
  }

  Store<T> store_;
  Reflector reflector_;
  Transform transform_;
  std::vector<InformerHandlers<T>> handlers_;
  std::atomic<bool> synced_{false};
  mutable absl::Mutex sync_mu_;
  std::atomic<int64_t> rejected_{0};
  std::jthread thread_;
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_INFORMER_INFORMER_H_
