#ifndef GPUOP_OPERATOR_NODES_STARTUP_TAINT_H_
#define GPUOP_OPERATOR_NODES_STARTUP_TAINT_H_

#include <optional>

#include <nlohmann/json.hpp>

#include "kube/types/node.h"
#include "operator/api/policy.h"

namespace gpuop::op {

// GPU readiness for autoscalers. A GPU node group registers its nodes with a NoSchedule taint
// (the kubelet's --register-with-taints, Karpenter's startupTaints, a cloud node pool's
// taints); the operator removes it once the node's GPU stack validated, so that no GPU pod lands
// on a node whose GPUs cannot run it yet, and the autoscaler, which ignores startup taints when
// it simulates a new node, neither over-provisions nor removes the node meanwhile.
//
// cluster-autoscaler treats every taint whose key starts with its prefix
// startup-taint.cluster-autoscaler.kubernetes.io/ as a startup taint, with no flag;
// kStartupTaintKey is for Karpenter's startupTaints and cluster-autoscaler's --startup-taint.
inline constexpr char kStartupTaintKey[] = "gpuop.io/gpu-not-ready";
inline constexpr char kAutoscalerStartupTaintKey[] =
    "startup-taint.cluster-autoscaler.kubernetes.io/gpuop-gpu-not-ready";

// Whether `node` carries either startup taint.
bool HasStartupTaint(const kube::Node& node);

// Whether the GPU stack on `node` is ready for work: the validator's GPUValidated condition is
// True where the policy runs the validator; without it, the node advertises a GPU resource
// (nvidia.com/... or amd.com/gpu allocatable above zero).
bool GpuStackReady(const kube::Node& node, const PolicySpec& policy);

// The merge patch that removes both startup taints and keeps every other taint, with the Node's
// resourceVersion so that it fails (409) rather than drop a taint someone added meanwhile;
// nullopt when the node carries neither.
std::optional<nlohmann::json> StartupTaintRemoval(const kube::Node& node);

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_NODES_STARTUP_TAINT_H_
