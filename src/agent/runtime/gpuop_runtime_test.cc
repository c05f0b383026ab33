#include "agent/runtime/gpuop_runtime.h"

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/runtime/test_util.h"

namespace gpuop::agent::runtime {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr char kInstalled[] = "/var/lib/gpuop/bin/gpuop-container-runtime";
constexpr char kHook[] = "/var/lib/gpuop/bin/gpuop-cdi-hook";

class RuntimeGpuopRuntimeTest : public ::testing::Test {
 protected:
  RuntimeGpuopRuntimeTest() {
    image_.Put(kSource,
               "\x7f"
               "ELF wrapper v1");
  }

  static constexpr char kSource[] = "/usr/local/bin/gpuop-container-runtime";
  TempRoot image_;  // gpuop's image
  TempRoot host_;
  HostFiles files_{host_.path()};
};

TEST_F(RuntimeGpuopRuntimeTest, InstallsOnceWithMode0755AndRemovesOnlyItsFile) {
  host_.Put(kHook, "the CDI hook");
  const absl::StatusOr<bool> first = InstallGpuopRuntime(files_, image_ / kSource, Options{});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(*first);
  EXPECT_EQ(host_.Get(kInstalled),
            "\x7f"
            "ELF wrapper v1");
  EXPECT_EQ(fs::status(host_ / kInstalled).permissions() & fs::perms::mask, fs::perms(0755));
  const absl::StatusOr<bool> again = InstallGpuopRuntime(files_, image_ / kSource, Options{});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(*again);

  image_.Put(kSource,
             "\x7f"
             "ELF wrapper v2");  // a new image
  EXPECT_TRUE(InstallGpuopRuntime(files_, image_ / kSource, Options{}).value_or(false));
  EXPECT_EQ(host_.Get(kInstalled),
            "\x7f"
            "ELF wrapper v2");

  const absl::StatusOr<bool> removed = RemoveGpuopRuntime(files_, Options{});
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_TRUE(*removed);
  EXPECT_FALSE(host_.Exists(kInstalled));
  EXPECT_EQ(host_.Get(kHook), "the CDI hook");  // the directory and its other files stay
  const absl::StatusOr<bool> none = RemoveGpuopRuntime(files_, Options{});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(*none);
}

TEST_F(RuntimeGpuopRuntimeTest, InstallsWhereTheOptionsSay) {
  Options options;
  options.gpuop_runtime_binary = "/opt/gpuop/gpuop-container-runtime";
  ASSERT_TRUE(InstallGpuopRuntime(files_, image_ / kSource, options).ok());
  EXPECT_TRUE(host_.Exists("/opt/gpuop/gpuop-container-runtime"));
  EXPECT_FALSE(host_.Exists(kInstalled));
}

TEST_F(RuntimeGpuopRuntimeTest, AMissingSourceIsNotFoundNamingIt) {
  const fs::path missing = image_ / "/usr/local/bin/nothing";
  const absl::StatusOr<bool> result = InstallGpuopRuntime(files_, missing, Options{});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(result.status()), HasSubstr("install gpuop-container-runtime"));
  EXPECT_THAT(Message(result.status()), HasSubstr(missing.string()));
  EXPECT_FALSE(host_.Exists(kInstalled));
}

TEST_F(RuntimeGpuopRuntimeTest, APathOutsideTheHostRootIsRefused) {
  for (const char* bad : {"/var/lib/../../../tmp/x", "var/lib/gpuop/x", "/var/lib/gpuop/"}) {
    Options options;
    options.gpuop_runtime_binary = bad;
    const absl::StatusOr<bool> installed = InstallGpuopRuntime(files_, image_ / kSource, options);
    EXPECT_EQ(installed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(Message(installed.status()), HasSubstr("gpuop_runtime_binary")) << bad;
    EXPECT_EQ(RemoveGpuopRuntime(files_, options).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST_F(RuntimeGpuopRuntimeTest, SomethingOtherThanAFileIsNotRemoved) {
  fs::create_directories(host_ / kInstalled);
  const absl::StatusOr<bool> removed = RemoveGpuopRuntime(files_, Options{});
  EXPECT_EQ(removed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(fs::is_directory(host_ / kInstalled));
}

}  // namespace
}  // namespace gpuop::agent::runtime
