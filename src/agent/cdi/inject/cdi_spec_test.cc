#include "agent/cdi/inject/cdi_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::agent::cdi::inject {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kFile[] = "/etc/cdi/gpuop.json";

TEST(ParseSpecJsonTest, ReadsEveryField) {
  StatusOr<Spec> spec = ParseSpecJson(R"({
    "cdiVersion": "0.7.0",
    "kind": "management.gpuop.io/gpu",
    "annotations": {"ignored": "yes"},
    "containerEdits": {
      "env": ["A=1"],
      "deviceNodes": [{"path": "/dev/nvidiactl"}],
      "hooks": [{"hookName": "createContainer", "path": "/usr/bin/hook",
                 "args": ["hook", "x"], "env": ["B=2"], "timeout": 5}],
      "additionalGids": [44, 0]
    },
    "devices": [
      {"name": "all", "containerEdits": {
        "deviceNodes": [{"path": "/dev/nvidia0", "hostPath": "/host/dev/nvidia0", "type": "c",
                         "major": 195, "minor": 0, "fileMode": 438, "permissions": "rw",
                         "uid": 0, "gid": 44}],
        "mounts": [{"hostPath": "/usr/lib/libx.so", "containerPath": "/usr/lib/libx.so",
                    "type": "bind", "options": ["ro", "rbind"]}]}},
      {"name": "mig-monitor", "containerEdits": null}
    ]
  })",
                                      kFile);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->file, kFile);
  EXPECT_EQ(spec->cdi_version, "0.7.0");
  EXPECT_EQ(spec->kind, "management.gpuop.io/gpu");
  EXPECT_THAT(spec->edits.env, ElementsAre("A=1"));
  ASSERT_EQ(spec->edits.device_nodes.size(), 1u);
  EXPECT_EQ(spec->edits.device_nodes[0].path, "/dev/nvidiactl");
  EXPECT_FALSE(spec->edits.device_nodes[0].major.has_value());
  ASSERT_EQ(spec->edits.hooks.size(), 1u);
  const Hook& hook = spec->edits.hooks[0];
  EXPECT_EQ(hook.hook_name, "createContainer");
  EXPECT_EQ(hook.path, "/usr/bin/hook");
  EXPECT_THAT(hook.args, ElementsAre("hook", "x"));
  EXPECT_THAT(hook.env, ElementsAre("B=2"));
  EXPECT_EQ(hook.timeout, 5);
  EXPECT_THAT(spec->edits.additional_gids, ElementsAre(44u, 0u));

  ASSERT_EQ(spec->devices.size(), 2u);
  const Device* all = spec->FindDevice("all");
  ASSERT_NE(all, nullptr);
  ASSERT_EQ(all->edits.device_nodes.size(), 1u);
  const DeviceNode& node = all->edits.device_nodes[0];
  EXPECT_EQ(node.host_path, "/host/dev/nvidia0");
  EXPECT_EQ(node.type, "c");
  EXPECT_EQ(node.major, 195);
  EXPECT_EQ(node.minor, 0);
  EXPECT_EQ(node.file_mode, 438u);
  EXPECT_EQ(node.permissions, "rw");
  EXPECT_EQ(node.uid, 0u);
  EXPECT_EQ(node.gid, 44u);
  ASSERT_EQ(all->edits.mounts.size(), 1u);
  EXPECT_EQ(all->edits.mounts[0].host_path, "/usr/lib/libx.so");
  EXPECT_EQ(all->edits.mounts[0].type, "bind");
  EXPECT_THAT(all->edits.mounts[0].options, ElementsAre("ro", "rbind"));
  EXPECT_NE(spec->FindDevice("mig-monitor"), nullptr);
  EXPECT_EQ(spec->FindDevice("0"), nullptr);
}

TEST(ParseSpecJsonTest, RecordsFieldsItCannotApply) {
  StatusOr<Spec> spec = ParseSpecJson(
      R"({"cdiVersion": "1.1.0", "kind": "a.b/c", "devices": [{"name": "n", "containerEdits":
          {"netDevices": [{"hostInterfaceName": "eth1", "name": "net1"}]}}]})",
      kFile);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_THAT(spec->devices[0].edits.unsupported,
              ElementsAre("devices[0].containerEdits.netDevices"));
}

// Untrusted text: each problem is an error naming the file and the field, never an exception.
TEST(ParseSpecJsonTest, ErrorsNameTheFileAndTheField) {
  const std::string head = R"({"cdiVersion": "0.6.0", "kind": "a.b/c", "devices": )";
  const auto device = [&](const std::string& edits) {
    return head + R"([{"name": "d", "containerEdits": )" + edits + "}]}";
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "not valid JSON"},
      {"{\"cdiVersion\": ", "not valid JSON"},
      {"[]", "not a JSON object"},
      {R"({"kind": "a.b/c", "devices": []})", "cdiVersion: missing"},
      {R"({"cdiVersion": 1, "kind": "a.b/c", "devices": []})", "cdiVersion: not a string"},
      {R"({"cdiVersion": "0.6.0", "devices": []})", "kind: missing"},
      {R"({"cdiVersion": "0.6.0", "kind": "abc", "devices": []})", "kind: CDI kind \"abc\""},
      {R"({"cdiVersion": "0.6.0", "kind": "a.b/c"})", "devices: missing"},
      {head + "{}}", "devices: not an array"},
      {head + "[1]}", "devices[0]: not an object"},
      {head + R"([{"containerEdits": {}}]})", "devices[0].name: missing"},
      {head + R"([{"name": "-x"}]})", "devices[0].name: CDI device name \"-x\""},
      {head + R"([{"name": "x"}, {"name": "x"}]})",
       "devices[1].name: device \"x\" is defined twice"},
      {device("[]"), "devices[0].containerEdits: not an object"},
      {device(R"({"env": "A=1"})"), "devices[0].containerEdits.env: not an array"},
      {device(R"({"env": [1]})"), "devices[0].containerEdits.env[0]: not a string"},
      {device(R"({"env": ["A"]})"), "env[0]: \"A\" is not NAME=value"},
      {device(R"({"deviceNodes": [{}]})"), "deviceNodes[0].path: missing"},
      {device(R"({"deviceNodes": [{"path": "dev/x"}]})"),
       "deviceNodes[0].path: \"dev/x\" is not absolute"},
      {device(R"({"deviceNodes": [{"path": "/dev/x", "major": "195"}]})"),
       "deviceNodes[0].major: not an integer"},
      {device(R"({"deviceNodes": [{"path": "/dev/x", "major": 1.5}]})"),
       "deviceNodes[0].major: not an integer"},
      {device(R"({"deviceNodes": [{"path": "/dev/x", "minor": -1}]})"),
       "deviceNodes[0].minor: out of range"},
      {device(R"({"deviceNodes": [{"path": "/dev/x", "uid": 4294967296}]})"),
       "deviceNodes[0].uid: out of range"},
      {device(R"({"deviceNodes": [{"path": "/dev/x", "type": "x"}]})"),
       "deviceNodes[0].type: \"x\"; expected b, c, u or p"},
      {device(R"({"deviceNodes": [{"path": "/dev/x", "permissions": "rwx"}]})"),
       "deviceNodes[0].permissions: \"rwx\""},
      {device(R"({"mounts": [{"containerPath": "/x"}]})"), "mounts[0].hostPath: missing"},
      {device(R"({"mounts": [{"hostPath": "/x", "containerPath": "x"}]})"),
       "mounts[0].containerPath: \"x\" is not absolute"},
      {device(R"({"mounts": [{"hostPath": "/x", "containerPath": "/x", "options": "ro"}]})"),
       "mounts[0].options: not an array"},
      {device(R"({"hooks": [{"hookName": "prestop", "path": "/h"}]})"),
       "hooks[0].hookName: \"prestop\""},
      {device(R"({"hooks": [{"hookName": "poststop", "path": "h"}]})"),
       "hooks[0].path: \"h\" is not absolute"},
      {device(R"({"hooks": [{"hookName": "poststop", "path": "/h", "timeout": 0}]})"),
       "hooks[0].timeout: out of range"},
      {device(R"({"hooks": [{"hookName": "poststop", "path": "/h", "env": ["=x"]}]})"),
       "hooks[0].env[0]: \"=x\" is not NAME=value"},
      {device(R"({"additionalGids": [-5]})"), "additionalGids[0]: out of range"},
      {device(R"({"additionalGids": {}})"), "additionalGids: not an array"},
  };
  for (const auto& [text, want] : cases) {
    StatusOr<Spec> spec = ParseSpecJson(text, kFile);
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_THAT(spec.status().message(), HasSubstr(kFile)) << text;
    EXPECT_THAT(spec.status().message(), HasSubstr(want)) << text;
  }
}

}  // namespace
}  // namespace gpuop::agent::cdi::inject
