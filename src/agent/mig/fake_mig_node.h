#ifndef GPUOP_AGENT_MIG_FAKE_MIG_NODE_H_
#define GPUOP_AGENT_MIG_FAKE_MIG_NODE_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "agent/mig/mig_node.h"

namespace gpuop::agent::mig {

// An in-memory MigNode for tests: a Node's labels and annotations, pods on the node with their
// labels and phases, recorded Events and every write, plus hooks and injected failures.
//
// Thread-safe. Hooks run without the fake's lock held, so they may call back into it.
class FakeMigNode final : public MigNode {
 public:
  struct Pod {
    std::string key;  // "namespace/name"
    std::map<std::string, std::string> labels;
    std::string phase = "Running";
  };
  struct Event {
    kube::EventType type;
    std::string reason;
    std::string note;
  };
  struct Write {
    MetaChanges labels;
    MetaChanges annotations;
  };

  explicit FakeMigNode(std::string name = "gpu-node-1") : name_(std::move(name)) {}

  const std::string& name() const override { return name_; }
  [[nodiscard]] absl::StatusOr<NodeMeta> Get() override;
  [[nodiscard]] absl::Status Patch(const MetaChanges& labels,
                                   const MetaChanges& annotations) override;
  // Supports selectors of equality terms "k=v", "k==v", "k!=v" and existence "k", "!k".
  [[nodiscard]] absl::StatusOr<std::vector<std::string>> ActivePods(
      const std::string& label_selector) override;
  void RecordEvent(kube::EventType type, const std::string& reason,
                   const std::string& note) override;
  void Watch(std::function<void()> on_change) override;
  void StopWatching() override;

  // Test controls.
  void SetLabel(const std::string& key, const std::string& value);
  void RemoveLabel(const std::string& key);
  void SetAnnotation(const std::string& key, const std::string& value);
  void RemoveAnnotation(const std::string& key);
  NodeMeta meta() const;
  std::optional<std::string> label(const std::string& key) const;
  std::optional<std::string> annotation(const std::string& key) const;
  void AddPod(Pod pod);
  void RemovePods(const std::string& label_key, const std::string& label_value);
  std::vector<Write> writes() const;
  std::vector<Event> events() const;
  int pod_lists() const;
  // The next `count` calls of each kind fail with `status` (count < 0: until changed).
  void FailGets(absl::Status status, int count = -1);
  void FailPatches(absl::Status status, int count = -1);
  void FailPodLists(absl::Status status, int count = -1);
  // Runs after every successful Patch (a DaemonSet controller removing paused pods) and before
  // every pod list (a test moving its fake clock).
  void OnPatch(std::function<void(FakeMigNode&)> hook);
  void OnPodList(std::function<void(FakeMigNode&)> hook);

 private:
  struct Failure {
    absl::Status status;
    int left = 0;
    absl::Status Take();
  };
  void Notify();

  const std::string name_;
  mutable absl::Mutex mu_;
  NodeMeta meta_ ABSL_GUARDED_BY(mu_);
  std::vector<Pod> pods_ ABSL_GUARDED_BY(mu_);
  std::vector<Write> writes_ ABSL_GUARDED_BY(mu_);
  std::vector<Event> events_ ABSL_GUARDED_BY(mu_);
  int pod_lists_ ABSL_GUARDED_BY(mu_) = 0;
  Failure get_failure_ ABSL_GUARDED_BY(mu_);
  Failure patch_failure_ ABSL_GUARDED_BY(mu_);
  Failure list_failure_ ABSL_GUARDED_BY(mu_);
  std::function<void(FakeMigNode&)> on_patch_ ABSL_GUARDED_BY(mu_);
  std::function<void(FakeMigNode&)> on_pod_list_ ABSL_GUARDED_BY(mu_);
  std::function<void()> on_change_ ABSL_GUARDED_BY(mu_);
};

// Whether `labels` match the selector (the subset FakeMigNode supports).
bool MatchesSelector(const std::map<std::string, std::string>& labels, const std::string& selector);

}  // namespace gpuop::agent::mig

#endif  // GPUOP_AGENT_MIG_FAKE_MIG_NODE_H_
