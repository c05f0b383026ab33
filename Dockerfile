# The gpuop image: gpuop-operator, gpuop-agent and kubectl-gpu on Debian 12.
#
#   docker build -t ghcr.io/gpuop/gpuop:0.1.0 .
#
# One image for the operator and every agent component; the pod specs give the command, so
# there is no ENTRYPOINT. No USER either: the operator's Deployment runs it as 65532 with no
# capabilities, while the host-facing components run as root (some privileged) by design.

# --- build: the Debian build dependencies of scripts/setup, without the test tools -------------
FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libabsl-dev libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc \
      libcurl4-openssl-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev libtomlplusplus-dev \
      libspdlog-dev libfmt-dev libcli11-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake --preset release -DGPUOP_BUILD_TESTS=OFF \
 && cmake --build build/release --target gpuop-operator gpuop-agent kubectl-gpu gpuop-cdi-hook \
      gpuop-container-runtime \
 && install -D -m 0755 -t /out build/release/cmd/gpuop-operator build/release/cmd/gpuop-agent \
      build/release/cmd/kubectl-gpu build/release/cmd/gpuop-cdi-hook \
      build/release/cmd/gpuop-container-runtime \
 && strip /out/*

# --- runtime: the Debian packages whose files the three binaries load -------------------------
# deploy/image/runtime-packages.txt lists them: the packages of the binaries' whole shared
# library closure (ldd; dpkg -S), plus ca-certificates. scripts/image builds the same image without
# Docker from the same list, and the test deploy.image-dockerfile checks the list against the
# binaries. libc6, libgcc-s1 and the Essential packages (coreutils: /usr/sbin/chroot, used to
# restart the host's container runtime) are in the base image. NVML is not: gpuop-agent loads
# libnvidia-ml.so.1 at run time from the driver the NVIDIA runtime mounts, and runs without it on
# nodes with no NVIDIA GPU. User nonroot (65532) is the one the operator's Deployment runs as.
FROM debian:bookworm-slim
COPY deploy/image/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      $(sed -e 's/#.*//' /tmp/runtime-packages.txt) \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --home-dir /nonexistent --no-create-home \
      --shell /usr/sbin/nologin nonroot
COPY --from=build /out/ /usr/local/bin/
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="gpuop" \
      org.opencontainers.image.description="GPU operator for Kubernetes: gpuop-operator, gpuop-agent, kubectl-gpu" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.base.name="docker.io/library/debian:bookworm-slim"
