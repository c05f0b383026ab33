#include "agent/mps/root.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::agent::mps {
namespace {

TEST(MpsRootTest, NvidiasLayoutWithTheResourceNameAsDirectories) {
  const Root root("/run/nvidia/mps");
  EXPECT_EQ(root.PipeDir("nvidia.com/gpu"), "/run/nvidia/mps/nvidia.com/gpu/pipe");
  EXPECT_EQ(root.LogDir("nvidia.com/gpu"), "/run/nvidia/mps/nvidia.com/gpu/log");
  EXPECT_EQ(root.StartedFile("nvidia.com/gpu.shared"),
            "/run/nvidia/mps/nvidia.com/gpu.shared/.started");
  EXPECT_EQ(root.ShmDir(), "/run/nvidia/mps/shm");
  EXPECT_EQ(root.ReadyFile(), "/run/nvidia/mps/.ready");
}

TEST(MpsRootTest, ReadyFileRoundTrips) {
  const ReadyResources resources = {
      {"nvidia.com/gpu", {{"GPU-b", 4}, {"GPU-a", 4}}},
      {"nvidia.com/gpu.shared", {{"GPU-c", 2}}},
  };
  const std::string text = FormatReady(resources);
  EXPECT_EQ(text, "nvidia.com/gpu GPU-a=4,GPU-b=4\nnvidia.com/gpu.shared GPU-c=2\n");
  EXPECT_EQ(ParseReady(text), resources);
}

TEST(MpsRootTest, MalformedReadyLinesAreSkipped) {
  const ReadyResources parsed = ParseReady(
      "nvidia.com/gpu GPU-a=4\ngarbage\nnvidia.com/x GPU-a=zero\n"
      "nvidia.com/y GPU-a=0\nnvidia.com/z =3\n\xff\xfe 1 2 3\n");
  EXPECT_EQ(parsed, (ReadyResources{{"nvidia.com/gpu", {{"GPU-a", 4}}}}));
}

}  // namespace
}  // namespace gpuop::agent::mps
