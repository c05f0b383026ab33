#include "agent/cdi/validate.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::agent::cdi {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(CdiValidateTest, DeviceNameRules) {
  for (const char* good : {"0", "all", "GPU-1f0e9c2a-57a3-4a39-8f1b-0a5b2f3c4d5e", "0:1",
                           "MIG-4b5c6d7e-0000-5000-8000-000000000001", "a_b-c.d:e", "x"}) {
    EXPECT_TRUE(ValidateDeviceName(good).ok()) << good;
  }
  struct Case {
    const char* name;
    const char* rule;
  };
  const Case bad[] = {
      {"", "CDI device name is empty"},
      {"-0", "CDI device name \"-0\" must start with a letter or digit"},
      {"0:", "CDI device name \"0:\" must end with a letter or digit"},
      {"gpu 0", "CDI device name \"gpu 0\" contains ' '"},
      {"gpu/0", "contains '/'"},
      {"gpu=0", "contains '='"},
  };
  for (const Case& c : bad) {
    const absl::Status status = ValidateDeviceName(c.name);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(status.message(), HasSubstr(c.rule)) << c.name;
  }
}

TEST(CdiValidateTest, VendorClassAndKindRules) {
  EXPECT_TRUE(ValidateKind("nvidia.com/gpu").ok());
  EXPECT_TRUE(ValidateKind("k8s.device-plugin.nvidia.com/gpu").ok());
  EXPECT_TRUE(ValidateKind("amd.com/gpu_2").ok());
  struct Case {
    std::string kind;
    const char* rule;
  };
  const Case bad[] = {
      {"nvidia.com", "CDI kind \"nvidia.com\" must be <vendor>/<class>"},
      {"/gpu", "CDI vendor is empty"},
      {"nvidia.com/", "CDI class is empty"},
      {"1nvidia.com/gpu", "CDI vendor \"1nvidia.com\" must start with a letter"},
      {"nvidia.com./gpu", "CDI vendor \"nvidia.com.\" must end with a letter or digit"},
      {"nvidia.com/g:pu", "CDI class \"g:pu\" contains ':'"},
      {"nvidia.com/gpu/x", "CDI class \"gpu/x\" contains '/'"},
      {"nvidia.com/" + std::string(64, 'g'), "is 64 characters long; the limit is 63"},
      {std::string(254, 'v') + "/gpu", "is 254 characters long; the limit is 253"},
  };
  for (const Case& c : bad) {
    const absl::Status status = ValidateKind(c.kind);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.kind;
    EXPECT_THAT(status.message(), HasSubstr(c.rule)) << c.kind;
  }
  EXPECT_TRUE(ValidateClassName(std::string(63, 'g')).ok());
}

TEST(CdiValidateTest, SpecReportsEveryProblemAtOnce) {
  const ContainerEdits edits{.device_nodes = {{.path = "/dev/nvidia0"}}};
  Spec spec{.cdi_version = "0.3.0", .kind = "nvidia.com/gpu"};
  spec.devices = {{.name = "0", .container_edits = edits},
                  {.name = "0", .container_edits = edits},
                  {.name = "0:", .container_edits = edits},
                  {.name = "empty"}};
  spec.container_edits = {
      .env = {"=x", "NOEQUALS"},
      .device_nodes = {{.path = "dev/relative", .type = "x", .permissions = "rwx"}},
      .mounts = {{.host_path = "/h"}},
      .hooks = {{.hook_name = "prestop", .path = "hook", .env = {"BAD"}, .timeout = 0}}};
  const absl::Status status = ValidateSpec(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      status.message(),
      AllOf(
          HasSubstr("invalid CDI spec nvidia.com/gpu: "),
          HasSubstr("CDI version 0.3.0 is too old for the fields used; it must be at least 0.5.0"),
          HasSubstr("device \"0\" is defined twice"),
          HasSubstr("CDI device name \"0:\" must end with a letter or digit"),
          HasSubstr("device \"empty\" has no container edits"),
          HasSubstr("spec containerEdits: env entry \"=x\" is not NAME=value"),
          HasSubstr("env entry \"NOEQUALS\" is not NAME=value"),
          HasSubstr("device node path \"dev/relative\" is not absolute"),
          HasSubstr("has type \"x\"; expected b, c, u or p"),
          HasSubstr("has permissions \"rwx\"; expected a subset of rwm"),
          HasSubstr("mount \"/h\" -> \"\" needs both hostPath and containerPath"),
          HasSubstr("has unknown hookName \"prestop\""),
          HasSubstr("prestop hook path \"hook\" is not absolute"),
          HasSubstr("has timeout 0; it must be positive"),
          HasSubstr("hook hook env entry \"BAD\" is not NAME=value")));
}

TEST(CdiValidateTest, SpecVersionMustBeKnownAndNoDevicesIsInvalid) {
  Spec spec{.cdi_version = "0.9.0", .kind = "nvidia.com/gpu"};
  EXPECT_THAT(ValidateSpec(spec).message(),
              AllOf(HasSubstr("CDI version \"0.9.0\" is not a known version"),
                    HasSubstr("spec has no devices")));
  spec.cdi_version = "latest";
  EXPECT_THAT(ValidateSpec(spec).message(), HasSubstr("CDI version \"latest\": expected"));
}

TEST(CdiValidateTest, MinimalValidSpec) {
  Spec spec{.cdi_version = "v0.5.0", .kind = "nvidia.com/gpu"};
  spec.devices = {{.name = "0", .container_edits = {.device_nodes = {{.path = "/dev/nvidia0"}}}}};
  EXPECT_TRUE(ValidateSpec(spec).ok()) << ValidateSpec(spec);
  spec.cdi_version = "0.4.0";
  EXPECT_FALSE(ValidateSpec(spec).ok());
}

}  // namespace
}  // namespace gpuop::agent::cdi
