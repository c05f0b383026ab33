#include "agent/runtime/crio.h"

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include "agent/runtime/test_util.h"

namespace gpuop::agent::runtime {
namespace {

using ::testing::HasSubstr;

toml::table Parse(const std::string& text) {
  return toml::parse(std::string_view(text), std::string_view("drop-in"));
}

Options RuntimeOptions() {
  Options options;
  options.add_nvidia_runtime = true;
  options.set_as_default = true;
  options.runtime_binary = "/usr/local/nvidia/toolkit/nvidia-container-runtime";
  return options;
}

TEST(RuntimeCrioTest, RendersTheDropIn) {
  const absl::StatusOr<std::string> drop_in =
      RenderCrioDropIn({{kCrioConfigPath, Testdata("crio.conf")}}, RuntimeOptions());
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  ExpectGolden(*drop_in, "crio_dropin.toml");

  const toml::table table = Parse(*drop_in);
  const auto runtime = table["crio"]["runtime"];
  EXPECT_EQ(*runtime["cdi_spec_dirs"].as_array(), (toml::array{"/etc/cdi", "/var/run/cdi"}));
  EXPECT_EQ(runtime["default_runtime"].value<std::string>(), "nvidia");
  const auto nvidia = runtime["runtimes"]["nvidia"];
  EXPECT_EQ(nvidia["runtime_path"].value<std::string>(),
            "/usr/local/nvidia/toolkit/nvidia-container-runtime");
  EXPECT_EQ(nvidia["runtime_type"].value<std::string>(), "oci");
  // Copied from the default runtime (crun).
  EXPECT_EQ(nvidia["monitor_path"].value<std::string>(), "/usr/libexec/crio/conmon");
  // Only gpuop's keys: CRI-O merges drop-ins key by key.
  EXPECT_EQ(runtime.as_table()->size(), 3u);
  EXPECT_EQ(runtime["runtimes"].as_table()->size(), 1u);
  EXPECT_FALSE(table["crio"]["image"]);
}

TEST(RuntimeCrioTest, CdiOnlyDropIn) {
  const absl::StatusOr<std::string> drop_in =
      RenderCrioDropIn({{kCrioConfigPath, Testdata("crio.conf")}}, Options{});
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  EXPECT_EQ(Parse(*drop_in),
            (toml::table{
                {"crio", toml::table{{"runtime",
                                      toml::table{{"cdi_spec_dirs",
                                                   toml::array{"/etc/cdi", "/var/run/cdi"}}}}}}}));
}

TEST(RuntimeCrioTest, LaterDropInsDecideTheBaseRuntime) {
  const absl::StatusOr<std::string> drop_in = RenderCrioDropIn(
      {{kCrioConfigPath, Testdata("crio.conf")},
       {"/etc/crio/crio.conf.d/10-runc.conf", "[crio.runtime]\ndefault_runtime = \"runc\"\n"}},
      RuntimeOptions());
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table = Parse(*drop_in);
  const auto nvidia = table["crio"]["runtime"]["runtimes"]["nvidia"];
  EXPECT_EQ(nvidia["runtime_root"].value<std::string>(), "/run/runc");
  EXPECT_FALSE(nvidia["monitor_path"]);
}

TEST(RuntimeCrioTest, WithoutAMainConfigWritesOnlyGpuopKeys) {
  const absl::StatusOr<std::string> drop_in = RenderCrioDropIn({}, RuntimeOptions());
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table = Parse(*drop_in);
  const auto nvidia = table["crio"]["runtime"]["runtimes"]["nvidia"];
  ASSERT_TRUE(nvidia.is_table());
  EXPECT_EQ(nvidia.as_table()->size(), 2u);
}

TEST(RuntimeCrioTest, RefusesMalformedConfigs) {
  struct Case {
    std::string content;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"[crio.runtime\n", "/etc/crio/crio.conf:1:"},
      {"crio = 1\n", "/etc/crio/crio.conf:1:8: crio is an integer, expected a table"},
      {"[crio]\nruntime = \"runc\"\n", "crio.runtime is a string, expected a table"},
      {"[crio.runtime]\ndefault_runtime = [\"runc\"]\n",
       "crio.runtime.default_runtime is an array, expected a string"},
      {"[crio.runtime]\ncdi_spec_dirs = \"/etc/cdi\"\n", "crio.runtime.cdi_spec_dirs is a string"},
      {"[crio.runtime.runtimes]\ncrun = 1\n", "crio.runtime.runtimes.crun is an integer"},
  };
  for (const Case& c : cases) {
    const absl::StatusOr<std::string> drop_in =
        RenderCrioDropIn({{kCrioConfigPath, c.content}}, RuntimeOptions());
    ASSERT_FALSE(drop_in.ok()) << c.content;
    EXPECT_EQ(drop_in.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(Message(drop_in.status()), HasSubstr(c.message)) << c.content;
  }
}

constexpr const char* kGpuopBinary = kGpuopRuntimeBinary;

TEST(RuntimeCrioTest, RendersTheGpuopHandler) {
  Options options = RuntimeOptions();
  options.add_gpuop_runtime = true;
  const absl::StatusOr<std::string> drop_in =
      RenderCrioDropIn({{kCrioConfigPath, Testdata("crio.conf")}}, options);
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  ExpectGolden(*drop_in, "crio_gpuop_dropin.toml");

  const toml::table table = Parse(*drop_in);
  const auto runtime = table["crio"]["runtime"];
  const auto gpuop = runtime["runtimes"]["gpuop"];
  EXPECT_EQ(gpuop["runtime_path"].value<std::string>(), kGpuopBinary);
  EXPECT_EQ(gpuop["runtime_type"].value<std::string>(), "oci");
  // Copied from the default runtime (crun), as the nvidia handler is.
  EXPECT_EQ(gpuop["runtime_root"].value<std::string>(), "/run/crun");
  EXPECT_EQ(gpuop["monitor_path"].value<std::string>(), "/usr/libexec/crio/conmon");
  EXPECT_EQ(runtime["runtimes"]["nvidia"]["runtime_root"].value<std::string>(), "/run/crun");
  // The default is the nvidia handler, never gpuop's.
  EXPECT_EQ(runtime["default_runtime"].value<std::string>(), "nvidia");
}

TEST(RuntimeCrioTest, TheGpuopHandlerAloneSetsNoDefault) {
  Options options;
  options.enable_cdi = false;
  options.add_gpuop_runtime = true;
  const absl::StatusOr<std::string> drop_in =
      RenderCrioDropIn({{kCrioConfigPath, Testdata("crio.conf")}}, options);
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table = Parse(*drop_in);
  const auto runtime = table["crio"]["runtime"];
  EXPECT_FALSE(runtime["default_runtime"]);
  EXPECT_FALSE(runtime["cdi_spec_dirs"]);
  ASSERT_TRUE(runtime["runtimes"].is_table());
  EXPECT_EQ(runtime["runtimes"].as_table()->size(), 1u);
  EXPECT_EQ(runtime["runtimes"]["gpuop"]["runtime_path"].value<std::string>(), kGpuopBinary);
}

TEST(RuntimeCrioTest, GpuopsHandlerIsBroughtToWhatGpuopWants) {
  // A drop-in defines both names: the nvidia handler is the node's and kept, gpuop's is set to
  // gpuop's, copied from the default runtime and not from the node's entry.
  const std::vector<ImportedFile> loaded = {
      {kCrioConfigPath, Testdata("crio.conf")},
      {"/etc/crio/crio.conf.d/50-handlers.toml",
       "[crio.runtime.runtimes.nvidia]\nruntime_path = \"/usr/bin/nvidia-container-runtime\"\n"
       "[crio.runtime.runtimes.gpuop]\nruntime_path = \"/opt/old/gpuop-container-runtime\"\n"
       "runtime_type = \"vm\"\n"}};
  Options options = RuntimeOptions();
  options.add_gpuop_runtime = true;
  std::vector<std::string> notes;
  const absl::StatusOr<std::string> drop_in = RenderCrioDropIn(loaded, options, &notes);
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table = Parse(*drop_in);
  const auto runtimes = table["crio"]["runtime"]["runtimes"];
  EXPECT_FALSE(runtimes["nvidia"]);
  EXPECT_EQ(runtimes["gpuop"]["runtime_path"].value<std::string>(), kGpuopBinary);
  EXPECT_EQ(runtimes["gpuop"]["runtime_type"].value<std::string>(), "oci");
  EXPECT_EQ(runtimes["gpuop"]["runtime_root"].value<std::string>(), "/run/crun");
  EXPECT_THAT(notes, ::testing::ElementsAre(
                         HasSubstr("kept the node's own runtime handler crio.runtime.runtimes."
                                   "nvidia"),
                         "set the runtime handler crio.runtime.runtimes.gpuop to gpuop's (it "
                         "differed; the name is gpuop's)"));

  // One that already is gpuop's: nothing to say.
  const toml::table* ours = runtimes["gpuop"].as_table();
  ASSERT_NE(ours, nullptr);
  toml::table handlers{
      {"crio", toml::table{{"runtime", toml::table{{"runtimes", toml::table{{"gpuop", *ours}}}}}}}};
  std::ostringstream text;
  text << handlers;
  notes.clear();
  ASSERT_TRUE(RenderCrioDropIn({{kCrioConfigPath, Testdata("crio.conf")},
                                {"/etc/crio/crio.conf.d/50-handlers.toml", text.str()}},
                               options, &notes)
                  .ok());
  EXPECT_TRUE(notes.empty());
}

}  // namespace
}  // namespace gpuop::agent::runtime
