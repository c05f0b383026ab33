#ifndef GPUOP_AGENT_MIG_CLIENT_PAUSE_H_
#define GPUOP_AGENT_MIG_CLIENT_PAUSE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/mig/mig_node.h"

namespace gpuop::agent::mig {

// Pausing the GPU clients (every component that opens the driver) around a MIG change: their
// deploy labels on this node are set to kPausedValue, which makes the operator remove their pods
// from the node, and set back afterwards. The values the labels had are kept in an annotation on
// the Node itself (kPauseRecordAnnotation), written in the same patch as the paused labels, so an
// agent that restarts mid-change restores the exact values, never "paused" ones.
//
// Pure functions computing the writes; the MIG manager performs them.

inline constexpr char kPausedValue[] = "paused-for-mig-change";
inline constexpr char kPauseRecordAnnotation[] = "gpuop.io/mig.paused-labels";

struct PausedComponent {
  std::string label;         // the deploy label: "gpuop.io/deploy.device-plugin"
  std::string pod_selector;  // its pods: "app.kubernetes.io/component=device-plugin"; "" = none
  // Paused only when the node carries the label at another value than "false" (another
  // operator's clients): a node without them gets no label of theirs.
  bool only_when_present = false;
};

// Every client that holds the GPUs and so would block the GPU reset a MIG mode change needs:
// gpuop's CDI, labels, device plugin, health, exporter, validator, power manager and MPS daemons
// (the operator's DaemonSets, by their selectors), and the clients NVIDIA's mig-manager pauses
// through their nvidia.com/gpu.deploy.* labels (device plugin, GPU feature discovery,
// dcgm-exporter, DCGM, NVSM) where the node has those labels.
std::vector<PausedComponent> DefaultPausedComponents();

// Label -> the value it had before the pause; nullopt when it was absent (restored by removing).
using PauseRecord = std::map<std::string, std::optional<std::string>>;

// The record as the annotation stores it: a JSON object of strings and nulls.
std::string EncodePauseRecord(const PauseRecord& record);
// InvalidArgument when `text` is not such an object.
[[nodiscard]] absl::StatusOr<PauseRecord> DecodePauseRecord(absl::string_view text);

struct NodeWrite {
  MetaChanges labels;
  MetaChanges annotations;
  bool empty() const { return labels.empty() && annotations.empty(); }
};

// Whether the node carries a pause: a record, or a component label with kPausedValue.
bool IsPaused(const NodeMeta& meta, const std::vector<PausedComponent>& components);

// The write that pauses `components`. A record already on the node is kept (it holds the values
// from before an interrupted change; the labels now say "paused"); components it lacks are
// added. A label found paused without a record entry is recorded as `fallback` (the value the
// operator deploys with, "true"), since its real previous value is lost. Empty when the node is
// already fully paused.
NodeWrite PauseWrite(const NodeMeta& meta, const std::vector<PausedComponent>& components,
                     const std::string& fallback);

// The write that undoes the pause: each recorded label whose value is still kPausedValue goes
// back to its recorded value (removed when it was absent); a label somebody changed meanwhile
// is left as they set it. Component labels paused with no (readable) record go to `fallback`.
// The record is removed. Empty when nothing is paused.
NodeWrite RestoreWrite(const NodeMeta& meta, const std::vector<PausedComponent>& components,
                       const std::string& fallback);

// `meta` with `write` applied, as the server would.
void ApplyWrite(const NodeWrite& write, NodeMeta& meta);

}  // namespace gpuop::agent::mig

#endif  // GPUOP_AGENT_MIG_CLIENT_PAUSE_H_
