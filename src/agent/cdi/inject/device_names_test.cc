#include "agent/cdi/inject/device_names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::agent::cdi::inject {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(DeviceNamesTest, ParsesFullyQualifiedNames) {
  const std::vector<std::pair<std::string, QualifiedName>> good = {
      {"nvidia.com/gpu=0", {"nvidia.com", "gpu", "0"}},
      {"nvidia.com/gpu=0:1", {"nvidia.com", "gpu", "0:1"}},
      {"management.gpuop.io/gpu=mig-monitor", {"management.gpuop.io", "gpu", "mig-monitor"}},
      {"vendor_1.example/class-2=GPU-1f0e.x_y", {"vendor_1.example", "class-2", "GPU-1f0e.x_y"}},
      {"a/b=c=d", {"a", "b", "c=d"}},  // splits at the first '=': '=' is then not allowed
  };
  for (const auto& [text, want] : good) {
    StatusOr<QualifiedName> name = ParseQualifiedName(text);
    if (text == "a/b=c=d") {
      ASSERT_FALSE(name.ok());
      EXPECT_THAT(name.status().message(), HasSubstr("contains '='"));
      continue;
    }
    ASSERT_TRUE(name.ok()) << text << ": " << name.status().message();
    EXPECT_EQ(*name, want) << text;
    EXPECT_EQ(name->full(), text);
  }
}

TEST(DeviceNamesTest, RejectsBadNamesNamingThemAndTheRule) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"nvidia.com/gpu", "not a fully qualified name"},
      {"gpu=0", "not a fully qualified name"},
      {"nvidia.com/=0", "class is empty"},
      {"/gpu=0", "vendor is empty"},
      {"nvidia.com/gpu=", "device name is empty"},
      {"1nvidia.com/gpu=0", "must start with a letter"},
      {"nvidia.com-/gpu=0", "must end with a letter or digit"},
      {"nvidia.com/g:pu=0", "contains ':'"},
      {"nvidia.com/gpu=0:", "must end with a letter or digit"},
      {"nvidia.com/gpu=-0", "must start with a letter or digit"},
      {"nvidia.com/gpu=a b", "contains ' '"},
      {"nvidia.com/gpu/x=0", "contains '/'"},
      {"nvidia.com/" + std::string(64, 'g') + "=0", "the limit is 63"},
      {std::string(254, 'v') + "/gpu=0", "the limit is 253"},
  };
  for (const auto& [text, rule] : bad) {
    StatusOr<QualifiedName> name = ParseQualifiedName(text);
    ASSERT_FALSE(name.ok()) << text;
    EXPECT_THAT(name.status().message(), HasSubstr(rule)) << text;
    EXPECT_THAT(name.status().message(), HasSubstr(text.substr(0, 20))) << text;
  }
}

TEST(DeviceNamesTest, ValidatesKinds) {
  EXPECT_TRUE(ValidateKind("management.gpuop.io/gpu").ok());
  EXPECT_THAT(ValidateKind("gpu").message(), HasSubstr("is not <vendor>/<class>"));
  EXPECT_THAT(ValidateKind("a/b/c").message(), HasSubstr("contains '/'"));
}

TEST(DeviceNamesTest, RequestsAreSplitTrimmedAndDeduplicated) {
  StatusOr<std::vector<QualifiedName>> names = ParseDeviceRequests(
      "management.gpuop.io/gpu=all, management.gpuop.io/gpu=mig-monitor,,"
      "management.gpuop.io/gpu=all,");
  ASSERT_TRUE(names.ok()) << names.status().message();
  EXPECT_THAT(*names, ElementsAre(QualifiedName{"management.gpuop.io", "gpu", "all"},
                                  QualifiedName{"management.gpuop.io", "gpu", "mig-monitor"}));
  StatusOr<std::vector<QualifiedName>> empty = ParseDeviceRequests(" , ");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(DeviceNamesTest, ABadRequestNamesTheVariableAndTheName) {
  StatusOr<std::vector<QualifiedName>> names =
      ParseDeviceRequests("nvidia.com/gpu=0,nvidia.com/gpu=0?");
  ASSERT_FALSE(names.ok());
  EXPECT_THAT(names.status().message(), HasSubstr("GPUOP_CDI_DEVICES"));
  EXPECT_THAT(names.status().message(), HasSubstr("\"nvidia.com/gpu=0?\""));
}

}  // namespace
}  // namespace gpuop::agent::cdi::inject
