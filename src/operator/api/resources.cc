#include "operator/api/resources.h"

namespace gpuop::op {

const kube::ResourceType kGpuClusterPolicies = {.group = "gpuop.io",
                                                .version = "v1alpha1",
                                                .plural = "gpuclusterpolicies",
                                                .kind = "GPUClusterPolicy",
                                                .namespaced = false};
const kube::ResourceType kGpuNodePools = {.group = "gpuop.io",
                                          .version = "v1alpha1",
                                          .plural = "gpunodepools",
                                          .kind = "GPUNodePool",
                                          .namespaced = false};
const kube::ResourceType kGpuNodes = {.group = "gpuop.io",
                                      .version = "v1alpha1",
                                      .plural = "gpunodes",
                                      .kind = "GPUNode",
                                      .namespaced = false};
const kube::ResourceType kServices = {
    .group = "", .version = "v1", .plural = "services", .kind = "Service", .namespaced = true};
const kube::ResourceType kServiceMonitors = {.group = "monitoring.coreos.com",
                                             .version = "v1",
                                             .plural = "servicemonitors",
                                             .kind = "ServiceMonitor",
                                             .namespaced = true};

}  // namespace gpuop::op
