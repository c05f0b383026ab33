#!/usr/bin/env bash
# deploy.helm-template: what the chart renders for its defaults and for each option: the objects,
# the operator's security settings, the labels, the image and namespace plumbing.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# render ARGS...: helm template into $tmp/out.yaml.
render() {
  "$helm" template gpuop "$chart" --namespace gpuop-system "$@" >"$tmp/out.yaml" 2>"$tmp/err" ||
    fail "helm template $* failed:\n$(cat "$tmp/err")"
}
# kinds: the kinds rendered, sorted, one line.
kinds() { sed -n 's/^kind: //p' "$tmp/out.yaml" | sort | tr '\n' ' '; }
# doc KIND: the YAML documents of that kind.
doc() {
  awk -v kind="$1" '/^---/ { if (hit) printf "%s", buf; buf = ""; hit = 0; next }
    { buf = buf $0 "\n"; if ($0 == "kind: " kind) hit = 1 }
    END { if (hit) printf "%s", buf }' "$tmp/out.yaml"
}
# has KIND TEXT / lacks KIND TEXT: whether a KIND document contains the line TEXT (trimmed).
has() {
  doc "$1" | sed 's/^ *//' | grep -xF -- "$2" >/dev/null ||
    fail "$1 lacks '$2' (helm template ${args[*]}):\n$(doc "$1")"
}
lacks() {
  if doc "$1" | grep -F -- "$2" >/dev/null; then
    fail "$1 has '$2' (helm template ${args[*]}):\n$(doc "$1")"
  fi
}
expect_kinds() {
  [[ "$(kinds)" == "$1" ]] ||
    fail "helm template ${args[*]} rendered kinds '$(kinds)', expected '$1'"
}

# Defaults.
args=()
render
all="ClusterRole ClusterRoleBinding Deployment GPUClusterPolicy Job Role RoleBinding Service ServiceAccount "
expect_kinds "$all"
for line in "replicas: 1" "image: ghcr.io/gpuop/gpuop:0.1.0" "imagePullPolicy: IfNotPresent" \
    "serviceAccountName: gpuop-operator" "priorityClassName: system-cluster-critical" \
    "- gpuop-operator" "- run" "- --namespace=\$(POD_NAMESPACE)" "- --listen=:8080" \
    "- --leader-elect" "- --log-format=json" "fieldPath: metadata.namespace" \
    "containerPort: 8080" "path: /healthz" "path: /readyz" "- name: http-metrics" \
    "runAsNonRoot: true" "runAsUser: 65532" "readOnlyRootFilesystem: true" \
    "allowPrivilegeEscalation: false" "privileged: false" "drop: [ALL]" "type: RuntimeDefault" \
    "terminationGracePeriodSeconds: 30" "cpu: 50m" "memory: 64Mi" "memory: 256Mi" \
    "key: node-role.kubernetes.io/control-plane"; do
  has Deployment "$line"
done
for text in "privileged: true" "hostPath" "hostPID" "hostNetwork"; do lacks Deployment "$text"; done
# Least privilege: no secrets, no wildcards, no escalate/bind, never delete a node.
for kind in ClusterRole Role; do
  bad=$(doc "$kind" | grep -E '^ *(verbs|resources|apiGroups):' |
    grep -wE 'secrets|escalate|bind|impersonate|\*' || true)
  [[ -z $bad ]] || fail "$kind grants too much:\n$bad"
  doc "$kind" | grep -E '^ *verbs:.*\bget\b' >/dev/null || fail "$kind has no rules the check above could see"
done
verbs=$(doc ClusterRole | grep -A3 -- '- apiGroups: \[""\]' | grep -A2 'resources: \[nodes\]' |
  sed -n 's/^ *verbs: //p')
[[ $verbs == "[get, list, watch, patch, update]" ]] || fail "the operator's verbs on nodes are '$verbs'"
for text in "dnsPolicy" "KUBERNETES_SERVICE" "host: 127.0.0.1"; do lacks Deployment "$text"; done
for text in "hostNetwork" "apiServer"; do lacks GPUClusterPolicy "$text"; done
# The uninstall hook: a pre-delete Job with the operator's account, unprivileged.
for line in 'helm.sh/hook: pre-delete' 'helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded' \
    "serviceAccountName: gpuop-operator" "- uninstall" "- --namespace=gpuop-system" \
    "- --deployment=gpuop-operator" "- --step-timeout=300" "privileged: false" \
    "runAsNonRoot: true" "readOnlyRootFilesystem: true"; do
  has Job "$line"
done
for text in "hostPath" "hostNetwork"; do lacks Job "$text"; done
has Service "port: 8080"
has GPUClusterPolicy "name: default"
has GPUClusterPolicy "image: ghcr.io/gpuop/gpuop:0.1.0"
has GPUClusterPolicy "version: 570.86.15"
has ServiceAccount "namespace: gpuop-system"
has ClusterRoleBinding "namespace: gpuop-system"
# Every object carries the standard labels.
objects=$(grep -c '^kind: ' "$tmp/out.yaml")
for label in "app.kubernetes.io/name: gpuop" "app.kubernetes.io/instance: gpuop" \
    'app.kubernetes.io/version: "0.1.0"' "app.kubernetes.io/managed-by: Helm" \
    "app.kubernetes.io/part-of: gpuop"; do
  n=$(awk -v want="    $label" '/^---/ { found = 0 } $0 == want && !found { found = 1; n++ }
    END { print n + 0 }' "$tmp/out.yaml")
  ((n == objects)) || fail "'$label' is on $n of $objects objects"
done

# Two replicas: a PodDisruptionBudget keeps one.
args=(--set operator.replicas=2)
render "${args[@]}"
expect_kinds "${all/Job /Job PodDisruptionBudget }"
has Deployment "replicas: 2"
has PodDisruptionBudget "minAvailable: 1"

# ServiceMonitor on request, and only with the Service it scrapes.
args=(--set metrics.serviceMonitor.enabled=true --set metrics.serviceMonitor.labels.release=prom)
render "${args[@]}"
has ServiceMonitor "release: prom"
has ServiceMonitor "- port: http-metrics"
if "$helm" template gpuop "$chart" --set metrics.serviceMonitor.enabled=true \
    --set metrics.service.enabled=false >"$tmp/out.yaml" 2>"$tmp/err"; then
  fail "a ServiceMonitor without its Service was rendered"
fi
grep -qF "needs metrics.service.enabled" "$tmp/err" || fail "unclear error: $(cat "$tmp/err")"

# No uninstall hook on request.
args=(--set uninstall.enabled=false)
render "${args[@]}"
expect_kinds "${all/Job /}"

# No policy; no Service; no priority class.
args=(--set clusterPolicy.create=false --set metrics.service.enabled=false --set operator.priorityClassName=)
render "${args[@]}"
expect_kinds "ClusterRole ClusterRoleBinding Deployment Job Role RoleBinding ServiceAccount "
lacks Deployment priorityClassName

# The image, its pull policy and pull secrets reach the Deployment and the policy's components.
args=(--set image.tag=1.2.3 --set image.repository=registry.example/gpuop
      --set image.pullPolicy=Always --set 'imagePullSecrets={regcred}' --set operator.logFormat=text)
render "${args[@]}"
has Deployment "image: registry.example/gpuop:1.2.3"
has Deployment "imagePullPolicy: Always"
has Deployment "- name: regcred"
has Deployment "- --log-format=text"
has ServiceAccount "- name: regcred"
has GPUClusterPolicy "image: registry.example/gpuop:1.2.3"
has GPUClusterPolicy "imagePullPolicy: Always"
has GPUClusterPolicy "- regcred"

# The policy's own settings win over the chart's.
args=(--set clusterPolicy.spec.image=other/agent:9 --set clusterPolicy.spec.imagePullPolicy=Never
      --set clusterPolicy.spec.components.migManager.enabled=true)
render "${args[@]}"
has GPUClusterPolicy "image: other/agent:9"
has GPUClusterPolicy "imagePullPolicy: Never"
has GPUClusterPolicy "enabled: true"
has Deployment "image: ghcr.io/gpuop/gpuop:0.1.0"

# No pod network, no kube-proxy: hostNetwork and the API server's address reach the operator and
# the policy; the operator's port moves off the default, and Never is a pull policy.
args=(--set hostNetwork=true --set apiServer.host=127.0.0.1 --set apiServer.port=16443
      --set operator.metricsPort=18080 --set image.pullPolicy=Never)
render "${args[@]}"
for line in "hostNetwork: true" "dnsPolicy: ClusterFirstWithHostNet" "- --listen=:18080" \
    "containerPort: 18080" "host: 127.0.0.1" "- name: KUBERNETES_SERVICE_HOST" 'value: "127.0.0.1"' \
    "- name: KUBERNETES_SERVICE_PORT" 'value: "16443"' "imagePullPolicy: Never"; do
  has Deployment "$line"
done
n=$(doc Deployment | grep -cxF "              host: 127.0.0.1" || true)
((n == 2)) || fail "the liveness and readiness probes do not both use 127.0.0.1 ($n):\n$(doc Deployment)"
for line in "hostNetwork: true" "host: 127.0.0.1" "port: 16443" "imagePullPolicy: Never"; do
  has GPUClusterPolicy "$line"
done
has Service "port: 18080"
for line in "hostNetwork: true" "dnsPolicy: ClusterFirstWithHostNet" 'value: "127.0.0.1"' \
    'value: "16443"' "imagePullPolicy: Never"; do
  has Job "$line"
done
# An IPv6 address goes as it is (the in-cluster config adds the brackets).
args=(--set apiServer.host=fd00::1 --set apiServer.port=6443)
render "${args[@]}"
has Deployment 'value: "fd00::1"'
has GPUClusterPolicy "host: fd00::1"
lacks Deployment "hostNetwork"
# The policy's own settings win; the operator keeps the chart's.
args=(--set hostNetwork=true --set apiServer.host=10.0.0.1 --set apiServer.port=6443
      --set clusterPolicy.spec.hostNetwork=false --set clusterPolicy.spec.apiServer.host=api.internal
      --set clusterPolicy.spec.apiServer.port=443)
render "${args[@]}"
has GPUClusterPolicy "hostNetwork: false"
has GPUClusterPolicy "host: api.internal"
has GPUClusterPolicy "port: 443"
has Deployment "hostNetwork: true"
has Deployment 'value: "10.0.0.1"'
# On the node network the operator's port may not be the exporter's.
for set in "operator.metricsPort=9400" \
    "clusterPolicy.spec.components.exporter.port=8080"; do
  if "$helm" template gpuop "$chart" --set hostNetwork=true --set "$set" >"$tmp/out.yaml" 2>"$tmp/err"; then
    fail "hostNetwork with the operator and the exporter on one port was rendered ($set)"
  fi
  grep -F "is also the exporter's port" "$tmp/err" >/dev/null || fail "unclear error: $(cat "$tmp/err")"
done
# ... unless one of them stays off the node network, or the exporter is off.
for set in "clusterPolicy.spec.hostNetwork=false" "clusterPolicy.spec.components.exporter.enabled=false"; do
  args=(--set hostNetwork=true --set operator.metricsPort=9400 --set "$set")
  render "${args[@]}"
done

# The release namespace is used throughout.
args=(--namespace gpu-ops)
"$helm" template gpuop "$chart" "${args[@]}" >"$tmp/out.yaml" || fail "helm template ${args[*]} failed"
namespaces=$(sed -n 's/^ *namespace: //p' "$tmp/out.yaml" | sort -u | tr '\n' ' ')
[[ $namespaces == "gpu-ops " ]] || fail "namespaces rendered: '$namespaces', expected only gpu-ops"
echo "helm template: ok"
