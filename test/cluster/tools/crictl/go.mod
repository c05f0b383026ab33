module local/gpuop-crictl-test-binaries

go 1.26.8

require sigs.k8s.io/cri-tools v1.37.0 // indirect
