#include "agent/cdi/hook/oci_state.h"

#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::agent::cdi::hook {
namespace {

using ::testing::HasSubstr;

// config.json files by path, as a bundle directory would hold them.
ReadFileFn Files(std::map<std::string, std::string> files) {
  return [files](const std::string& path, size_t) -> StatusOr<std::optional<std::string>> {
    auto it = files.find(path);
    if (it == files.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  };
}

// The State of the OCI runtime spec (runtime.md, "State"), as runc passes it to hooks.
constexpr char kState[] = R"({"ociVersion": "1.2.0", "id": "ctr-1", "status": "creating",
  "pid": 4242, "bundle": "/run/containerd/io.containerd.runtime.v2.task/k8s.io/ctr-1",
  "annotations": {"io.kubernetes.cri.container-type": "container"}})";
constexpr char kBundle[] = "/run/containerd/io.containerd.runtime.v2.task/k8s.io/ctr-1";

TEST(ContainerStateTest, RelativeRootIsUnderTheBundle) {
  StatusOr<ContainerState> state = ParseContainerState(
      kState, Files({{std::string(kBundle) + "/config.json",
                      R"({"ociVersion": "1.2.0", "root": {"path": "rootfs"}})"}}));
  ASSERT_TRUE(state.ok()) << state.status().message();
  EXPECT_EQ(state->id, "ctr-1");
  EXPECT_EQ(state->bundle, kBundle);
  EXPECT_EQ(state->root, std::string(kBundle) + "/rootfs");
}

TEST(ContainerStateTest, AbsoluteRootIsTakenAsIs) {
  StatusOr<ContainerState> state = ParseContainerState(
      kState, Files({{std::string(kBundle) + "/config.json",
                      R"({"root": {"path": "/var/lib/ctr/rootfs/", "readonly": true}})"}}));
  ASSERT_TRUE(state.ok()) << state.status().message();
  EXPECT_EQ(state->root, "/var/lib/ctr/rootfs");
}

// Untrusted input: every malformed document is an error naming what is wrong, never a throw.
TEST(ContainerStateTest, MalformedInputIsAnError) {
  const std::string config = std::string(kBundle) + "/config.json";
  struct Case {
    std::string state;
    std::map<std::string, std::string> files;
    const char* want;
  };
  const Case cases[] = {
      {"", {}, "not valid JSON"},
      {"[1, 2]", {}, "not a JSON object"},
      {R"({"id": "x"})", {}, "has no \"bundle\""},
      {R"({"bundle": 7})", {}, "\"bundle\" is not a string"},
      {R"({"bundle": "relative/dir"})", {}, "is not an absolute path"},
      {kState, {}, "the bundle has no config.json"},
      {kState, {{config, "{"}}, "is not valid JSON"},
      {kState, {{config, R"({"root": "rootfs"})"}}, "has no \"root\" object"},
      {kState, {{config, R"({"root": {"path": 1}})"}}, "\"path\" is not a string"},
      {kState, {{config, R"({"root": {"path": ""}})"}}, "root.path is empty"},
      {kState, {{config, R"({"root": {"path": "/"}})"}}, "refusing"},
      {kState, {{config, R"({"root": {"path": "/var/.."}})"}}, "refusing"},
      {kState, {{config, R"({"root": {"path": "../../../../../.."}})"}}, "refusing"},
      {std::string("{\"bundle\": \"/x\"") + std::string(1, '\0') + "}", {}, "not valid JSON"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    StatusOr<ContainerState> state = ParseContainerState(c.state, Files(c.files));
    ASSERT_FALSE(state.ok());
    EXPECT_THAT(state.status().message(), HasSubstr(c.want));
  }
}

}  // namespace
}  // namespace gpuop::agent::cdi::hook
