#!/usr/bin/env bash
# deploy.manifests-current: deploy/manifests/gpuop.yaml is what deploy/render-manifests makes
# from the chart now.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
HELM=$helm "$root/deploy/render-manifests" "$tmp/gpuop.yaml"
if ! diff -u "$root/deploy/manifests/gpuop.yaml" "$tmp/gpuop.yaml" >"$tmp/diff"; then
  head -n 60 "$tmp/diff" >&2
  fail "deploy/manifests/gpuop.yaml is stale: run deploy/render-manifests and commit the result"
fi
echo "manifests current"
