#include "test/fakes/node_objects.h"

#include "absl/strings/str_cat.h"

namespace gpuop::fakes {

using nlohmann::json;

json RealisticGpuNode(int index) {
  const std::string name = absl::StrCat("gpu-node-", index);
  const std::string zone = absl::StrCat("us-east-1", std::string(1, "abc"[index % 3]));
  json labels = {{"kubernetes.io/hostname", name},
                 {"kubernetes.io/os", "linux"},
                 {"kubernetes.io/arch", "amd64"},
                 {"beta.kubernetes.io/os", "linux"},
                 {"beta.kubernetes.io/arch", "amd64"},
                 {"beta.kubernetes.io/instance-type", "p5.48xlarge"},
                 {"node.kubernetes.io/instance-type", "p5.48xlarge"},
                 {"topology.kubernetes.io/region", "us-east-1"},
                 {"topology.kubernetes.io/zone", zone},
                 {"failure-domain.beta.kubernetes.io/region", "us-east-1"},
                 {"failure-domain.beta.kubernetes.io/zone", zone},
                 {"node-role.kubernetes.io/gpu", ""},
                 {"eks.amazonaws.com/nodegroup", absl::StrCat("gpu-pool-", index % 8)},
                 {"eks.amazonaws.com/capacityType", "ON_DEMAND"},
                 {"feature.node.kubernetes.io/pci-10de.present", "true"},
                 {"feature.node.kubernetes.io/cpu-cpuid.AVX512F", "true"},
                 {"feature.node.kubernetes.io/cpu-cpuid.AVX512BW", "true"},
                 {"feature.node.kubernetes.io/cpu-cpuid.AMXBF16", "true"},
                 {"feature.node.kubernetes.io/cpu-model.vendor_id", "Intel"},
                 {"feature.node.kubernetes.io/cpu-model.family", "6"},
                 {"feature.node.kubernetes.io/kernel-version.full", "6.1.0-27-cloud-amd64"},
                 {"feature.node.kubernetes.io/kernel-version.major", "6"},
                 {"feature.node.kubernetes.io/system-os_release.ID", "debian"},
                 {"feature.node.kubernetes.io/system-os_release.VERSION_ID", "12"},
                 {"feature.node.kubernetes.io/memory-numa", "true"},
                 {"feature.node.kubernetes.io/network-sriov.capable", "true"},
                 {"nvidia.com/gpu.present", "true"},
                 {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                 {"nvidia.com/gpu.count", "8"},
                 {"nvidia.com/gpu.memory", "81559"},
                 {"nvidia.com/gpu.family", "hopper"},
                 {"nvidia.com/gpu.compute.major", "9"},
                 {"nvidia.com/gpu.compute.minor", "0"},
                 {"nvidia.com/gpu.machine", "p5.48xlarge"},
                 {"nvidia.com/gpu.replicas", "1"},
                 {"nvidia.com/gpu.sharing-strategy", "none"},
                 {"nvidia.com/cuda.driver-version.full", "570.86.15"},
                 {"nvidia.com/cuda.driver-version.major", "570"},
                 {"nvidia.com/mig.capable", "true"},
                 {"nvidia.com/mig.strategy", "single"},
                 {"gpuop.io/gpu.present", "true"}};
  json images = json::array();
  for (int i = 0; i < 30; ++i) {
    images.push_back(
        {{"names",
          {absl::StrCat("registry.example.com/ml/training-image-", i,
                        "@sha256:0f3c5e8d9a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d"),
           absl::StrCat("registry.example.com/ml/training-image-", i, ":v1.", i)}},
         {"sizeBytes", 1'000'000'000 + i * 12'345'678}});
  }
  auto condition = [](const char* type, const char* status, const char* reason,
                      const char* message) {
    return json{{"type", type},
                {"status", status},
                {"lastHeartbeatTime", "2026-11-29T10:00:00Z"},
                {"lastTransitionTime", "2026-11-01T08:00:00Z"},
                {"reason", reason},
                {"message", message}};
  };
  const std::string ip =
      absl::StrCat("10.", (index >> 16) & 255, ".", (index >> 8) & 255, ".", index & 255);
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"uid", absl::StrCat("6f1e2d3c-4b5a-4697-8a8b-", 100000000000 + index)},
        {"resourceVersion", absl::StrCat(1000 + index)},
        {"creationTimestamp", "2026-11-01T08:00:00Z"},
        {"labels", labels},
        {"annotations",
         {{"node.alpha.kubernetes.io/ttl", "0"},
          {"volumes.kubernetes.io/controller-managed-attach-detach", "true"},
          {"kubeadm.alpha.kubernetes.io/cri-socket", "unix:///run/containerd/containerd.sock"},
          {"csi.volume.kubernetes.io/nodeid",
           absl::StrCat("{\"ebs.csi.aws.com\":\"i-0", index, "\"}")},
          {"gpuop.io/driver-upgrade-state", "upgrade-done"}}},
        {"managedFields",
         json::array({{{"manager", "kubelet"},
                       {"operation", "Update"},
                       {"apiVersion", "v1"},
                       {"time", "2026-11-29T10:00:00Z"},
                       {"fieldsType", "FieldsV1"},
                       {"fieldsV1",
                        {{"f:status",
                          {{"f:conditions", json::object()},
                           {"f:images", json::object()},
                           {"f:nodeInfo", json::object()},
                           {"f:allocatable", json::object()},
                           {"f:capacity", json::object()}}}}}},
                      {{"manager", "gpu-feature-discovery"},
                       {"operation", "Apply"},
                       {"apiVersion", "v1"},
                       {"time", "2026-11-29T09:00:00Z"},
                       {"fieldsType", "FieldsV1"},
                       {"fieldsV1", {{"f:metadata", {{"f:labels", json::object()}}}}}}})}}},
      {"spec",
       {{"podCIDR", absl::StrCat("10.244.", index % 256, ".0/24")},
        {"providerID", absl::StrCat("aws:///us-east-1a/i-0", index)},
        {"taints",
         json::array(
             {{{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}}})}}},
      {"status",
       {{"capacity",
         {{"cpu", "192"},
          {"memory", "2097152000Ki"},
          {"pods", "110"},
          {"ephemeral-storage", "3750000000Ki"},
          {"hugepages-1Gi", "0"},
          {"hugepages-2Mi", "0"},
          {"nvidia.com/gpu", "8"},
          {"vpc.amazonaws.com/efa", "32"}}},
        {"allocatable",
         {{"cpu", "191450m"},
          {"memory", "2060000000Ki"},
          {"pods", "110"},
          {"ephemeral-storage", "3450000000Ki"},
          {"hugepages-1Gi", "0"},
          {"hugepages-2Mi", "0"},
          {"nvidia.com/gpu", "8"},
          {"vpc.amazonaws.com/efa", "32"}}},
        {"conditions",
         json::array({condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                                "kubelet has sufficient memory available"),
                      condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                                "kubelet has no disk pressure"),
                      condition("PIDPressure", "False", "KubeletHasSufficientPID",
                                "kubelet has sufficient PID available"),
                      condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
                      condition("GPUHealthy", "True", "AllGPUsHealthy", "8 of 8 GPUs healthy")})},
        {"addresses",
         json::array({{{"type", "InternalIP"}, {"address", ip}},
                      {{"type", "Hostname"}, {"address", name}},
                      {{"type", "InternalDNS"}, {"address", name + ".ec2.internal"}}})},
        {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", 10250}}}}},
        {"nodeInfo",
         {{"machineID", absl::StrCat("ec2", index, "a1b2c3d4e5f60718293a4b5c6d7e8f9")},
          {"systemUUID", absl::StrCat("ec2", index, "-a1b2-c3d4-e5f6-0718293a4b5c")},
          {"bootID", absl::StrCat("b00t", index, "-1111-2222-3333-444455556666")},
          {"kernelVersion", "6.1.0-27-cloud-amd64"},
          {"osImage", "Debian GNU/Linux 12 (bookworm)"},
          {"containerRuntimeVersion", "containerd://2.0.4"},
          {"kubeletVersion", "v1.36.3"},
          {"kubeProxyVersion", "v1.36.3"},
          {"operatingSystem", "linux"},
          {"architecture", "amd64"}}},
        {"images", images}}}};
}

json KwokGpuNode(const std::string& name, int gpus) {
  json node = RealisticGpuNode(0);
  json& meta = node["metadata"];
  meta.erase("uid");
  meta.erase("resourceVersion");
  meta.erase("creationTimestamp");
  meta.erase("managedFields");
  meta["name"] = name;
  meta["labels"]["kubernetes.io/hostname"] = name;
  meta["labels"]["type"] = "kwok";
  meta["annotations"]["kwok.x-k8s.io/node"] = "fake";
  node["spec"].erase("taints");
  node["spec"].erase("providerID");
  const std::string count = absl::StrCat(gpus);
  node["status"]["capacity"]["nvidia.com/gpu"] = count;
  node["status"]["allocatable"]["nvidia.com/gpu"] = count;
  node["status"].erase("conditions");
  return node;
}

}  // namespace gpuop::fakes
