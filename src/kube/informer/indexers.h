#ifndef GPUOP_KUBE_INFORMER_INDEXERS_H_
#define GPUOP_KUBE_INFORMER_INDEXERS_H_

#include <string>
#include <vector>

#include "kube/informer/store.h"
#include "kube/types/pod.h"

namespace gpuop::kube {

// Index functions for Store<T>::AddIndex, for any T with an ObjectMeta `metadata`.

inline constexpr char kNamespaceIndex[] = "namespace";
inline constexpr char kNodeNameIndex[] = "spec.nodeName";

template <typename T>
typename Store<T>::IndexFunc IndexByNamespace() {
  return [](const T& object) { return std::vector<std::string>{object.metadata.namespace_}; };
}

// Objects by the value of one label; objects without it are not indexed.
template <typename T>
typename Store<T>::IndexFunc IndexByLabel(std::string key) {
  return [key = std::move(key)](const T& object) {
    auto value = object.metadata.labels.Get(key);
    return value ? std::vector<std::string>{std::string(*value)} : std::vector<std::string>{};
  };
}

// Pods by the node they are bound to; pending pods are not indexed.
inline Store<Pod>::IndexFunc IndexPodsByNode() {
  return [](const Pod& pod) {
    return pod.node_name.empty() ? std::vector<std::string>{}
                                 : std::vector<std::string>{pod.node_name};
  };
}

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_INFORMER_INDEXERS_H_
