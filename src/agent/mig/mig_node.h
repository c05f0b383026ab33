#ifndef GPUOP_AGENT_MIG_MIG_NODE_H_
#define GPUOP_AGENT_MIG_MIG_NODE_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/node/node_label_watch.h"
#include "kube/client/client.h"
#include "kube/events/event.h"
#include "kube/events/event_recorder.h"

namespace gpuop::agent::mig {

// This node's labels and annotations.
struct NodeMeta {
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
};

// Keys to set (a value) or remove (nullopt).
using MetaChanges = std::map<std::string, std::optional<std::string>>;

// Everything the MIG manager needs from Kubernetes, about its own node: a small interface so the
// controller is tested against FakeMigNode and wired to the API server by KubeMigNode.
class MigNode {
 public:
  virtual ~MigNode() = default;

  virtual const std::string& name() const = 0;
  // The Node's current labels and annotations (a fresh read, not a cache).
  [[nodiscard]] virtual absl::StatusOr<NodeMeta> Get() = 0;
  // Changes labels and annotations in one write, so they never disagree on the server.
  [[nodiscard]] virtual absl::Status Patch(const MetaChanges& labels,
                                           const MetaChanges& annotations) = 0;
  // The pods on this node that match `label_selector` ("app=x,tier=y") and have not finished
  // (phase other than Succeeded and Failed; terminating pods count), as "namespace/name".
  [[nodiscard]] virtual absl::StatusOr<std::vector<std::string>> ActivePods(
      const std::string& label_selector) = 0;
  // Records an Event about the Node. Never blocks on the API server.
  virtual void RecordEvent(kube::EventType type, const std::string& reason,
                           const std::string& note) = 0;
  // Calls `on_change` (on another thread) whenever the MIG config label may have changed, and
  // once at the start. One watcher at a time.
  virtual void Watch(std::function<void()> on_change) = 0;
  virtual void StopWatching() = 0;
};

// MigNode on the API server: reads with GET, writes with a JSON merge patch (field manager
// "gpuop-agent-mig"), lists pods with the field selector spec.nodeName=<node>, follows the
// label with NodeLabelWatch and records Events through an EventRecorder (none when null).
//
// RBAC: nodes get/list/watch/patch; pods list (in `pod_namespace`, or cluster-wide when empty);
// events.k8s.io events create/patch.
//
// Thread-safe, except Watch and StopWatching, which one owner calls. `client` and `recorder`
// must outlive it.
class KubeMigNode final : public MigNode {
 public:
  static constexpr char kFieldManager[] = "gpuop-agent-mig";

  KubeMigNode(kube::Client& client, std::string node_name, std::string watched_label,
              kube::EventRecorder* recorder = nullptr, std::string pod_namespace = "");
  ~KubeMigNode() override;

  const std::string& name() const override { return node_name_; }
  [[nodiscard]] absl::StatusOr<NodeMeta> Get() override;
  [[nodiscard]] absl::Status Patch(const MetaChanges& labels,
                                   const MetaChanges& annotations) override;
  [[nodiscard]] absl::StatusOr<std::vector<std::string>> ActivePods(
      const std::string& label_selector) override;
  void RecordEvent(kube::EventType type, const std::string& reason,
                   const std::string& note) override;
  void Watch(std::function<void()> on_change) override;
  void StopWatching() override;

 private:
  kube::Client& client_;
  const std::string node_name_;
  const std::string watched_label_;
  kube::EventRecorder* const recorder_;
  const std::string pod_namespace_;
  absl::Mutex mu_;
  std::string uid_ ABSL_GUARDED_BY(mu_);  // for Event references, from the latest Get
  std::unique_ptr<NodeLabelWatch> watch_;
};

}  // namespace gpuop::agent::mig

#endif  // GPUOP_AGENT_MIG_MIG_NODE_H_
