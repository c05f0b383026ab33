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
 && cmake --build build/release --target gpuop-operator gpuop-agent kubectl-gpu \
 && install -D -m 0755 -t /out build/release/cmd/gpuop-operator build/release/cmd/gpuop-agent \
      build/release/cmd/kubectl-gpu \
 && strip /out/*

# --- runtime: only the shared libraries the three binaries link ----------------------------------
# The packages of their direct DT_NEEDED libraries (readelf -d; dpkg -S); apt brings the rest.
# libc6, libgcc-s1 and coreutils (/usr/sbin/chroot, used to restart the host's container
# runtime) are in the base image. NVML is not: gpuop-agent loads libnvidia-ml.so.1 at run time
# from the driver the NVIDIA runtime mounts, and runs without it on nodes with no NVIDIA GPU.
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libabsl20220623 libcurl4 libgrpc++1.51 libgrpc29 libprotobuf32 libstdc++6 \
      libtomlplusplus3 libyaml-cpp0.7 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /usr/local/bin/
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="gpuop" \
      org.opencontainers.image.description="GPU operator for Kubernetes: gpuop-operator, gpuop-agent, kubectl-gpu" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.base.name="docker.io/library/debian:bookworm-slim"
