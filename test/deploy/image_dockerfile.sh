#!/usr/bin/env bash
# deploy.image-dockerfile: the Dockerfile and scripts/image install the same gpuop image.
#   - deploy/image/runtime-packages.txt is exactly the set of Debian packages whose files
#     scripts/image puts into the image (dpkg -S of every library of the binaries' ldd closure,
#     of /usr/sbin/chroot, plus ca-certificates), less libc6, libgcc-s1 and the Essential packages,
#     which the Dockerfile gets from debian:bookworm-slim;
#   - the Dockerfile's runtime stage installs that file's packages and no others;
#   - both put the same binaries into /usr/local/bin, and the Dockerfile adds the user nonroot
#     (65532) that scripts/image writes into /etc/passwd (images.build checks that side).
# Usage: image_dockerfile.sh REPO_ROOT BUILD_DIR (the gpuop binaries must be built there).
set -euo pipefail
root=${1:?usage: $0 REPO_ROOT BUILD_DIR}
build=${2:?usage: $0 REPO_ROOT BUILD_DIR}
list=$root/deploy/image/runtime-packages.txt

fail() {
  printf 'FAIL: %b\n' "$*" >&2
  exit 1
}

script_packages=$("$root/scripts/image" --build-dir "$build" --packages) ||
  fail "scripts/image --packages failed (are gpuop-operator, gpuop-agent and kubectl-gpu built in $build?)"
listed=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$list" | LC_ALL=C sort)
if [[ $script_packages != "$listed" ]]; then
  diff <(echo "$listed") <(echo "$script_packages") >&2 || true
  fail "deploy/image/runtime-packages.txt (<) is not what the binaries load (>):" \
    "make it the output of scripts/image --packages"
fi
((${#script_packages} > 0)) || fail "no packages at all: the check would be empty"

# What the Dockerfile installs: its runtime stage (the last FROM) read as instructions.
dockerfile_facts=$(python3 - "$root/Dockerfile" "$list" <<'EOF'
import re, shlex, sys
text = open(sys.argv[1]).read().replace("\\\n", " ")
lines = [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]
froms = [i for i, l in enumerate(lines) if l.upper().startswith("FROM ")]
build, runtime = lines[froms[0]:froms[-1]], lines[froms[-1]:]
packages = set()
copied_list = None
for l in runtime:
    m = re.match(r"COPY\s+deploy/image/runtime-packages\.txt\s+(\S+)$", l)
    if m:
        copied_list = m.group(1)
    if not l.startswith("RUN ") or "apt-get install" not in l:
        continue
    for part in l[4:].split("&&"):
        if "apt-get install" not in part:
            continue
        args = part.split("apt-get install", 1)[1]
        if copied_list is not None:
            sub = f"$(sed -e 's/#.*//' {copied_list})"
            if sub in args:
                args = args.replace(sub, " ")
                for entry in open(sys.argv[2]):
                    packages.update(entry.split("#", 1)[0].split())
        for word in shlex.split(args):
            if not word.startswith("-"):
                packages.add(word)
print("packages", *sorted(packages))
binaries = set()
for l in build:
    if l.startswith("RUN ") and "install " in l:
        binaries.update(re.findall(r"build/release/cmd/([\w-]+)", l))
copies_out = any(re.match(r"COPY\s+--from=build\s+/out/?\s+/usr/local/bin/?$", l) for l in runtime)
print("binaries", *sorted(binaries) if copies_out else [])
print("nonroot", int(any("useradd" in l and "--uid 65532" in l for l in runtime)))
EOF
) || fail "could not read the Dockerfile"
docker_packages=$(sed -n 's/^packages //p' <<<"$dockerfile_facts" | tr ' ' '\n' | LC_ALL=C sort)
if [[ $docker_packages != "$script_packages" ]]; then
  diff <(echo "$docker_packages") <(echo "$script_packages") >&2 || true
  fail "the Dockerfile's runtime stage installs (<) other packages than scripts/image uses (>)"
fi

docker_binaries=$(sed -n 's/^binaries //p' <<<"$dockerfile_facts" | tr ' ' '\n' | LC_ALL=C sort)
script_binaries=$("$root/scripts/image" --build-dir "$build" --files gpuop |
  sed -n 's|^/usr/local/bin/||p' | LC_ALL=C sort)
[[ -n $script_binaries ]] || fail "scripts/image puts nothing into /usr/local/bin"
if [[ $docker_binaries != "$script_binaries" ]]; then
  fail "/usr/local/bin differs: Dockerfile: $(echo $docker_binaries), scripts/image: $(echo $script_binaries)"
fi

[[ $(sed -n 's/^nonroot //p' <<<"$dockerfile_facts") == 1 ]] ||
  fail "the Dockerfile's runtime stage does not add the user nonroot (useradd --uid 65532)"

echo "Dockerfile and scripts/image agree: $(echo $script_packages | wc -w) packages;" \
  "/usr/local/bin: $(echo $script_binaries)"
