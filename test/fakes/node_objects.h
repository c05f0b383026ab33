#ifndef GPUOP_TEST_FAKES_NODE_OBJECTS_H_
#define GPUOP_TEST_FAKES_NODE_OBJECTS_H_

#include <string>

#include <nlohmann/json.hpp>

namespace gpuop::fakes {

// A Node object shaped like one from a real GPU cluster: about 40 labels (well-known, cloud,
// node-feature-discovery and GPU feature discovery), kubeadm and gpuop annotations, taints,
// managedFields, five conditions, addresses, capacity and allocatable with GPUs, nodeInfo and
// 30 container images. `index` varies the name, the addresses and some label values.
nlohmann::json RealisticGpuNode(int index);

// The same Node in the form kwok-managed test nodes are created in (no managedFields, no uid
// or resourceVersion), annotated for kwok.
nlohmann::json KwokGpuNode(const std::string& name, int gpus);

}  // namespace gpuop::fakes

#endif  // GPUOP_TEST_FAKES_NODE_OBJECTS_H_
