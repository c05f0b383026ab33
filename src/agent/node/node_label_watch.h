#ifndef GPUOP_AGENT_NODE_NODE_LABEL_WATCH_H_
#define GPUOP_AGENT_NODE_NODE_LABEL_WATCH_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "kube/client/client.h"
#include "kube/informer/informer.h"

namespace gpuop::agent {

// Follows one label of this node (for example nvidia.com/device-plugin.config) with a watch on
// that Node alone, and calls `on_change` with the new value ("" when the label is removed)
// whenever it changes, starting with its current value.
//
// Thread-safe; `on_change` runs on the watch's thread.
class NodeLabelWatch {
 public:
  NodeLabelWatch(kube::Client& client, std::string node_name, std::string label,
                 std::function<void(const std::string& value)> on_change);
  ~NodeLabelWatch();

  void Start();
  void Stop();
  // Waits (real time) until the Node has been read once.
  bool WaitForSync(absl::Duration timeout) const;

 private:
  std::string label_;
  std::function<void(const std::string&)> on_change_;
  std::unique_ptr<kube::Informer<std::string>> informer_;
};

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_NODE_NODE_LABEL_WATCH_H_
