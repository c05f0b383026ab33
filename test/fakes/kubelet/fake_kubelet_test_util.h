#ifndef GPUOP_TEST_FAKES_KUBELET_FAKE_KUBELET_TEST_UTIL_H_
#define GPUOP_TEST_FAKES_KUBELET_FAKE_KUBELET_TEST_UTIL_H_

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "proto/podresources/v1/api.grpc.pb.h"
#include "test/fakes/kubelet/fake_kubelet.h"
#include "test/fakes/kubelet/test_device_plugin.h"

namespace gpuop::fakes {

#define GPUOP_ASSERT_OK(expr)                                       \
  do {                                                              \
    const ::absl::Status gpuop_assert_status_ = (expr);             \
    ASSERT_TRUE(gpuop_assert_status_.ok()) << gpuop_assert_status_; \
  } while (false)

inline void PrintTo(const KubeletDevice& device, std::ostream* os) {
  *os << "{" << device.id << (device.healthy ? " healthy" : " unhealthy") << " numa [";
  for (int64_t node : device.numa_nodes) *os << " " << node;
  *os << " ]}";
}

// Generous: only a broken fake waits this long.
inline constexpr absl::Duration kWait = absl::Seconds(10);

// A fresh directory directly under /tmp (not $TMPDIR, which may be too long for the unix
// socket paths inside it), removed with its contents.
class ShortTempDir {
 public:
  ShortTempDir();
  ~ShortTempDir();
  ShortTempDir(const ShortTempDir&) = delete;
  ShortTempDir& operator=(const ShortTempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A temp tree with <tmp>/device-plugins and <tmp>/pod-resources/kubelet.sock, a FakeKubelet on
// it, and helpers to start plugins and read PodResources over gRPC.
class FakeKubeletTestBase : public ::testing::Test {
 protected:
  std::filesystem::path plugin_dir() const { return dir_.path() / "device-plugins"; }
  std::filesystem::path pod_resources_socket() const {
    return dir_.path() / "pod-resources" / "kubelet.sock";
  }
  FakeKubeletOptions KubeletOptions() const {
    return {.device_plugin_dir = plugin_dir(), .pod_resources_socket = pod_resources_socket()};
  }
  // Creates and starts kubelet_ (failing the test when it does not start).
  void StartKubelet(FakeKubeletOptions options);
  void StartKubelet() { StartKubelet(KubeletOptions()); }

  // A plugin serving on <plugin dir>/<endpoint>, not yet registered.
  std::unique_ptr<TestDevicePlugin> ServePlugin(v1beta1::DevicePluginOptions options = {},
                                                std::string endpoint = "test-gpu.sock",
                                                std::string resource = "example.com/gpu");

  std::unique_ptr<v1::PodResourcesLister::Stub> PodResourcesClient() const;

  ShortTempDir dir_;
  std::unique_ptr<FakeKubelet> kubelet_;
};

}  // namespace gpuop::fakes

#endif  // GPUOP_TEST_FAKES_KUBELET_FAKE_KUBELET_TEST_UTIL_H_
