#include "test/fakes/kubelet/registration_rules.h"

#include <string>

#include <gtest/gtest.h>

namespace gpuop::fakes {
namespace {

struct NameCase {
  std::string name;
  bool valid;
};

// A DNS subdomain of `length` characters: labels of at most 63 characters.
std::string Domain(size_t length) {
  std::string domain;
  while (domain.size() + 61 < length) domain += std::string(60, 'a') + ".";
  return domain + std::string(length - domain.size(), 'b');
}

TEST(FakeKubeletRegistrationRulesTest, ExtendedResourceNames) {
  const NameCase cases[] = {
      {"nvidia.com/gpu", true},
      {"amd.com/gpu", true},
      {"nvidia.com/mig-1g.10gb", true},
      {"example.com/GPU_x-1", true},
      {"a/b", true},
      {"gpu", false},                    // no domain
      {"/gpu", false},                   // empty domain
      {"example.com/", false},           // empty name
      {"kubernetes.io/gpu", false},      // native namespace
      {"foo.kubernetes.io/gpu", false},  // contains "kubernetes.io/"
      {"k8s.io/gpu", false},             // reserved
      {"device.k8s.io/gpu", false},      // reserved
      {"requests.example.com/gpu", false},
      {"Example.com/gpu", false},  // domain must be lowercase
      {"example..com/gpu", false},
      {"-example.com/gpu", false},
      {"example.com/-gpu", false},
      {"example.com/gpu.", false},
      {"example.com/g/pu", false},
      {"example.com/gp u", false},
      {"example.com/" + std::string(63, 'a'), true},
      {"example.com/" + std::string(64, 'a'), false},
      {Domain(244) + "/gpu", true},
      {Domain(245) + "/gpu", false},  // "requests." + domain exceeds 253 characters
  };
  for (const NameCase& c : cases) {
    const absl::Status status = ValidateExtendedResourceName(c.name);
    EXPECT_EQ(status.ok(), c.valid) << c.name << ": " << status;
    if (!c.valid) {
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.name;
      EXPECT_NE(status.message().find(c.name), absl::string_view::npos) << status;
    }
  }
}

TEST(FakeKubeletRegistrationRulesTest, Endpoints) {
  EXPECT_TRUE(ValidateDevicePluginEndpoint("nvidia-gpu.sock").ok());
  EXPECT_TRUE(ValidateDevicePluginEndpoint("plugin").ok());
  for (const char* bad : {"", ".", "..", "../x.sock", "/var/lib/x.sock", "sub/x.sock",
                          "kubelet.sock", "kubelet_internal_checkpoint"}) {
    const absl::Status status = ValidateDevicePluginEndpoint(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << "\"" << bad << "\"";
  }
}

TEST(FakeKubeletRegistrationRulesTest, Versions) {
  EXPECT_TRUE(ValidateDevicePluginVersion("v1beta1").ok());
  for (const char* bad : {"", "v1", "v1alpha1", "V1beta1", "v1beta1 "}) {
    const absl::Status status = ValidateDevicePluginVersion(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find("v1beta1"), absl::string_view::npos) << status;
  }
}

}  // namespace
}  // namespace gpuop::fakes
