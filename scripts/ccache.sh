# Sourced by scripts/setup and scripts/test: where the compiler cache lives (outside the tree,
# next to the Go cache) and how it is shared between clones and worktrees of the repository.
# CMake uses ccache when it is installed (CMakeLists.txt).
export CCACHE_DIR=${CCACHE_DIR:-${GPUOP_CACHE:-${HOME:-/root}/.cache/gpuop}/ccache}
# Paths under the checkout are hashed relative to it, so another clone hits the same entries.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
