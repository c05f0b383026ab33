#ifndef GPUOP_OPERATOR_CRDS_CRDS_H_
#define GPUOP_OPERATOR_CRDS_CRDS_H_

#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kube/client/client.h"

namespace gpuop::op {

// gpuop's CustomResourceDefinitions, compiled in from deploy/helm/gpuop/crds/ (the chart and the
// operator ship the same definitions).
const std::vector<nlohmann::json>& Crds();

// Applies the CRDs with server-side apply (creating or upgrading them: Helm installs CRDs but
// never upgrades them) and waits until each is Established. `timeout` bounds the wait.
[[nodiscard]] absl::Status InstallCrds(kube::Client& client, absl::Duration timeout);

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_CRDS_CRDS_H_
