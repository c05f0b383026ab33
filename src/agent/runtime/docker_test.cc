#include "agent/runtime/docker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/runtime/test_util.h"

namespace gpuop::agent::runtime {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::ordered_json;

Options AllOptions() {
  Options options;
  options.add_nvidia_runtime = true;
  options.set_as_default = true;
  options.runtime_binary = "/usr/bin/nvidia-container-runtime";
  return options;
}

TEST(RuntimeDockerTest, AddsGpuopKeysAndKeepsTheRest) {
  const std::string original = Testdata("daemon.json");
  const absl::StatusOr<std::string> edited = EditDaemonJson(original, AllOptions());
  ASSERT_TRUE(edited.ok()) << edited.status();
  ExpectGolden(*edited, "daemon.json");

  const Json before = Json::parse(original);
  const Json after = Json::parse(*edited);
  EXPECT_EQ(after["features"]["cdi"], true);
  EXPECT_EQ(after["features"]["buildkit"], true);
  EXPECT_EQ(after["runtimes"]["nvidia"],
            Json::parse(R"({"path": "/usr/bin/nvidia-container-runtime", "args": []})"));
  EXPECT_EQ(after["default-runtime"], "nvidia");
  EXPECT_FALSE(after.contains("cdi-spec-dirs"));  // the default directories
  for (const auto& [key, value] : before.items()) {
    if (key != "features") {
      EXPECT_EQ(after[key], value) << key;
    }
  }
  // Key order is kept; new keys come last.
  std::vector<std::string> keys;
  for (const auto& [key, value] : after.items()) keys.push_back(key);
  EXPECT_THAT(keys,
              ::testing::ElementsAre("exec-opts", "log-driver", "log-opts", "storage-driver",
                                     "features", "live-restore", "runtimes", "default-runtime"));
}

TEST(RuntimeDockerTest, ReturnsTheSameBytesWhenAlreadyConfigured) {
  const std::string compact =
      R"({"features":{"cdi":true},"runtimes":{"nvidia":{"path":"/usr/bin/nvidia-container-runtime","args":["--debug"]}},"default-runtime":"nvidia"})";
  const absl::StatusOr<std::string> edited = EditDaemonJson(compact, AllOptions());
  ASSERT_TRUE(edited.ok()) << edited.status();
  EXPECT_EQ(*edited, compact);
}

TEST(RuntimeDockerTest, CreatesTheFileWhenAbsent) {
  const absl::StatusOr<std::string> created = EditDaemonJson(std::nullopt, Options{});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(*created, "{\n    \"features\": {\n        \"cdi\": true\n    }\n}\n");
}

TEST(RuntimeDockerTest, SetsSpecDirsOnlyWhenNotTheDefault) {
  Options options;
  options.cdi_spec_dirs = {"/etc/cdi", "/var/run/cdi", "/opt/cdi"};
  const absl::StatusOr<std::string> edited = EditDaemonJson("{\n\t\"debug\": true\n}\n", options);
  ASSERT_TRUE(edited.ok()) << edited.status();
  EXPECT_EQ(*edited,
            "{\n\t\"debug\": true,\n\t\"features\": {\n\t\t\"cdi\": true\n\t},\n"
            "\t\"cdi-spec-dirs\": [\n\t\t\"/etc/cdi\",\n\t\t\"/var/run/cdi\",\n\t\t\"/opt/cdi\"\n"
            "\t]\n}\n");
}

TEST(RuntimeDockerTest, RefusesMalformedFiles) {
  struct Case {
    std::string content;
    std::string message;
  };
  const std::vector<Case> cases = {
      {Testdata("daemon_malformed.json"), "/etc/docker/daemon.json:5:3: invalid JSON: "},
      {"[]", "/etc/docker/daemon.json: the top level is an array, expected an object"},
      {"{\n  \"features\": \"cdi\"\n}",
       "/etc/docker/daemon.json:2: features is a string, expected "
       "an object"},
      {"{\"features\": {\"cdi\": \"yes\"}}", "features.cdi is a string, expected a boolean"},
      {"{\"runtimes\": []}", "runtimes is an array, expected an object"},
      {"{\"runtimes\": {\"nvidia\": \"/usr/bin/x\"}}", "runtimes.nvidia is a string"},
      {"{\"runtimes\": {\"nvidia\": {\"path\": 1}}}", "runtimes.nvidia.path is a number"},
      {"{\"default-runtime\": 1}", "default-runtime is a number, expected a string"},
      {"{\"cdi-spec-dirs\": [1]}", "cdi-spec-dirs is an array, expected an array of strings"},
  };
  for (const Case& c : cases) {
    const absl::StatusOr<std::string> edited = EditDaemonJson(c.content, AllOptions());
    ASSERT_FALSE(edited.ok()) << c.content;
    EXPECT_EQ(edited.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(Message(edited.status()), HasSubstr(c.message)) << c.content;
  }
}

constexpr const char* kGpuopBinary = kGpuopRuntimeBinary;

TEST(RuntimeDockerTest, AddsTheGpuopHandler) {
  Options options = AllOptions();
  options.add_gpuop_runtime = true;
  const absl::StatusOr<std::string> edited = EditDaemonJson(Testdata("daemon.json"), options);
  ASSERT_TRUE(edited.ok()) << edited.status();
  const Json after = Json::parse(*edited);
  EXPECT_EQ(after["runtimes"]["gpuop"],
            Json::parse(R"({"path": "/var/lib/gpuop/bin/gpuop-container-runtime"})"));
  EXPECT_EQ(after["runtimes"]["nvidia"]["path"], "/usr/bin/nvidia-container-runtime");
  EXPECT_EQ(after["default-runtime"], "nvidia");  // never gpuop's

  Options gpuop_only;
  gpuop_only.add_gpuop_runtime = true;
  const absl::StatusOr<std::string> created = EditDaemonJson(std::nullopt, gpuop_only);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(Json::parse(*created), Json::parse(R"({"features": {"cdi": true},
                            "runtimes": {"gpuop": {"path": "/var/lib/gpuop/bin/gpuop-container-runtime"}}})"));
  EXPECT_EQ(EditDaemonJson(*created, gpuop_only).value_or(""), *created);
}

TEST(RuntimeDockerTest, GpuopsHandlerIsBroughtToWhatGpuopWants) {
  Options options = AllOptions();
  options.add_gpuop_runtime = true;
  const std::string original =
      R"({"runtimes": {"nvidia": {"path": "/opt/nvidia/runtime"},
                       "gpuop": {"path": "/opt/old/gpuop-container-runtime", "args": ["--debug"]}}})";
  std::vector<std::string> notes;
  const absl::StatusOr<std::string> edited = EditDaemonJson(original, options, &notes);
  ASSERT_TRUE(edited.ok()) << edited.status();
  const Json after = Json::parse(*edited);
  EXPECT_EQ(after["runtimes"]["nvidia"], Json::parse(R"({"path": "/opt/nvidia/runtime"})"));
  EXPECT_EQ(after["runtimes"]["gpuop"],
            Json::parse(R"({"path": "/var/lib/gpuop/bin/gpuop-container-runtime"})"));
  EXPECT_THAT(notes, ::testing::ElementsAre(
                         HasSubstr("kept the node's own runtime handler runtimes.nvidia"),
                         "set the runtime handler runtimes.gpuop to gpuop's (it differed; the "
                         "name is gpuop's)"));
  // Even an entry of another type: the name is gpuop's.
  const absl::StatusOr<std::string> replaced =
      EditDaemonJson(R"({"runtimes": {"gpuop": "runc"}})", options);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_EQ(Json::parse(*replaced)["runtimes"]["gpuop"]["path"], kGpuopBinary);
}

}  // namespace
}  // namespace gpuop::agent::runtime
