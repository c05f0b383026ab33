#!/usr/bin/env bash
# deploy.helm-lint: the chart passes `helm lint --strict`, and values the schema forbids are
# rejected with a message that names the offending field.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

out=$("$helm" lint --strict "$chart" 2>&1) || fail "helm lint --strict $chart failed:\n$out"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# rejected VALUES EXPECTED: lint with VALUES must fail and print EXPECTED.
rejected() {
  printf '%b' "$1" >"$tmp/values.yaml"
  if out=$("$helm" lint --strict "$chart" -f "$tmp/values.yaml" 2>&1); then
    fail "helm lint accepted these values:\n$1"
  fi
  [[ $out == *"$2"* ]] || fail "helm lint rejected these values:\n$1\nbut did not say '$2':\n$out"
  echo "rejected as expected: $2"
}

rejected 'operator:\n  replicas: "two"\n' "at '/operator/replicas': got string, want integer"
rejected 'operator:\n  replicas: 0\n' "at '/operator/replicas'"
rejected 'operator:\n  logFormat: xml\n' "at '/operator/logFormat'"
rejected 'image:\n  pullPolicy: Sometimes\n' "at '/image/pullPolicy'"
rejected 'imagePullSecrets:\n  - name: regcred\n' "at '/imagePullSecrets/0'"
rejected 'operater:\n  replicas: 2\n' "'operater' not allowed"
rejected 'clusterPolicy:\n  create: "yes"\n' "at '/clusterPolicy/create'"
rejected 'metrics:\n  serviceMonitor:\n    interval: soon\n' "at '/metrics/serviceMonitor/interval'"
rejected 'hostNetwork: "yes"\n' "at '/hostNetwork'"
rejected 'operator:\n  metricsPort: 0\n' "at '/operator/metricsPort'"
rejected 'apiServer:\n  host: 127.0.0.1\n  port: 65536\n' "at '/apiServer/port'"
rejected 'apiServer:\n  host: "https://10.0.0.1"\n  port: 6443\n' "at '/apiServer/host'"
rejected 'apiServer:\n  host: "10.0.0.1:6443"\n  port: 6443\n' "at '/apiServer/host'"
rejected 'apiServer:\n  host: ""\n  port: 6443\n' "at '/apiServer/host'"
rejected 'apiServer:\n  host: 127.0.0.1\n' "at '/apiServer'"
rejected 'apiServer:\n  port: 6443\n' "at '/apiServer'"
rejected 'apiServer:\n  url: https://127.0.0.1:6443\n' "'url' not allowed"
echo "helm lint: ok"
