#!/usr/bin/env bash
# deploy.manifests-apply: the plain manifests install on a real API server, and the operator's
# ServiceAccount can do what the operator does and nothing it must not:
#   1. CRDs from the chart, wait until Established, then deploy/manifests/gpuop.yaml;
#   2. the Deployment, RBAC and the default GPUClusterPolicy exist (with the CRD's defaults);
#   3. `kubectl auth can-i` as the operator: yes and no where expected;
#   4. as the operator, server-side apply everything it renders for the "pools" golden file
#      (every component): RBAC lets it create and bind the components' ClusterRoles with neither
#      escalate nor bind; and it is refused a ClusterRole that grants more than it holds.
# Usage: manifests_apply.sh REPO_ROOT GPUOP_TEST_CLUSTER_BINARY
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cluster_bin=${2:?usage: $0 REPO_ROOT GPUOP_TEST_CLUSTER_BINARY}
[[ -x $cluster_bin ]] || fail "$cluster_bin is not built (ninja gpuop-test-cluster)"
kubectl=$(tool kubectl)
operator=system:serviceaccount:gpuop-system:gpuop-operator

work=$(mktemp -d)
cp_pid=
stop() {
  if [[ -n $cp_pid ]]; then
    kill -TERM "$cp_pid" 2>/dev/null || true
    wait "$cp_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap stop EXIT
# timeout bounds the control plane's life should this script be killed without its trap.
timeout --signal=TERM --kill-after=15 600 "$cluster_bin" --profile apiserver >"$work/cluster.log" 2>&1 &
cp_pid=$!
kubeconfig=
deadline=$((SECONDS + 150))
while [[ -z $kubeconfig ]]; do
  kill -0 "$cp_pid" 2>/dev/null || fail "the control plane exited:\n$(cat "$work/cluster.log")"
  ((SECONDS < deadline)) || fail "the control plane was not ready in 150 s:\n$(cat "$work/cluster.log")"
  sleep 0.2
  kubeconfig=$(sed -n 's/^export KUBECONFIG=//p' "$work/cluster.log")
done
k() { "$kubectl" --kubeconfig "$kubeconfig" "$@"; }

# 1. Install.
k apply --server-side -f "$chart/crds/" >/dev/null || fail "applying the CRDs failed"
k wait --for=condition=Established --timeout=60s crd/gpuclusterpolicies.gpuop.io \
  crd/gpunodepools.gpuop.io crd/gpunodes.gpuop.io >/dev/null || fail "the CRDs were not Established"
out=$(k apply --server-side -f "$root/deploy/manifests/gpuop.yaml" 2>&1) ||
  fail "kubectl apply --server-side -f deploy/manifests/gpuop.yaml failed:\n$out"

# 2. What it created.
for object in namespace/gpuop-system serviceaccount/gpuop-operator deployment/gpuop-operator \
    role/gpuop-operator rolebinding/gpuop-operator service/gpuop-operator-metrics \
    clusterrole/gpuop-operator clusterrolebinding/gpuop-operator gpuclusterpolicy/default; do
  k get -n gpuop-system "$object" -o name >/dev/null || fail "$object was not created"
done
# The API server took the policy and filled in the CRD's defaults.
got=$(k get gpuclusterpolicy default \
  -o jsonpath='{.spec.driver.version} {.spec.components.devicePlugin.migStrategy} {.spec.image}')
[[ $got == "570.86.15 single ghcr.io/gpuop/gpuop:0.1.0" ]] || fail "the default policy reads '$got'"
got=$(k get -n gpuop-system deployment/gpuop-operator \
  -o jsonpath='{.spec.template.spec.serviceAccountName} {.spec.template.spec.containers[0].securityContext.privileged}')
[[ $got == "gpuop-operator false" ]] || fail "the Deployment reads '$got'"

# 3. can-i as the operator. The flags after the verb are kubectl's (-A: any namespace).
can() {  # EXPECTED ARGS...
  local expected=$1 got
  shift
  got=$(k auth can-i --as="$operator" "$@" 2>/dev/null) || true
  [[ $got == "$expected" ]] || fail "can the operator $*? '$got', expected '$expected'"
  echo "operator can $*: $got"
}
can yes patch nodes
can yes update nodes
can yes create pods --subresource=eviction -A
can yes delete pods -A
can yes list jobs.batch -A
can yes list poddisruptionbudgets.policy -A
can yes create gpunodes.gpuop.io
can yes patch gpuclusterpolicies.gpuop.io --subresource=status
can yes create customresourcedefinitions.apiextensions.k8s.io
can yes patch customresourcedefinitions.apiextensions.k8s.io/gpunodes.gpuop.io
can yes create daemonsets.apps -n gpuop-system
can yes update leases.coordination.k8s.io/gpuop-operator -n gpuop-system
can yes patch clusterroles.rbac.authorization.k8s.io/gpuop-health
can no create secrets -n gpuop-system
can no get secrets -n gpuop-system
can no get secrets -A
can no list secrets -A
can no delete nodes
can no create daemonsets.apps -n default
can no patch customresourcedefinitions.apiextensions.k8s.io/foos.example.com
can no patch clusterroles.rbac.authorization.k8s.io/admin
can no escalate clusterroles.rbac.authorization.k8s.io
can no bind clusterroles.rbac.authorization.k8s.io
can no impersonate serviceaccounts -A
can no update leases.coordination.k8s.io/other -n gpuop-system

# 4. Everything the operator renders, applied as the operator (its golden file with every
# component, moved to this namespace). The ServiceMonitor needs the Prometheus Operator's CRD:
# a stand-in with its group, version, kind and scope and an open schema (what is checked here is
# the operator's RBAC and the object's kind, not the Prometheus Operator's validation).
cat >"$work/servicemonitor-crd.yaml" <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
YAML
k apply -f "$work/servicemonitor-crd.yaml" >/dev/null || fail "the stand-in ServiceMonitor CRD"
k wait --for=condition=Established crd/servicemonitors.monitoring.coreos.com --timeout=60s \
  >/dev/null || fail "the stand-in ServiceMonitor CRD is not Established"
can yes create services -n gpuop-system
can yes create servicemonitors.monitoring.coreos.com -n gpuop-system
can no create servicemonitors.monitoring.coreos.com -n default
{
  printf '{"apiVersion": "v1", "kind": "List", "items": '
  sed 's/"gpu-operators"/"gpuop-system"/g' "$root/src/operator/render/testdata/pools.json"
  printf '}\n'
} >"$work/operands.json"
out=$(k apply --server-side --field-manager=gpuop-operator --as="$operator" \
  -f "$work/operands.json" 2>&1) || fail "the operator could not apply what it renders:\n$out"
k get clusterrolebinding gpuop-mig-manager -o name >/dev/null || fail "gpuop-mig-manager binding missing"
# Pruning: the operator deletes what it no longer renders.
out=$(k delete --as="$operator" -n gpuop-system daemonset/gpuop-power-manager \
  clusterrolebinding/gpuop-mig-manager clusterrole/gpuop-mig-manager 2>&1) ||
  fail "the operator could not delete its own objects:\n$out"
# RBAC refuses it a role that grants more than it holds.
cat >"$work/greedy.yaml" <<'YAML'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: gpuop-health
rules:
  - apiGroups: [""]
    resources: [secrets]
    verbs: [get]
YAML
if out=$(k apply --server-side --field-manager=gpuop-operator --as="$operator" \
    -f "$work/greedy.yaml" 2>&1); then
  fail "the operator granted itself secrets through a ClusterRole:\n$out"
fi
[[ $out == *"attempting to grant RBAC permissions not currently held"* ]] ||
  fail "the greedy ClusterRole failed for another reason:\n$out"
echo "manifests apply: ok"
