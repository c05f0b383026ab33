# Shared by the deploy tests: where the repository and the tools are, and how to fail.
# Sourced with the repository root as $1 of the test script (ctest passes it).
set -euo pipefail
# (No `grep -q` after a pipe: it exits at the first match and, under pipefail, the writer's
# SIGPIPE would fail the pipeline at random.)

root=${1:?usage: $0 REPO_ROOT [...]}
chart=$root/deploy/helm/gpuop
# shellcheck source=../cluster/tools/versions.sh
source "$root/test/cluster/tools/versions.sh"
bin_dir=$(control_plane_bin_dir)

fail() {
  printf 'FAIL: %b\n' "$*" >&2
  exit 1
}

# tool NAME: the path of NAME in the control plane's bin dir, or a failure saying how to get it.
tool() {
  local path=$bin_dir/$1
  [[ -x $path ]] || fail "$1 is not at $path; run test/cluster/tools/build (or scripts/setup)"
  echo "$path"
}

helm=$(tool helm)
