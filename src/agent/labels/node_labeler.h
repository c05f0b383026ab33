#ifndef GPUOP_AGENT_LABELS_NODE_LABELER_H_
#define GPUOP_AGENT_LABELS_NODE_LABELER_H_

#include <string>

#include "absl/status/status.h"
#include "agent/labels/labels.h"
#include "kube/client/client.h"

namespace gpuop::agent {

// Keeps a Node's GPU labels equal to the last computed set, with server-side apply under its
// own field manager: only the keys gpuop applies change, keys it applied before and no longer
// computes are removed by the API server, and labels of every other manager are left alone.
//
// Thread-compatible: one owner calls Apply.
class NodeLabeler {
 public:
  static constexpr char kFieldManager[] = "gpuop-agent-labels";

  NodeLabeler(kube::Client& client, std::string node_name)
      : client_(client), node_name_(std::move(node_name)) {}

  // Applies `labels` (and `annotations`) unless they equal what was last applied successfully
  // (repeated triggers cost no request). Force takes keys another manager set to other values:
  // the node's hardware is the truth for these keys.
  [[nodiscard]] absl::Status Apply(const NodeLabels& labels, const NodeLabels& annotations = {});

  // Requests made to the API server so far.
  int applies() const { return applies_; }

 private:
  kube::Client& client_;
  std::string node_name_;
  std::optional<std::pair<NodeLabels, NodeLabels>> last_;
  int applies_ = 0;
};

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_LABELS_NODE_LABELER_H_
