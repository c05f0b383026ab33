// containerd's drop-in with gpuop's own runtime handler `gpuop` (runc through
// gpuop-container-runtime): rendered from the default runc entry, brought to what gpuop wants,
// never from the nvidia handler.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include "absl/strings/str_replace.h"
#include "agent/runtime/containerd.h"
#include "agent/runtime/containerd_test_util.h"
#include "agent/runtime/test_util.h"

namespace gpuop::agent::runtime {
namespace {

using ::testing::HasSubstr;

constexpr const char* kGpuopBinary = kGpuopRuntimeBinary;

Options GpuopOptions() {
  Options options;
  options.add_gpuop_runtime = true;
  return options;
}

// A sample whose runc runtime has a state Root of its own besides SystemdCgroup: settings that a
// handler's containers must share with runc's.
std::string WithRuncRoot(const std::string& sample) {
  return absl::StrReplaceAll(
      sample,
      {{"SystemdCgroup = true", "SystemdCgroup = true\n Root = \"/run/containerd/runc-k8s\""}});
}

TEST(RuntimeContainerdTest, RendersTheGpuopHandlerInTheV2DropIn) {
  // containerd 1.x: the whole CRI table, gpuop's handler beside runc and the nvidia one.
  Options options = RuntimeOptions();
  options.add_gpuop_runtime = true;
  options.set_as_default = true;
  options.containerd_major = 1;
  const absl::StatusOr<std::string> drop_in =
      RenderContainerdDropIn(WithRuncRoot(Testdata("containerd_v2.toml")), {}, options);
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  ExpectGolden(*drop_in, "containerd_v2_gpuop_dropin.toml");

  const toml::table table = Parse(*drop_in);
  const auto containerd = table["plugins"]["io.containerd.grpc.v1.cri"]["containerd"];
  const auto gpuop = containerd["runtimes"]["gpuop"];
  EXPECT_EQ(gpuop["runtime_type"].value<std::string>(), "io.containerd.runc.v2");
  EXPECT_EQ(gpuop["privileged_without_host_devices"].value<bool>(), false);
  EXPECT_EQ(gpuop["options"]["BinaryName"].value<std::string>(), kGpuopBinary);
  EXPECT_EQ(gpuop["options"]["SystemdCgroup"].value<bool>(), true);
  EXPECT_EQ(gpuop["options"]["Root"].value<std::string>(), "/run/containerd/runc-k8s");
  // runc and the nvidia handler as they were; the default is the nvidia one, never gpuop's.
  EXPECT_FALSE(containerd["runtimes"]["runc"]["options"]["BinaryName"]);
  EXPECT_EQ(containerd["runtimes"]["nvidia"]["options"]["Root"].value<std::string>(),
            "/run/containerd/runc-k8s");
  EXPECT_EQ(containerd["default_runtime_name"].value<std::string>(), "nvidia");
}

TEST(RuntimeContainerdTest, RendersTheGpuopHandlerInTheV3DropIn) {
  // containerd 2.x merges key by key: the drop-in holds the whole new entry and nothing of runc.
  const absl::StatusOr<std::string> drop_in =
      RenderContainerdDropIn(WithRuncRoot(Testdata("containerd_v3.toml")), {}, GpuopOptions());
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  ExpectGolden(*drop_in, "containerd_v3_gpuop_dropin.toml");

  const toml::table table = Parse(*drop_in);
  const auto containerd = table["plugins"]["io.containerd.cri.v1.runtime"]["containerd"];
  ASSERT_TRUE(containerd["runtimes"].is_table());
  EXPECT_EQ(containerd["runtimes"].as_table()->size(), 1u);
  const auto gpuop = containerd["runtimes"]["gpuop"];
  EXPECT_EQ(gpuop["runtime_type"].value<std::string>(), "io.containerd.runc.v2");
  EXPECT_EQ(gpuop["sandboxer"].value<std::string>(), "podsandbox");
  EXPECT_EQ(gpuop["options"]["BinaryName"].value<std::string>(), kGpuopBinary);
  EXPECT_EQ(gpuop["options"]["SystemdCgroup"].value<bool>(), true);
  EXPECT_EQ(gpuop["options"]["Root"].value<std::string>(), "/run/containerd/runc-k8s");
  EXPECT_FALSE(containerd["default_runtime_name"]);
}

TEST(RuntimeContainerdTest, TheGpuopHandlerAloneWritesRuncOutForContainerd1) {
  // No file defines runc; a whole-table drop-in that adds a handler writes containerd's built-in
  // runc entry out, as for the nvidia handler.
  Options options = GpuopOptions();
  options.enable_cdi = false;
  options.containerd_major = 1;
  const absl::StatusOr<std::string> drop_in = RenderContainerdDropIn("version = 2\n", {}, options);
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table = Parse(*drop_in);
  const auto runtimes = table["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"];
  ASSERT_TRUE(runtimes["runc"].is_table());
  EXPECT_EQ(*runtimes["runc"].as_table(), (toml::table{{"runtime_type", "io.containerd.runc.v2"}}));
  EXPECT_EQ(runtimes["gpuop"]["options"]["BinaryName"].value<std::string>(), kGpuopBinary);
  EXPECT_FALSE(table["plugins"]["io.containerd.grpc.v1.cri"]["enable_cdi"]);
}

TEST(RuntimeContainerdTest, GpuopsHandlerIsBroughtToWhatGpuopWants) {
  // The node's files define both names: the nvidia handler is the node's and kept; gpuop's is
  // gpuop's own and set to what gpuop wants.
  const std::string main = WithRuncRoot(Testdata("containerd_v3.toml")) + R"(
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]
          BinaryName = "/usr/bin/nvidia-container-runtime"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.gpuop]
        runtime_type = "io.containerd.runc.v1"
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.gpuop.options]
          BinaryName = "/opt/old/gpuop-container-runtime"
)";
  Options options = RuntimeOptions();
  options.add_gpuop_runtime = true;
  std::vector<std::string> notes;
  const absl::StatusOr<std::string> drop_in = RenderContainerdDropIn(main, {}, options, &notes);
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table = Parse(*drop_in);
  const auto runtimes = table["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"];
  EXPECT_FALSE(runtimes["nvidia"]);
  EXPECT_EQ(runtimes["gpuop"]["runtime_type"].value<std::string>(), "io.containerd.runc.v2");
  EXPECT_EQ(runtimes["gpuop"]["options"]["BinaryName"].value<std::string>(), kGpuopBinary);
  EXPECT_EQ(runtimes["gpuop"]["options"]["Root"].value<std::string>(), "/run/containerd/runc-k8s");
  EXPECT_THAT(notes,
              ::testing::ElementsAre(
                  HasSubstr("kept the node's own runtime handler"),
                  "set the runtime handler plugins.\"io.containerd.cri.v1.runtime\".containerd."
                  "runtimes.gpuop to gpuop's (it differed; the name is gpuop's)"));

  // An entry that already is what gpuop wants (here from an imported file that holds gpuop's
  // handler as gpuop renders it): nothing to say, and nothing left for a merging drop-in.
  const std::string v3 = WithRuncRoot(Testdata("containerd_v3.toml"));
  const absl::StatusOr<std::string> first = RenderContainerdDropIn(v3, {}, GpuopOptions());
  ASSERT_TRUE(first.ok()) << first.status();
  notes.clear();
  const absl::StatusOr<std::string> same = RenderContainerdDropIn(
      v3, {{"/etc/containerd/conf.d/50-handlers.toml", *first}}, GpuopOptions(), &notes);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_TRUE(notes.empty());
  EXPECT_FALSE(Parse(*same)["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]) << *same;
}

TEST(RuntimeContainerdTest, GpuopsHandlerStartsFromRuncNeverFromTheNvidiaHandler) {
  // The node's default is its own nvidia handler: gpuop's entry copies runc's settings, not the
  // nvidia handler's.
  const std::string main = R"(version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "nvidia"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"
    Root = "/run/nvidia-runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    Root = "/run/containerd/runc-k8s"
)";
  Options options = GpuopOptions();
  options.containerd_major = 2;
  const absl::StatusOr<std::string> drop_in = RenderContainerdDropIn(main, {}, options);
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table = Parse(*drop_in);
  const auto containerd = table["plugins"]["io.containerd.grpc.v1.cri"]["containerd"];
  EXPECT_EQ(containerd["runtimes"]["gpuop"]["options"]["Root"].value<std::string>(),
            "/run/containerd/runc-k8s");
  EXPECT_EQ(containerd["runtimes"]["gpuop"]["options"]["BinaryName"].value<std::string>(),
            kGpuopBinary);
  EXPECT_FALSE(containerd["default_runtime_name"]);
}

TEST(RuntimeContainerdTest, AGpuopEntryOfTheWrongTypeIsRefused) {
  const absl::StatusOr<std::string> drop_in = RenderContainerdDropIn(
      "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\ncontainerd.runtimes.gpuop = 1\n", {},
      GpuopOptions());
  EXPECT_EQ(drop_in.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(drop_in.status()),
              HasSubstr(".containerd.runtimes.gpuop is an integer, expected a table"));
}

}  // namespace
}  // namespace gpuop::agent::runtime
