#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/file.h>
#include <toml++/toml.h>
#include <unistd.h>

#include "absl/strings/str_replace.h"
#include "agent/runtime/configurator.h"
#include "agent/runtime/configurator_test_util.h"
#include "agent/runtime/containerd.h"
#include "agent/runtime/crio.h"
#include "agent/runtime/docker.h"
#include "agent/runtime/fake_restarter.h"
#include "agent/runtime/test_util.h"
#include "agent/runtime/toml_util.h"

namespace gpuop::agent::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kGpuopBinary = kGpuopRuntimeBinary;

// CDI and gpuop's handler; the nvidia handler too when `with_nvidia`.
Options GpuopOptions(bool with_nvidia = false) {
  Options options = with_nvidia ? GpuOptions() : Options{};
  options.add_gpuop_runtime = true;
  options.containerd_major = 1;
  return options;
}

// A sample whose runc runtime has a state Root besides SystemdCgroup.
std::string WithRuncRoot(const std::string& sample) {
  return absl::StrReplaceAll(
      sample,
      {{"SystemdCgroup = true", "SystemdCgroup = true\nRoot = \"/run/containerd/runc-k8s\""}});
}

TEST_F(RuntimeConfiguratorTest, ForHostKeepsGpuopsHandlerOnlyWhereItsBinaryIs) {
  std::vector<std::string> notes;
  Options kept = ForHost(HostFiles(root_.path()), GpuopOptions(/*with_nvidia=*/true), notes);
  EXPECT_FALSE(kept.add_gpuop_runtime);
  EXPECT_TRUE(kept.add_nvidia_runtime);  // its binary is there
  EXPECT_THAT(notes, ElementsAre("no gpuop runtime handler: "
                                 "/var/lib/gpuop/bin/gpuop-container-runtime is not on the host "
                                 "(`gpuop-agent runtime configure --gpuop-runtime` installs it "
                                 "from gpuop's image)"));

  // Neither a file that is not executable nor a directory is a program.
  root_.Put(kGpuopBinary, "not a program\n");
  notes.clear();
  EXPECT_FALSE(ForHost(HostFiles(root_.path()), GpuopOptions(), notes).add_gpuop_runtime);
  fs::remove(root_ / kGpuopBinary);
  fs::create_directories(root_ / kGpuopBinary);
  fs::permissions(root_ / kGpuopBinary, fs::perms::all);
  EXPECT_FALSE(ForHost(HostFiles(root_.path()), GpuopOptions(), notes).add_gpuop_runtime);
  EXPECT_EQ(notes.size(), 2u);

  fs::remove(root_ / kGpuopBinary);
  PutBinary(root_, kGpuopBinary);
  notes.clear();
  kept = ForHost(HostFiles(root_.path()), GpuopOptions(), notes);
  EXPECT_TRUE(kept.add_gpuop_runtime);
  EXPECT_EQ(kept.gpuop_runtime_binary, kGpuopBinary);
  EXPECT_TRUE(notes.empty());
}

TEST_F(RuntimeConfiguratorTest, WithoutItsBinaryGpuopsHandlerAloneTouchesNothing) {
  root_.Put(kContainerdConfigPath, Testdata("containerd_v3.toml"));
  const std::string before = root_.Snapshot();
  Options options = GpuopOptions();
  options.enable_cdi = false;
  const absl::StatusOr<ChangeReport> report = Configure(Runtime::kContainerd, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->Changed());
  EXPECT_THAT(report->Summary(), HasSubstr("note: no gpuop runtime handler"));
  EXPECT_EQ(root_.Snapshot(), before);
  EXPECT_TRUE(restarter_.calls.empty());
}

class RuntimeConfiguratorGpuopContainerdTest : public RuntimeConfiguratorTest,
                                               public ::testing::WithParamInterface<std::string> {};

TEST_P(RuntimeConfiguratorGpuopContainerdTest, ConfigureIsIdempotentAndReversible) {
  const std::string original = WithRuncRoot(Testdata(GetParam()));
  root_.Put(kContainerdConfigPath, original);
  PutBinary(root_, kGpuopBinary);
  const std::string before = root_.Snapshot();
  const Options options = GpuopOptions(/*with_nvidia=*/true);
  EXPECT_THAT(States(Status(Runtime::kContainerd, options)),
              ElementsAre(FileState::kNotConfigured, FileState::kNotConfigured));

  const absl::StatusOr<ChangeReport> first = Configure(Runtime::kContainerd, options);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->Changed());
  EXPECT_EQ(root_.Get(kContainerdDropInPath),
            RenderContainerdDropIn(original, {}, options).value_or(""));
  // The handler containerd reads, whichever way it combines the files.
  const std::string cri_plugin = InspectContainerdConfig(original)->cri_plugin;
  toml::table effective = toml::parse(original);
  DeepMerge(effective, toml::parse(*root_.Get(kContainerdDropInPath)));
  const auto runtimes = effective["plugins"][cri_plugin]["containerd"]["runtimes"];
  EXPECT_EQ(runtimes["gpuop"]["runtime_type"].value<std::string>(), "io.containerd.runc.v2");
  EXPECT_EQ(runtimes["gpuop"]["options"]["BinaryName"].value<std::string>(), kGpuopBinary);
  EXPECT_EQ(runtimes["gpuop"]["options"]["Root"].value<std::string>(), "/run/containerd/runc-k8s");
  EXPECT_EQ(runtimes["gpuop"]["options"]["SystemdCgroup"].value<bool>(), true);
  EXPECT_EQ(runtimes["nvidia"]["options"]["BinaryName"].value<std::string>(), kToolkitRuntime);
  EXPECT_EQ(
      effective["plugins"][cri_plugin]["containerd"]["default_runtime_name"].value<std::string>(),
      "runc");
  EXPECT_TRUE(Status(Runtime::kContainerd, options)->Configured());

  const std::string configured = root_.Snapshot();
  const absl::StatusOr<ChangeReport> second = Configure(Runtime::kContainerd, options);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->Summary(), "containerd: unchanged; no restart");
  EXPECT_EQ(root_.Snapshot(), configured);

  // Drift: the drop-in without gpuop's handler (as a configure without it would write).
  Options without = options;
  without.add_gpuop_runtime = false;
  root_.Put(kContainerdDropInPath, *RenderContainerdDropIn(original, {}, without));
  EXPECT_THAT(States(Status(Runtime::kContainerd, options)),
              ElementsAre(FileState::kDrifted, FileState::kConfigured));
  ASSERT_TRUE(Configure(Runtime::kContainerd, options).ok());
  EXPECT_EQ(root_.Snapshot(), configured);

  const absl::StatusOr<ChangeReport> undone = Unconfigure(Runtime::kContainerd, options);
  ASSERT_TRUE(undone.ok()) << undone.status();
  EXPECT_EQ(root_.Snapshot(), before);
  EXPECT_EQ(root_.Get(kContainerdConfigPath), original);
  EXPECT_THAT(restarter_.calls.size(), 3u);
}

INSTANTIATE_TEST_SUITE_P(Samples, RuntimeConfiguratorGpuopContainerdTest,
                         ::testing::Values("containerd_v2.toml", "containerd_v3.toml"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param.substr(11, 2);  // "v2", "v3"
                         });

TEST_F(RuntimeConfiguratorTest, GpuopHandlerCycleOnCrio) {
  root_.Put(kCrioConfigPath, Testdata("crio.conf"));
  PutBinary(root_, kGpuopBinary);
  const std::string before = root_.Snapshot();
  const Options options = GpuopOptions();
  ASSERT_TRUE(Configure(Runtime::kCrio, options).ok());
  const toml::table drop_in = toml::parse(*root_.Get(kCrioDropInPath));
  EXPECT_EQ(drop_in["crio"]["runtime"]["runtimes"]["gpuop"]["runtime_path"].value<std::string>(),
            kGpuopBinary);
  EXPECT_FALSE(drop_in["crio"]["runtime"]["default_runtime"]);
  EXPECT_THAT(States(Status(Runtime::kCrio, options)), ElementsAre(FileState::kConfigured));
  EXPECT_FALSE(Configure(Runtime::kCrio, options)->Changed());
  ASSERT_TRUE(Unconfigure(Runtime::kCrio, options).ok());
  EXPECT_EQ(root_.Snapshot(), before);
}

TEST_F(RuntimeConfiguratorTest, GpuopHandlerCycleOnDockerRestoresTheNodesEntry) {
  // The node's daemon.json has a stale gpuop entry: configure makes it gpuop's, unconfigure
  // puts the original bytes back, stale entry and all.
  const std::string original =
      R"({
  "log-driver": "json-file",
  "runtimes": {
    "gpuop": {"path": "/opt/old/gpuop-container-runtime"}
  }
}
)";
  root_.Put(kDockerConfigPath, original);
  PutBinary(root_, kGpuopBinary);
  const std::string before = root_.Snapshot();
  const Options options = GpuopOptions(/*with_nvidia=*/true);
  const absl::StatusOr<ChangeReport> first = Configure(Runtime::kDocker, options);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(first->Summary(),
              HasSubstr("note: set the runtime handler runtimes.gpuop to gpuop's"));
  const nlohmann::json daemon = nlohmann::json::parse(*root_.Get(kDockerConfigPath));
  EXPECT_EQ(daemon["runtimes"]["gpuop"],
            nlohmann::json::parse(R"({"path": "/var/lib/gpuop/bin/gpuop-container-runtime"})"));
  EXPECT_EQ(daemon["runtimes"]["nvidia"]["path"], kToolkitRuntime);
  EXPECT_FALSE(daemon.contains("default-runtime"));
  EXPECT_THAT(States(Status(Runtime::kDocker, options)), ElementsAre(FileState::kConfigured));
  const absl::StatusOr<ChangeReport> second = Configure(Runtime::kDocker, options);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->Summary(), "docker: unchanged; no restart");

  // The file holds only what gpuop wrote, gpuop's handler included: restored without force.
  const absl::StatusOr<ChangeReport> undone = Unconfigure(Runtime::kDocker, options);
  ASSERT_TRUE(undone.ok()) << undone.status();
  EXPECT_EQ(root_.Get(kDockerConfigPath), original);
  EXPECT_EQ(root_.Snapshot(), before);

  // With gpuop's binary gone before unconfigure, the file still holds only what gpuop wrote.
  ASSERT_TRUE(Configure(Runtime::kDocker, options).ok());
  fs::remove(root_ / kGpuopBinary);
  const absl::StatusOr<ChangeReport> without_binary = Unconfigure(Runtime::kDocker, options);
  ASSERT_TRUE(without_binary.ok()) << without_binary.status();
  EXPECT_EQ(root_.Get(kDockerConfigPath), original);
  PutBinary(root_, kGpuopBinary);

  // A change to gpuop's entry after configure is a change like any other: refused.
  ASSERT_TRUE(Configure(Runtime::kDocker, options).ok());
  root_.Put(kDockerConfigPath,
            absl::StrReplaceAll(*root_.Get(kDockerConfigPath),
                                {{"/var/lib/gpuop/bin/gpuop-container-runtime", "/opt/x"}}));
  EXPECT_THAT(States(Status(Runtime::kDocker, options)), ElementsAre(FileState::kDrifted));
  EXPECT_EQ(Unconfigure(Runtime::kDocker, options).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(RuntimeConfiguratorTest, InvalidGpuopOptionsNameTheField) {
  struct Case {
    Options options;
    std::string message;
  };
  Options bad_name = GpuopOptions();
  bad_name.gpuop_runtime_name = "gpuop_handler";
  Options relative = GpuopOptions();
  relative.gpuop_runtime_binary = "bin/gpuop-container-runtime";
  Options climbing = GpuopOptions();
  climbing.gpuop_runtime_binary = "/var/lib/gpuop/../../../usr/bin/runc";
  Options same = GpuopOptions(/*with_nvidia=*/true);
  same.gpuop_runtime_name = "nvidia";
  Options nothing;
  nothing.enable_cdi = false;
  for (const Case& c : std::vector<Case>{
           {bad_name, "gpuop_runtime_name \"gpuop_handler\" is not a DNS label"},
           {relative,
            "gpuop_runtime_binary \"bin/gpuop-container-runtime\" is not a clean "
            "absolute path"},
           {climbing,
            "gpuop_runtime_binary \"/var/lib/gpuop/../../../usr/bin/runc\" is not a "
            "clean absolute path"},
           {same, "gpuop_runtime_name and runtime_name are both \"nvidia\""},
           {nothing, "enable_cdi, add_nvidia_runtime and add_gpuop_runtime are all off"},
       }) {
    const absl::StatusOr<ChangeReport> result = Configure(Runtime::kDocker, c.options);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(Message(result.status()), HasSubstr(c.message));
    EXPECT_EQ(Unconfigure(Runtime::kDocker, c.options).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(Status(Runtime::kDocker, c.options).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  // Without gpuop's handler its fields are not looked at; without the nvidia one, the names may
  // be the same.
  Options off = GpuOptions();
  off.gpuop_runtime_name = "nvidia";
  off.gpuop_runtime_binary = "relative";
  EXPECT_TRUE(ValidateOptions(off).ok());
  Options alone = GpuopOptions();
  alone.gpuop_runtime_name = "nvidia";
  EXPECT_TRUE(ValidateOptions(alone).ok());
  EXPECT_FALSE(root_.Exists(kDockerConfigPath));
}

}  // namespace
}  // namespace gpuop::agent::runtime
