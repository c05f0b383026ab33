# Versions of the test control plane, and of helm (which renders and lints the chart). The Go
# modules beside this file pin the same versions; change both together.
KUBE_VERSION=v1.36.3
ETCD_VERSION=v3.6.8
KWOK_VERSION=v0.8.0
HELM_VERSION=v3.22.0
# The real node of the `node` test profile: the kubelet comes from the same k8s.io/kubernetes
# module as the control plane. containerd v2.2.9 is the newest patch of the 2.2 line, the line
# checked on these machines (reference/real-node.md): CDI is on by default there and cgroup v1,
# which these machines have, still works (with a deprecation warning). crictl is for debugging.
CONTAINERD_VERSION=v2.2.9
CRICTL_VERSION=v1.37.0
GO_MIN=1.26.0

control_plane_key() { echo "kube-$KUBE_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"; }

# The node binaries (kubelet, containerd, ctr, containerd-shim-runc-v2, crictl) live in a
# directory of their own, keyed by their versions, so a containerd bump does not rebuild the
# control plane.
node_key() { echo "node-kube-$KUBE_VERSION-containerd-$CONTAINERD_VERSION-crictl-$CRICTL_VERSION"; }

# Where scripts and tests take these binaries from, as DefaultBinDir() in
# test/cluster/control_plane.cc: $GPUOP_CONTROL_PLANE_BIN, else $GPUOP_CACHE/bin/<key>.
control_plane_bin_dir() {
  if [[ -n ${GPUOP_CONTROL_PLANE_BIN:-} ]]; then echo "$GPUOP_CONTROL_PLANE_BIN"; return; fi
  echo "${GPUOP_CACHE:-${HOME:-/root}/.cache/gpuop}/bin/$(control_plane_key)"
}

# As DefaultNodeBinDir() in test/cluster/node.cc: $GPUOP_NODE_BIN, else $GPUOP_CACHE/bin/<key>.
node_bin_dir() {
  if [[ -n ${GPUOP_NODE_BIN:-} ]]; then echo "$GPUOP_NODE_BIN"; return; fi
  echo "${GPUOP_CACHE:-${HOME:-/root}/.cache/gpuop}/bin/$(node_key)"
}
