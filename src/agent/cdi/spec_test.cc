#include "agent/cdi/spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace gpuop::agent::cdi {
namespace {

using ::testing::HasSubstr;

// A spec that uses every field the model has.
Spec FullSpec() {
  Spec spec{.cdi_version = "1.1.0", .kind = "example.com/net.dev"};
  spec.annotations = {{"a", "1"}};
  spec.devices.push_back(
      {.name = "d0",
       .annotations = {{"b", "2"}},
       .container_edits = {
           .env = {"A=1"},
           .device_nodes = {{.path = "/dev/x",
                             .host_path = "/host/dev/x",
                             .type = "c",
                             .major = 10,
                             .minor = 200,
                             .file_mode = 0660,
                             .permissions = "rw",
                             .uid = 0,
                             .gid = 44}},
           .mounts =
               {{.host_path = "/h", .container_path = "/c", .options = {"ro"}, .type = "bind"}},
           .hooks = {{.hook_name = "createContainer",
                      .path = "/bin/hook",
                      .args = {"hook", "x"},
                      .env = {"H=1"},
                      .timeout = 5}},
           .additional_gids = {44},
           .net_devices = {{.host_interface_name = "eth1", .name = "net0"}}}});
  spec.container_edits.env = {"B=2"};
  return spec;
}

TEST(CdiSpecTest, ParsesVersions) {
  EXPECT_EQ(*ParseCdiVersion("0.5.0"), (CdiVersion{0, 5, 0}));
  EXPECT_EQ(*ParseCdiVersion("v1.1.0"), (CdiVersion{1, 1, 0}));
  EXPECT_LT(*ParseCdiVersion("0.10.0"), *ParseCdiVersion("1.0.0"));
  EXPECT_LT(*ParseCdiVersion("0.5.0"), *ParseCdiVersion("0.10.0"));
  for (const char* bad : {"", "1", "1.0", "1.0.0.0", "a.b.c", "1.-1.0", "0.5.0-rc1"}) {
    EXPECT_FALSE(ParseCdiVersion(bad).ok()) << bad;
  }
  EXPECT_THAT(ParseCdiVersion("x").status().message(), HasSubstr("\"x\""));
  EXPECT_TRUE(IsKnownCdiVersion({0, 3, 0}));
  EXPECT_TRUE(IsKnownCdiVersion({1, 1, 0}));
  EXPECT_FALSE(IsKnownCdiVersion({0, 9, 0}));
  EXPECT_FALSE(IsKnownCdiVersion({1, 2, 0}));
}

TEST(CdiSpecTest, MinimumVersionCoversTheFieldsUsed) {
  const Spec base{.kind = "nvidia.com/gpu",
                  .devices = {{.name = "gpu0", .container_edits = {.env = {"A=1"}}}}};
  struct Case {
    const char* what;
    void (*change)(Spec&);
    const char* want;
  };
  const Case cases[] = {
      {"nothing new", [](Spec&) {}, "0.3.0"},
      {"mount type",
       [](Spec& s) {
         s.container_edits.mounts = {{"/a", "/b", {}, "bind"}};
       },
       "0.4.0"},
      {"device node hostPath",
       [](Spec& s) {
         s.devices[0].container_edits.device_nodes = {{.path = "/a", .host_path = "/b"}};
       },
       "0.5.0"},
      {"device node without hostPath",
       [](Spec& s) { s.devices[0].container_edits.device_nodes = {{.path = "/a"}}; }, "0.3.0"},
      {"name with a leading digit", [](Spec& s) { s.devices[0].name = "0"; }, "0.5.0"},
      {"MIG name", [](Spec& s) { s.devices[0].name = "0:1"; }, "0.5.0"},
      {"spec annotations",
       [](Spec& s) {
         s.annotations = {{"k", "v"}};
       },
       "0.6.0"},
      {"device annotations",
       [](Spec& s) {
         s.devices[0].annotations = {{"k", "v"}};
       },
       "0.6.0"},
      {"dot in the class", [](Spec& s) { s.kind = "nvidia.com/gpu.shared"; }, "0.6.0"},
      {"additionalGids", [](Spec& s) { s.container_edits.additional_gids = {44}; }, "0.7.0"},
      {"device additionalGids",
       [](Spec& s) { s.devices[0].container_edits.additional_gids = {44}; }, "0.7.0"},
      {"netDevices",
       [](Spec& s) {
         s.container_edits.net_devices = {{"eth0", "n0"}};
       },
       "1.1.0"},
      {"several: the highest wins",
       [](Spec& s) {
         s.devices[0].name = "0";
         s.annotations = {{"k", "v"}};
         s.container_edits.mounts = {{"/a", "/b", {}, "bind"}};
       },
       "0.6.0"},
  };
  for (const Case& c : cases) {
    Spec spec = base;
    c.change(spec);
    EXPECT_EQ(MinimumCdiVersion(spec), c.want) << c.what;
  }
}

TEST(CdiSpecTest, JsonHasTheFileLayout) {
  const Spec spec{.cdi_version = "0.5.0",
                  .kind = "nvidia.com/gpu",
                  .devices = {{.name = "0",
                               .container_edits = {.device_nodes = {{.path = "/dev/nvidia0",
                                                                     .type = "c",
                                                                     .major = 195,
                                                                     .minor = 0}}}}},
                  .container_edits = {.mounts = {{.host_path = "/usr/bin/nvidia-smi",
                                                  .container_path = "/usr/bin/nvidia-smi",
                                                  .options = {"ro", "nosuid"}}}}};
  EXPECT_EQ(SpecToJsonText(spec), R"({
  "cdiVersion": "0.5.0",
  "kind": "nvidia.com/gpu",
  "devices": [
    {
      "name": "0",
      "containerEdits": {
        "deviceNodes": [
          {
            "path": "/dev/nvidia0",
            "type": "c",
            "major": 195,
            "minor": 0
          }
        ]
      }
    }
  ],
  "containerEdits": {
    "mounts": [
      {
        "hostPath": "/usr/bin/nvidia-smi",
        "containerPath": "/usr/bin/nvidia-smi",
        "options": [
          "ro",
          "nosuid"
        ]
      }
    ]
  }
}
)");
}

TEST(CdiSpecTest, JsonRoundTripsEveryField) {
  const Spec spec = FullSpec();
  absl::StatusOr<Spec> parsed = SpecFromJson(SpecToJsonText(spec));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, spec);
}

TEST(CdiSpecTest, JsonParsingNamesThePathOfWhatIsWrong) {
  struct Case {
    const char* json;
    const char* want;
  };
  const Case cases[] = {
      {"[", "not valid JSON"},
      {"[]", "spec: expected an object"},
      {R"({"kind": "a/b", "devices": []})", "cdiVersion: required"},
      {R"({"cdiVersion": "0.3.0", "kind": "a/b", "extra": 1})", "extra: unknown field"},
      {R"({"cdiVersion": "0.3.0", "kind": "a/b", "devices": [{"name": "x",
          "containerEdits": {"intelRdt": {}}}]})",
       "devices[0].containerEdits.intelRdt: unknown field"},
      {R"({"cdiVersion": "0.3.0", "kind": "a/b", "devices": [{"name": "x",
          "containerEdits": {"mounts": [{"hostPath": 1, "containerPath": "/c"}]}}]})",
       "devices[0].containerEdits.mounts[0].hostPath: expected a string"},
      {R"({"cdiVersion": "0.3.0", "kind": "a/b", "devices": [{"name": "x",
          "containerEdits": {"deviceNodes": [{"path": "/d", "major": -1, "uid": -1}]}}]})",
       "devices[0].containerEdits.deviceNodes[0].uid: expected an integer in range"},
      {R"({"cdiVersion": "0.3.0", "kind": "a/b", "annotations": {"k": 1}})",
       "annotations.k: expected a string"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Spec> parsed = SpecFromJson(c.json);
    ASSERT_FALSE(parsed.ok()) << c.json;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.want)) << c.json;
  }
}

TEST(CdiSpecTest, YamlKeepsNamesAndVersionsStrings) {
  Spec spec = FullSpec();
  spec.devices[0].name = "0";
  spec.devices.push_back({.name = "true", .container_edits = {}});
  const std::string yaml = SpecToYaml(spec);
  EXPECT_THAT(yaml, HasSubstr("name: \"0\""));
  EXPECT_THAT(yaml, HasSubstr("cdiVersion: \"1.1.0\""));
  const YAML::Node node = YAML::Load(yaml);
  EXPECT_EQ(node["devices"][0]["name"].Tag(), "!");  // quoted: a string for every reader
  EXPECT_EQ(node["devices"][0]["name"].as<std::string>(), "0");
  EXPECT_EQ(node["devices"][1]["name"].Tag(), "!");
  EXPECT_TRUE(node["devices"][1]["containerEdits"].IsMap());
  const YAML::Node nodes = node["devices"][0]["containerEdits"]["deviceNodes"];
  EXPECT_EQ(nodes[0]["hostPath"].as<std::string>(), "/host/dev/x");
  EXPECT_EQ(nodes[0]["major"].as<int>(), 10);
  EXPECT_EQ(nodes[0]["fileMode"].as<int>(), 0660);
  EXPECT_EQ(node["devices"][0]["containerEdits"]["hooks"][0]["timeout"].as<int>(), 5);
  EXPECT_EQ(node["devices"][0]["annotations"]["b"].as<std::string>(), "2");
  EXPECT_EQ(node["containerEdits"]["env"][0].as<std::string>(), "B=2");
  EXPECT_EQ(
      node["devices"][0]["containerEdits"]["netDevices"][0]["hostInterfaceName"].as<std::string>(),
      "eth1");
}

}  // namespace
}  // namespace gpuop::agent::cdi
