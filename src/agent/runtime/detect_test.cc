#include "agent/runtime/detect.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/runtime/test_util.h"

namespace gpuop::agent::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Detection Detect(const TempRoot& root) {
  absl::StatusOr<Detection> detection = DetectRuntime(root.path());
  EXPECT_TRUE(detection.ok()) << detection.status();
  return detection.ok() ? *detection : Detection{};
}

TEST(RuntimeDetectTest, NothingOnAnEmptyRoot) {
  TempRoot root;
  const Detection detection = Detect(root);
  EXPECT_FALSE(detection.runtime.has_value());
  EXPECT_TRUE(detection.present.empty());
  EXPECT_THAT(detection.reason, HasSubstr("no container runtime found"));
}

TEST(RuntimeDetectTest, OneRuntimeBySocketOrConfig) {
  struct Case {
    std::string path;
    Runtime runtime;
    std::string evidence;
  };
  for (const Case& c : std::vector<Case>{
           {"/run/containerd/containerd.sock", Runtime::kContainerd,
            "containerd: socket /run/containerd/containerd.sock"},
           {"/var/run/containerd/containerd.sock", Runtime::kContainerd,
            "containerd: socket /var/run/containerd/containerd.sock"},
           {"/etc/containerd/config.toml", Runtime::kContainerd,
            "containerd: /etc/containerd/config.toml"},
           {"/run/crio/crio.sock", Runtime::kCrio, "cri-o: socket /run/crio/crio.sock"},
           {"/etc/crio/crio.conf", Runtime::kCrio, "cri-o: /etc/crio"},
           {"/var/run/docker.sock", Runtime::kDocker, "docker: socket /var/run/docker.sock"},
           {"/etc/docker/daemon.json", Runtime::kDocker, "docker: /etc/docker/daemon.json"}}) {
    TempRoot root;
    root.Put(c.path, "");
    const Detection detection = Detect(root);
    EXPECT_EQ(detection.runtime, c.runtime) << c.path;
    EXPECT_THAT(detection.reason, HasSubstr("only")) << c.path;
    EXPECT_THAT(detection.evidence, ElementsAre(c.evidence));
  }
}

TEST(RuntimeDetectTest, SeveralRuntimesPreferContainerd) {
  TempRoot root;
  root.Put("/run/docker.sock", "");
  root.Put("/run/containerd/containerd.sock", "");
  root.Put("/run/crio/crio.sock", "");
  const Detection detection = Detect(root);
  EXPECT_EQ(detection.runtime, Runtime::kContainerd);
  EXPECT_THAT(detection.present,
              ElementsAre(Runtime::kContainerd, Runtime::kCrio, Runtime::kDocker));
  EXPECT_THAT(detection.reason, HasSubstr("several runtimes are present (containerd, cri-o, "
                                          "docker)"));
  EXPECT_THAT(detection.reason, HasSubstr("by preference (containerd > CRI-O > Docker)"));
}

TEST(RuntimeDetectTest, ASocketBeatsConfigurationFilesAlone) {
  TempRoot root;
  root.Put("/etc/containerd/config.toml", "");
  root.Put("/run/docker.sock", "");
  const Detection detection = Detect(root);
  EXPECT_EQ(detection.runtime, Runtime::kDocker);
  EXPECT_THAT(detection.reason, HasSubstr("the only one with a socket"));
}

TEST(RuntimeDetectTest, TheKubeletsEndpointDecides) {
  struct Case {
    std::string file;
    std::string content;
    std::optional<Runtime> runtime;
  };
  const std::vector<Case> cases = {
      {"/var/lib/kubelet/kubeadm-flags.env",
       "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///var/run/crio/crio.sock "
       "--pod-infra-container-image=registry.k8s.io/pause:3.9\"\n",
       Runtime::kCrio},
      {"/var/lib/kubelet/config.yaml",
       "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
       "containerRuntimeEndpoint: \"unix:///run/crio/crio.sock\"\n",
       Runtime::kCrio},
      {"/etc/default/kubelet",
       "KUBELET_EXTRA_ARGS=--container-runtime-endpoint unix:///run/cri-dockerd.sock\n",
       Runtime::kDocker},
      {"/var/lib/kubelet/config.yaml",
       "# containerRuntimeEndpoint: unix:///run/crio/crio.sock\n"
       "containerRuntimeEndpoint: unix:///run/containerd/containerd.sock\n",
       Runtime::kContainerd},
      {"/var/lib/kubelet/config.yaml",
       "containerRuntimeEndpoint: unix:///run/k3s/containerd/containerd.sock\n", std::nullopt},
  };
  for (const Case& c : cases) {
    TempRoot root;
    root.Put("/run/containerd/containerd.sock", "");
    root.Put("/run/crio/crio.sock", "");
    root.Put(c.file, c.content);
    const Detection detection = Detect(root);
    EXPECT_EQ(detection.runtime, c.runtime) << c.content;
    EXPECT_THAT(detection.reason, HasSubstr(c.file));
    if (!c.runtime.has_value()) {
      EXPECT_THAT(detection.reason, HasSubstr("not a runtime gpuop configures"));
    }
  }
}

TEST(RuntimeDetectTest, FlagsOverrideTheKubeletConfigFile) {
  TempRoot root;
  root.Put("/var/lib/kubelet/config.yaml",
           "containerRuntimeEndpoint: unix:///run/containerd/containerd.sock\n");
  root.Put("/var/lib/kubelet/kubeadm-flags.env",
           "KUBELET_KUBEADM_ARGS=--container-runtime-endpoint=unix:///run/crio/crio.sock\n");
  EXPECT_EQ(Detect(root).runtime, Runtime::kCrio);
}

TEST(RuntimeDetectTest, IgnoresVarRunWhenItIsALink) {
  TempRoot root;
  std::filesystem::create_directories(root / "/var");
  // A link that would resolve outside the root; the probe must not follow it.
  std::filesystem::create_directory_symlink(root / "/elsewhere", root / "/var/run");
  root.Put("/elsewhere/docker.sock", "");
  const Detection detection = Detect(root);
  EXPECT_FALSE(detection.runtime.has_value());
}

}  // namespace
}  // namespace gpuop::agent::runtime
