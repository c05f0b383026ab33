module local/gpuop-containerd-test-binaries

go 1.26.8

require github.com/containerd/containerd/v2 v2.2.9 // indirect
