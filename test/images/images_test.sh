#!/usr/bin/env bash
# images.build: scripts/image builds every image from the build dir, and each archive is a valid
# OCI layout that holds what it must:
#   - index.json names each tag (OCI ref name and containerd's image name), every blob matches its
#     digest and size, the config's diff_ids are the layers' uncompressed digests;
#   - in every image, each ELF file's DT_NEEDED closure resolves inside the image: the image's own
#     loader lists it with the image's library dir first, and any library it finds outside the
#     image (on this machine, after the image's dir) is a library the image lacks;
#   - gpuop: the three binaries, chroot, CA certificates, nonroot 65532, /tmp 1777, no
#     entrypoint; and the binaries start (--help) in a chroot of the image when run as root;
#   - pause: one static /pause as entrypoint, which exits 0 on SIGTERM and, as root, also as PID 1
#     of a PID namespace, where it must reap the orphans it is given;
#   - gpu-probe: glibc and the probe, which prints its JSON in the image, and loads a library put
#     into /usr/lib/x86_64-linux-gnu as a CDI spec would (the fake NVML, when built);
#   - driver (when its programs are built): the SIMULATED driver's files and /bin/sh;
#   - when this is root and a containerd 2 is built (the node tests' binaries: $GPUOP_NODE_BIN,
#     else the cache directory versions.sh names), `ctr -n k8s.io images import ARCHIVE`, with no
#     --base-name, gives every image its name; containerd unpacks the layers as it imports them,
#     checking them against the diff_ids. It runs with every path in the temp dir and without
#     the plugins that write elsewhere (CRI, NRI); nothing is run.
# Usage: images_test.sh REPO_ROOT BUILD_DIR
set -euo pipefail
root=${1:?usage: $0 REPO_ROOT BUILD_DIR}
build=${2:?usage: $0 REPO_ROOT BUILD_DIR}
multiarch=x86_64-linux-gnu

fail() {
  printf 'FAIL: %b\n' "$*" >&2
  exit 1
}

tmp=$(mktemp -d)
containerd_pid=
cleanup() {
  if [[ -n $containerd_pid ]]; then
    kill -TERM "$containerd_pid" 2>/dev/null || true
    wait "$containerd_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
"$root/scripts/image" --build-dir "$build" --out-dir "$tmp/out" || fail "scripts/image failed"

# Running a program of an image: in a chroot when this is root (the image's own paths), else
# through the image's loader with the image's library dir first.
if [[ $(id -u) == 0 ]] && chroot / true 2>/dev/null; then
  in_chroot=true
else
  in_chroot=false
  echo "note: not root; programs run through the image's loader, not in a chroot"
fi
run_in() {
  local rootfs=$1
  shift
  if $in_chroot; then
    chroot "$rootfs" "$@"
  else
    "$rootfs/lib64/ld-linux-x86-64.so.2" --inhibit-cache --library-path "$rootfs/usr/lib/$multiarch" \
      "$rootfs$1" "${@:2}"
  fi
}

# unpack ARCHIVE DIR NAME TAGS...: checks the layout (see the header), extracts the layers to
# DIR/rootfs and the config to DIR/config.json.
unpack() {
  local archive=$1 dir=$2 name=$3
  shift 3
  mkdir -p "$dir/layout" "$dir/rootfs"
  tar -xf "$archive" -C "$dir/layout"
  python3 - "$dir" "${name%:*}" "$@" <<'EOF' || fail "$archive: bad OCI layout (above)"
import gzip, hashlib, json, os, sys
d, repo, tags = sys.argv[1], sys.argv[2], sys.argv[3:]
layout = os.path.join(d, "layout")
def blob(desc):
    algo, hexdigest = desc["digest"].split(":")
    assert algo == "sha256", desc
    data = open(os.path.join(layout, "blobs", algo, hexdigest), "rb").read()
    assert hashlib.sha256(data).hexdigest() == hexdigest, f"{desc['digest']}: wrong digest"
    assert len(data) == desc["size"], f"{desc['digest']}: size {len(data)}, descriptor {desc['size']}"
    return data
assert json.load(open(os.path.join(layout, "oci-layout")))["imageLayoutVersion"] == "1.0.0"
index = json.load(open(os.path.join(layout, "index.json")))
assert index["schemaVersion"] == 2
by_tag = {}
for m in index["manifests"]:
    a = m["annotations"]
    tag = a["org.opencontainers.image.ref.name"]
    assert a["io.containerd.image.name"] == f"{repo}:{tag}", a
    assert m["mediaType"] == "application/vnd.oci.image.manifest.v1+json", m
    by_tag[tag] = m
assert sorted(by_tag) == sorted(tags), f"tags {sorted(by_tag)}, want {sorted(tags)}"
digests = {m["digest"] for m in by_tag.values()}
assert len(digests) == 1, f"tags name different manifests: {digests}"
manifest = json.loads(blob(by_tag[tags[0]]))
assert manifest["config"]["mediaType"] == "application/vnd.oci.image.config.v1+json"
config = json.loads(blob(manifest["config"]))
assert config["architecture"] == "amd64" and config["os"] == "linux", config
diff_ids = []
with open(os.path.join(d, "layers"), "w") as out:
    for layer in manifest["layers"]:
        assert layer["mediaType"] == "application/vnd.oci.image.layer.v1.tar+gzip", layer
        diff_ids.append("sha256:" + hashlib.sha256(gzip.decompress(blob(layer))).hexdigest())
        out.write(os.path.join(layout, "blobs", *layer["digest"].split(":")) + "\n")
assert config["rootfs"] == {"type": "layers", "diff_ids": diff_ids}, "diff_ids do not match the layers"
json.dump(config, open(os.path.join(d, "config.json"), "w"))
EOF
  local layer
  while read -r layer; do tar -xpzf "$layer" -C "$dir/rootfs"; done <"$dir/layers"
}

# config_field DIR EXPR: a field of the image config as JSON (EXPR indexes `c`, the config).
config_field() {
  python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); print(json.dumps(eval(sys.argv[2])))' \
    "$1/config.json" "$2"
}

# check_closure ROOTFS: every ELF file outside the image's library dirs has its shared libraries
# (transitively) inside ROOTFS.
check_closure() {
  local rootfs=$1 elf listing line checked=0
  local loader=$rootfs/lib64/ld-linux-x86-64.so.2
  [[ -x $loader ]] || fail "$rootfs: no loader at /lib64/ld-linux-x86-64.so.2"
  while read -r elf; do
    [[ $(head -c 4 "$elf") == $'\x7fELF' ]] || continue
    (($(readelf -d "$elf" 2>/dev/null | grep -c '(NEEDED)' || true))) || continue
    listing=$("$loader" --inhibit-cache --library-path "$rootfs/usr/lib/$multiarch" --list "$elf" 2>&1) ||
      fail "${elf#"$rootfs"}: the image's loader cannot list it:\n$listing"
    while read -r line; do
      case $line in
        *"not found"*) fail "${elf#"$rootfs"}: $line (missing in the image)" ;;
        *" => "*)
          [[ ${line#* => } == "$rootfs"/* ]] ||
            fail "${elf#"$rootfs"}: $line: not in the image (found on this machine)"
          ;;
      esac
    done <<<"$listing"
    checked=$((checked + 1))
  done < <(find "$rootfs" -type f ! -path "$rootfs/usr/lib/$multiarch/*")
  ((checked > 0)) || fail "$rootfs: no dynamic ELF file checked"
  echo "  closure: $checked ELF files resolve inside the image"
}

expect_file() {
  [[ -e $1/$2 || -L $1/$2 ]] || fail "$3: no $2 in the image"
}

declare -A archive_of
while read -r name archive; do archive_of[$name]=$archive; done < <("$root/scripts/image" --out-dir "$tmp/out" --list)
version=$(sed -n 's/^project(gpuop VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")

# --- gpuop ---
name=localhost/gpuop:$version
echo "$name"
unpack "${archive_of[$name]}" "$tmp/gpuop" "$name" "$version" dev
r=$tmp/gpuop/rootfs
for f in usr/local/bin/gpuop-operator usr/local/bin/gpuop-agent usr/local/bin/kubectl-gpu \
  usr/local/bin/gpuop-cdi-hook usr/local/bin/gpuop-container-runtime usr/sbin/chroot usr/lib/$multiarch/libc.so.6 etc/ssl/certs/ca-certificates.crt; do
  expect_file "$r" "$f" gpuop
done
[[ -s $r/etc/ssl/certs/ca-certificates.crt ]] || fail "gpuop: empty CA bundle"
[[ $(grep -c '^nonroot:x:65532:65532:' "$r/etc/passwd") == 1 ]] || fail "gpuop: no nonroot 65532 in /etc/passwd"
[[ $(grep -c '^root:x:0:0:' "$r/etc/passwd") == 1 ]] || fail "gpuop: no root in /etc/passwd"
[[ $(stat -c %a "$r/tmp") == 1777 ]] || fail "gpuop: /tmp is $(stat -c %a "$r/tmp"), not 1777"
[[ $(config_field "$tmp/gpuop" 'c["config"].get("Entrypoint")') == null ]] || fail "gpuop: has an entrypoint"
[[ $(config_field "$tmp/gpuop" 'c["config"]["Labels"]["org.opencontainers.image.version"]') == "\"$version\"" ]] ||
  fail "gpuop: version label is not $version"
[[ $(config_field "$tmp/gpuop" 'c["config"]["Env"]') == *PATH=*/usr/local/bin* ]] || fail "gpuop: no PATH"
check_closure "$r"
# The check above is only worth something if it fails for a missing library: take one away.
victim=$(find "$r/usr/lib/$multiarch" -name 'libabsl_*' -type f -print -quit)
[[ -n $victim ]] || fail "gpuop: no abseil library in the image"
mv "$victim" "$tmp/victim"
if (check_closure "$r") >/dev/null 2>&1; then fail "check_closure missed a missing ${victim##*/}"; fi
mv "$tmp/victim" "$victim"
for bin in gpuop-operator gpuop-agent kubectl-gpu; do
  out=$(run_in "$r" /usr/local/bin/$bin --help 2>&1) || fail "gpuop: $bin --help failed in the image:\n$out"
done
# The hook and the runc wrapper run on the host, whatever its distribution: static, and they
# start with nothing else.
for bin in gpuop-cdi-hook gpuop-container-runtime; do
  [[ $(readelf -l "$r/usr/local/bin/$bin" | grep -c INTERP || true) == 0 ]] ||
    fail "gpuop: $bin is not static"
done
"$r/usr/local/bin/gpuop-cdi-hook" --help >/dev/null 2>&1 || fail "gpuop: gpuop-cdi-hook --help failed"
"$r/usr/local/bin/gpuop-container-runtime" --version >/dev/null 2>&1 ||
  fail "gpuop: gpuop-container-runtime --version failed"
echo "  binaries start in the image"

# --- pause ---
name=localhost/pause:3.10
echo "$name"
unpack "${archive_of[$name]}" "$tmp/pause" "$name" 3.10
[[ $(config_field "$tmp/pause" 'c["config"]["Entrypoint"]') == '["/pause"]' ]] || fail "pause: entrypoint is not /pause"
[[ $(readelf -l "$tmp/pause/rootfs/pause" | grep -c INTERP || true) == 0 ]] || fail "pause: /pause is not static"
"$tmp/pause/rootfs/pause" 2>/dev/null &
pid=$!
sleep 0.2
kill -0 "$pid" 2>/dev/null || fail "pause: exited at once"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
((rc == 0)) || fail "pause: exit status $rc on SIGTERM, want 0"
echo "  runs, exits 0 on SIGTERM"
# As PID 1 of a PID namespace, orphans come to it; it must reap them (no zombies left).
if [[ $(id -u) == 0 ]] && command -v unshare >/dev/null && command -v nsenter >/dev/null; then
  unshare --pid --fork --kill-child "$tmp/pause/rootfs/pause" &
  outer=$!
  pause_pid=
  for _ in $(seq 100); do
    pause_pid=$(pgrep -P "$outer" || true)
    [[ -n $pause_pid ]] && break
    sleep 0.05
  done
  [[ -n $pause_pid ]] || fail "pause: did not start in a PID namespace"
  nsenter -t "$pause_pid" -p -- /bin/sh -c 'sleep 0.1 & sleep 0.2 & exit 0'
  sleep 0.8
  left=$(ps --ppid "$pause_pid" -o pid=,stat=,comm= || true)
  kill -TERM "$pause_pid"
  rc=0
  wait "$outer" || rc=$?
  [[ -z $left ]] || fail "pause: as PID 1 it left children unreaped:\n$left"
  ((rc == 0)) || fail "pause: as PID 1, exit status $rc on SIGTERM, want 0"
  echo "  as PID 1: reaps orphans, exits 0 on SIGTERM"
fi

# --- gpu-probe ---
name=localhost/gpu-probe:1
echo "$name"
unpack "${archive_of[$name]}" "$tmp/probe" "$name" 1
r=$tmp/probe/rootfs
for f in usr/local/bin/gpu-probe usr/lib/$multiarch/libc.so.6 usr/lib/$multiarch/libdl.so.2 \
  lib64/ld-linux-x86-64.so.2 etc/ld.so.conf; do
  expect_file "$r" "$f" gpu-probe
done
check_closure "$r"
report=$(run_in "$r" /usr/local/bin/gpu-probe) || fail "gpu-probe: failed in the image"
python3 -c '
import json, sys
r = json.loads(sys.argv[1])
assert r["nvml"]["loaded"] is False and r["nvml"]["error"], r
assert r["cuda"]["loaded"] is False and r["cuda"]["error"], r
' "$report" || fail "gpu-probe: unexpected report with no libraries: $report"
fake_nvml=$build/test/fakes/nvml/lib/libnvidia-ml.so.1
fake_cuda=$build/test/fakes/cuda/libcuda.so.1
if [[ -e $fake_nvml && -e $fake_cuda ]]; then
  # As a CDI spec mounts the driver's libraries: into the standard search dir, nothing else set.
  cp "$(readlink -f "$fake_nvml")" "$r/usr/lib/$multiarch/libnvidia-ml.so.1"
  cp "$(readlink -f "$fake_cuda")" "$r/usr/lib/$multiarch/libcuda.so.1"
  cp "$build/test/fakes/nvml/lib/scenarios/l4-4x-pcie.yaml" "$r/tmp/scenario.yaml"
  scenario=/tmp/scenario.yaml
  $in_chroot || scenario=$r/tmp/scenario.yaml
  # The fake CUDA library may not export cuDeviceGetCount yet; the probe must then say so.
  cuda_count=$(readelf --dyn-syms -W "$r/usr/lib/$multiarch/libcuda.so.1" | grep -c ' cuDeviceGetCount$' || true)
  report=$(GPUOP_FAKE_NVML_SCENARIO=$scenario GPUOP_FAKE_CUDA_DEVICES=0000:01:00.0,0000:02:00.0 \
    run_in "$r" /usr/local/bin/gpu-probe) || fail "gpu-probe: failed with the fake libraries"
  python3 -c '
import json, sys
r = json.loads(sys.argv[1])
n, c = r["nvml"], r["cuda"]
assert n["loaded"] is True and n["path"].endswith("x86_64-linux-gnu/libnvidia-ml.so.1"), r
assert n["error"] is None and n["count"] == 4 and len(n["uuids"]) == 4, r
assert all(u.startswith("GPU-") for u in n["uuids"]), r
assert c["loaded"] is True and c["path"].endswith("x86_64-linux-gnu/libcuda.so.1"), r
if sys.argv[2] == "1":
    assert c["error"] is None and c["count"] == 2, r
else:
    assert c["error"] == "dlsym cuDeviceGetCount: not exported" and c["count"] == 0, r
' "$report" "$cuda_count" || fail "gpu-probe: with the fake libraries mounted: $report"
  echo "  loads libnvidia-ml.so.1 (4 GPUs) and libcuda.so.1 from /usr/lib/$multiarch"
  ((cuda_count == 1)) || echo "  note: the fake libcuda.so.1 has no cuDeviceGetCount; the probe reports that"
else
  echo "  note: the fake NVML or CUDA library is not built; the probe's loading is not checked"
fi

# --- driver (SIMULATED) ---
name=localhost/simulated/driver:570.86.15-debian12
if [[ -e ${archive_of[$name]} ]]; then
  echo "$name"
  unpack "${archive_of[$name]}" "$tmp/driver" "$name" 570.86.15-debian12
  r=$tmp/driver/rootfs
  for f in usr/local/bin/nvidia-driver usr/bin/nvidia-smi bin/sh bin/sleep \
    usr/share/gpuop-simulated/lib/libnvidia-ml.so.1 usr/share/gpuop-simulated/lib/libcuda.so.1 \
    usr/share/gpuop-simulated/lib/scenarios/l4-4x-pcie.yaml; do
    expect_file "$r" "$f" driver
  done
  [[ ! -L $r/usr/share/gpuop-simulated/lib/libnvidia-ml.so.1 ]] || fail "driver: libnvidia-ml.so.1 is a link"
  [[ $(config_field "$tmp/driver" 'c["config"]["Labels"]["org.opencontainers.image.description"]') == *SIMULATED* ]] ||
    fail "driver: description does not say SIMULATED"
  check_closure "$r"
  if $in_chroot; then
    out=$(chroot "$r" /bin/sh -c 'mkdir -p /tmp/x && touch /tmp/x/y && ls /tmp/x && rm -r /tmp/x') ||
      fail "driver: /bin/sh does not work"
    [[ $out == y ]] || fail "driver: /bin/sh printed '$out'"
  fi
else
  echo "note: the driver image was not built (its programs are not in $build)"
fi
# --- containerd import ---
# shellcheck source=../cluster/tools/versions.sh
source "$root/test/cluster/tools/versions.sh"
node_bin=$(node_bin_dir)
if [[ -x $node_bin/containerd && -x $node_bin/ctr && $(id -u) == 0 ]]; then
  echo "containerd import ($node_bin)"
  c=$tmp/containerd
  mkdir -p "$c"
  # Every path in the temp dir, and no plugin that writes elsewhere (CRI, NRI's /run/nri): an
  # import needs only the content store, the snapshotter and the image service.
  cat >"$c/config.toml" <<EOF
version = 3
root = "$c/root"
state = "$c/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime",
                    "io.containerd.cri.v1.images", "io.containerd.nri.v1.nri"]
[grpc]
  address = "$c/sock"
[ttrpc]
  address = "$c/sock.ttrpc"
[plugins.'io.containerd.internal.v1.opt']
  path = "$c/opt"
EOF
  "$node_bin/containerd" --config "$c/config.toml" >"$c/log" 2>&1 &
  containerd_pid=$!
  ctr=("$node_bin/ctr" --address "$c/sock" -n k8s.io)
  for _ in $(seq 100); do
    "${ctr[@]}" version >/dev/null 2>&1 && break
    kill -0 "$containerd_pid" 2>/dev/null || fail "containerd exited:\n$(tail -n 20 "$c/log")"
    sleep 0.1
  done
  "${ctr[@]}" version >/dev/null 2>&1 || fail "containerd did not answer:\n$(tail -n 20 "$c/log")"
  want=()
  for name in "${!archive_of[@]}"; do
    [[ -e ${archive_of[$name]} ]] || continue
    out=$("${ctr[@]}" images import "${archive_of[$name]}" 2>&1) ||
      fail "ctr images import ${archive_of[$name]##*/}:\n$out"
    want+=("$name")
  done
  want+=("localhost/gpuop:dev")
  have=$("${ctr[@]}" images ls -q 2>/dev/null)
  for name in "${want[@]}"; do
    [[ $'\n'$have$'\n' == *$'\n'$name$'\n'* ]] || fail "after import, containerd has no $name; it has:\n$have"
  done
  echo "  imported as: $(printf '%s ' "${want[@]}")"
else
  echo "note: no containerd to import into (not root, or no node binaries built)"
fi
echo "images ok"
