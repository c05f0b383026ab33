#ifndef GPUOP_OPERATOR_API_RESOURCES_H_
#define GPUOP_OPERATOR_API_RESOURCES_H_

#include "kube/client/resource.h"

namespace gpuop::op {

// gpuop's own resources (gpuop.io/v1alpha1, all cluster-scoped).
extern const kube::ResourceType kGpuClusterPolicies;
extern const kube::ResourceType kGpuNodePools;
extern const kube::ResourceType kGpuNodes;

// Other kinds the operator renders for the exporter: the core Service, and the Prometheus
// Operator's ServiceMonitor (monitoring.coreos.com/v1, served only where its CRDs are installed).
extern const kube::ResourceType kServices;
extern const kube::ResourceType kServiceMonitors;

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_API_RESOURCES_H_
