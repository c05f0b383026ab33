#include "test/fakes/kubelet/fake_kubelet_test_util.h"

#include <cerrno>
#include <cstring>
#include <system_error>

#include <grpcpp/grpcpp.h>
#include <stdlib.h>

namespace gpuop::fakes {

ShortTempDir::ShortTempDir() {
  std::string pattern = "/tmp/fkl-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << pattern << ": " << std::strerror(errno);
    return;
  }
  path_ = pattern;
}

ShortTempDir::~ShortTempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

void FakeKubeletTestBase::StartKubelet(FakeKubeletOptions options) {
  kubelet_ = std::make_unique<FakeKubelet>(std::move(options));
  const absl::Status started = kubelet_->Start();
  ASSERT_TRUE(started.ok()) << started;
}

std::unique_ptr<TestDevicePlugin> FakeKubeletTestBase::ServePlugin(
    v1beta1::DevicePluginOptions options, std::string endpoint, std::string resource) {
  auto plugin =
      std::make_unique<TestDevicePlugin>(TestDevicePluginOptions{.dir = plugin_dir(),
                                                                 .endpoint = std::move(endpoint),
                                                                 .resource = std::move(resource),
                                                                 .options = std::move(options)});
  const absl::Status served = plugin->Serve();
  EXPECT_TRUE(served.ok()) << served;
  return plugin;
}

std::unique_ptr<v1::PodResourcesLister::Stub> FakeKubeletTestBase::PodResourcesClient() const {
  return v1::PodResourcesLister::NewStub(grpc::CreateChannel(
      "unix:" + pod_resources_socket().string(), grpc::InsecureChannelCredentials()));
}

}  // namespace gpuop::fakes
