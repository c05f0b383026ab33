# Versions of the test control plane, and of helm (which renders and lints the chart). The Go
# modules beside this file pin the same versions; change both together.
KUBE_VERSION=v1.36.3
ETCD_VERSION=v3.6.8
KWOK_VERSION=v0.8.0
HELM_VERSION=v3.22.0
GO_MIN=1.26.0

control_plane_key() { echo "kube-$KUBE_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"; }

# Where scripts and tests take these binaries from, as DefaultBinDir() in
# test/cluster/control_plane.cc: $GPUOP_CONTROL_PLANE_BIN, else $GPUOP_CACHE/bin/<key>.
control_plane_bin_dir() {
  if [[ -n ${GPUOP_CONTROL_PLANE_BIN:-} ]]; then echo "$GPUOP_CONTROL_PLANE_BIN"; return; fi
  echo "${GPUOP_CACHE:-${HOME:-/root}/.cache/gpuop}/bin/$(control_plane_key)"
}
