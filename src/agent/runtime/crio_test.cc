#include "agent/runtime/crio.h"

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

}  // namespace
}  // namespace gpuop::agent::runtime
