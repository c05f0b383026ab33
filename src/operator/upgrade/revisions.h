#ifndef GPUOP_OPERATOR_UPGRADE_REVISIONS_H_
#define GPUOP_OPERATOR_UPGRADE_REVISIONS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "kube/client/client.h"
#include "kube/types/daemon_set.h"

namespace gpuop::op::upgrade {

// apps/v1 ControllerRevisions: the DaemonSet controller keeps one per pod template a DaemonSet
// has had; the newest (highest .revision) is the template new pods get, and its
// controller-revision-hash label is the one those pods carry.
extern const kube::ResourceType kControllerRevisions;

// The update revision of DaemonSet `ds_name` (uid `ds_uid`) among `revisions`: the
// controller-revision-hash of the ControllerRevision it controls with the highest .revision
// (the name's suffix after "<ds_name>-" when the label is missing); nullopt when it controls
// none. Pure.
std::optional<std::string> LatestRevisionHash(const std::vector<kube::Json>& revisions,
                                              const std::string& ds_name,
                                              const std::string& ds_uid);

// Finds the update revision of gpuop's driver DaemonSets. A DaemonSet's status does not carry
// it, so it is read from the ControllerRevisions, listed only when a DaemonSet has changed
// (uid, generation) since the last answer found one: steady state costs no API calls.
//
// Thread-safe.
class RevisionResolver {
 public:
  // `selector` picks the driver ControllerRevisions in `ns` (they carry the pod template's
  // labels).
  RevisionResolver(kube::Client& client, std::string ns, std::string selector)
      : client_(client), ns_(std::move(ns)), selector_(std::move(selector)) {}

  // The update revision of `ds`; nullopt while its controller has not yet observed its latest
  // spec (status.observedGeneration < metadata.generation), when the new revision may not exist
  // yet. Errors are the List's.
  [[nodiscard]] absl::StatusOr<std::optional<std::string>> UpdateRevision(
      const kube::DaemonSet& ds);

 private:
  struct Known {
    std::string uid;
    int64_t generation = 0;
    std::string hash;
  };

  kube::Client& client_;
  const std::string ns_;
  const std::string selector_;
  absl::Mutex mu_;
  std::map<std::string, Known> known_ ABSL_GUARDED_BY(mu_);  // by DaemonSet name
};

}  // namespace gpuop::op::upgrade

#endif  // GPUOP_OPERATOR_UPGRADE_REVISIONS_H_
