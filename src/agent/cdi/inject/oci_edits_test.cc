#include "agent/cdi/inject/oci_edits.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi::inject {
namespace {

using nlohmann::ordered_json;
using ::testing::AllOf;
using ::testing::HasSubstr;

ordered_json Json(const char* text) { return ordered_json::parse(text); }

std::vector<EditsSource> One(const ContainerEdits& edits) {
  return {{.device = "nvidia.com/gpu=0", .file = "/etc/cdi/x.json", .edits = &edits}};
}

StatusOr<HostDevice> NoStat(const std::string& path) {
  ADD_FAILURE() << "stat " << path;
  return Status::Error("unexpected stat");
}

TEST(ApplyEditsTest, EnvReplacesAKeyAlreadySetElseAppends) {
  ordered_json config = Json(R"({"process": {"env": ["PATH=/bin", "A=old", "C=x"]}})");
  ContainerEdits edits{.env = {"A=new", "B=1", "B=2"}};
  ASSERT_TRUE(ApplyEdits(config, One(edits)).ok());
  EXPECT_EQ(config, Json(R"({"process": {"env": ["PATH=/bin", "A=new", "C=x", "B=2"]}})"));
}

TEST(ApplyEditsTest, DeviceNodesTakeTypeAndNumbersFromTheHost) {
  ordered_json config = Json(R"({
    "process": {"user": {"uid": 1000, "gid": 0}},
    "linux": {"devices": [{"path": "/dev/full", "type": "c", "major": 9, "minor": 9}],
              "resources": {"devices": [{"allow": false, "access": "rwm"}]}}})");
  ContainerEdits edits{.device_nodes = {
                           {.path = "/dev/gpu0", .host_path = "/dev/null"},
                           {.path = "/dev/full", .file_mode = 0666, .permissions = "rw", .gid = 44},
                       }};
  const Status status = ApplyEdits(config, One(edits));
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(config["linux"]["devices"], Json(R"([
    {"path": "/dev/gpu0", "type": "c", "major": 1, "minor": 3, "uid": 1000},
    {"path": "/dev/full", "type": "c", "major": 1, "minor": 7, "fileMode": 438, "uid": 1000,
     "gid": 44}])"));
  EXPECT_EQ(config["linux"]["resources"]["devices"], Json(R"([
    {"allow": false, "access": "rwm"},
    {"allow": true, "type": "c", "major": 1, "minor": 3, "access": "rwm"},
    {"allow": true, "type": "c", "major": 1, "minor": 7, "access": "rw"}])"));
}

TEST(ApplyEditsTest, DeviceNodesWithTypeAndMajorAreNotLookedUp) {
  ordered_json config = ordered_json::object();
  ContainerEdits edits{.device_nodes = {{.path = "/dev/nvidia0", .type = "c", .major = 195},
                                        {.path = "/dev/fifo", .type = "p"}}};
  ASSERT_TRUE(ApplyEdits(config, One(edits), NoStat).ok());
  EXPECT_EQ(config, Json(R"({"linux": {
    "devices": [{"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0},
                {"path": "/dev/fifo", "type": "p", "major": 0, "minor": 0}],
    "resources": {"devices": [{"allow": true, "type": "c", "major": 195, "minor": 0,
                               "access": "rwm"}]}}})"));
}

TEST(ApplyEditsTest, DeviceNodeProblemsNameTheDeviceAndTheNode) {
  fakes::TempDir temp;
  const std::string file = (temp.path() / "regular").string();
  std::ofstream(file) << "x";
  const std::vector<std::pair<DeviceNode, std::string>> cases = {
      {{.path = "/dev/gpu", .host_path = "/nonexistent/dev"}, "stat host device /nonexistent/dev"},
      {{.path = "/dev/gpu", .host_path = file}, "is not a character or block device"},
      {{.path = "/dev/gpu", .host_path = "/dev/null", .type = "b"},
       "has type b but the host's /dev/null has type c"},
  };
  for (const auto& [node, want] : cases) {
    ordered_json config = ordered_json::object();
    ContainerEdits edits{.device_nodes = {node}};
    const Status status = ApplyEdits(config, One(edits));
    ASSERT_FALSE(status.ok()) << want;
    EXPECT_THAT(status.message(), AllOf(HasSubstr("CDI device nvidia.com/gpu=0 (/etc/cdi/x.json)"),
                                        HasSubstr("device node /dev/gpu"), HasSubstr(want)));
    EXPECT_EQ(config, ordered_json::object());
  }
}

TEST(ApplyEditsTest, MountsReplaceTheSameDestinationAndAreSortedByDepth) {
  ordered_json config = Json(R"({"mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs"},
    {"destination": "/usr/lib/libx.so", "type": "bind", "source": "/old"}]})");
  ContainerEdits edits{.mounts = {{.host_path = "/host/libx.so",
                                   .container_path = "/usr/lib/libx.so",
                                   .options = {"ro", "rbind"}},
                                  {.host_path = "/host/bin",
                                   .container_path = "/opt/",
                                   .type = "none",
                                   .options = {"bind"}}}};
  ASSERT_TRUE(ApplyEdits(config, One(edits)).ok());
  EXPECT_EQ(config, Json(R"({"mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs"},
    {"destination": "/opt/", "type": "none", "source": "/host/bin", "options": ["bind"]},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts"},
    {"destination": "/usr/lib/libx.so", "type": "bind", "source": "/host/libx.so",
     "options": ["ro", "rbind"]}]})"));
}

TEST(ApplyEditsTest, HooksAreAppendedToTheirList) {
  ordered_json config = Json(R"({"hooks": {"createContainer": [{"path": "/existing"}]}})");
  ContainerEdits edits{.hooks = {{.hook_name = "createContainer",
                                  .path = "/usr/bin/gpuop-cdi-hook",
                                  .args = {"gpuop-cdi-hook", "update-ldcache"},
                                  .env = {"A=1"},
                                  .timeout = 30},
                                 {.hook_name = "poststop", .path = "/bin/true"}}};
  ASSERT_TRUE(ApplyEdits(config, One(edits)).ok());
  EXPECT_EQ(config, Json(R"({"hooks": {
    "createContainer": [{"path": "/existing"},
                        {"path": "/usr/bin/gpuop-cdi-hook",
                         "args": ["gpuop-cdi-hook", "update-ldcache"], "env": ["A=1"],
                         "timeout": 30}],
    "poststop": [{"path": "/bin/true"}]}})"));
}

TEST(ApplyEditsTest, AdditionalGidsAreAddedOnceAndZeroIsIgnored) {
  ordered_json config = Json(R"({"process": {"user": {"uid": 0, "additionalGids": [44]}}})");
  ContainerEdits edits{.additional_gids = {44, 0, 109, 109}};
  ASSERT_TRUE(ApplyEdits(config, One(edits)).ok());
  EXPECT_EQ(config, Json(R"({"process": {"user": {"uid": 0, "additionalGids": [44, 109]}}})"));
  ordered_json untouched = ordered_json::object();
  ContainerEdits zero{.additional_gids = {0}};
  ASSERT_TRUE(ApplyEdits(untouched, One(zero)).ok());
  EXPECT_EQ(untouched, ordered_json::object());
}

TEST(ApplyEditsTest, MigCapabilityNodesNeedCapSysAdmin) {
  const char* without = R"({"process": {"capabilities": {
    "bounding": ["CAP_SYS_ADMIN"], "effective": ["CAP_CHOWN", "CAP_KILL"]}}})";
  ordered_json config = Json(without);
  ContainerEdits edits{
      .device_nodes = {
          {.path = "/dev/nvidia-caps/nvidia-cap2", .type = "c", .major = 511, .minor = 2}}};
  const std::vector<EditsSource> sources = {
      {.device = "management.gpuop.io/gpu=mig-monitor", .file = "/x.json", .edits = &edits}};
  const Status status = ApplyEdits(config, sources);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("management.gpuop.io/gpu=mig-monitor"),
                    HasSubstr("/dev/nvidia-caps/nvidia-cap2"), HasSubstr("CAP_SYS_ADMIN")));
  EXPECT_EQ(config, Json(without));

  ordered_json no_caps = ordered_json::object();
  EXPECT_FALSE(ApplyEdits(no_caps, sources).ok());

  ordered_json with = Json(R"({"process": {"capabilities": {
    "effective": ["CAP_CHOWN", "CAP_SYS_ADMIN"]}}})");
  const Status allowed = ApplyEdits(with, sources);
  ASSERT_TRUE(allowed.ok()) << allowed.message();
  EXPECT_EQ(with["linux"]["devices"][0]["path"], "/dev/nvidia-caps/nvidia-cap2");
}

TEST(ApplyEditsTest, FieldsItCannotApplyAreRefused) {
  ordered_json config = ordered_json::object();
  ContainerEdits edits{.env = {"A=1"}, .unsupported = {"devices[0].containerEdits.intelRdt"}};
  const Status status = ApplyEdits(config, One(edits));
  EXPECT_THAT(status.message(), HasSubstr("devices[0].containerEdits.intelRdt is not supported"));
  EXPECT_EQ(config, ordered_json::object());
}

TEST(ApplyEditsTest, AConfigFieldOfTheWrongTypeIsAnErrorNamingItAndChangesNothing) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"linux": {"devices": {}}})", "config.json: linux.devices is not an array"},
      {R"({"linux": []})", "config.json: linux is not an object"},
      {R"({"process": {"env": ["A=1", 3]}})", "config.json: process.env[1] is not a string"},
      {R"({"mounts": {}})", "config.json: mounts is not an array"},
  };
  ContainerEdits edits{.env = {"B=2"},
                       .device_nodes = {{.path = "/dev/x", .type = "c", .major = 1}},
                       .mounts = {{.host_path = "/a", .container_path = "/a"}}};
  for (const auto& [text, want] : cases) {
    ordered_json config = ordered_json::parse(text);
    const Status status = ApplyEdits(config, One(edits));
    EXPECT_THAT(status.message(), HasSubstr(want)) << text;
    EXPECT_EQ(config, ordered_json::parse(text));
  }
  ordered_json array = ordered_json::array();
  EXPECT_FALSE(ApplyEdits(array, One(edits)).ok());
}

TEST(CollectEditsTest, SpecWideEditsComeOnceBeforeTheFirstDeviceOfTheirSpec) {
  auto first = std::make_shared<Spec>();
  first->file = "/etc/cdi/a.json";
  first->kind = "a.com/gpu";
  first->devices = {{.name = "0"}, {.name = "1"}};
  auto second = std::make_shared<Spec>();
  second->file = "/etc/cdi/b.json";
  second->kind = "b.com/gpu";
  second->devices = {{.name = "x"}};
  const std::vector<ResolvedDevice> devices = {
      {.name = {"a.com", "gpu", "1"}, .spec = first, .device = &first->devices[1]},
      {.name = {"b.com", "gpu", "x"}, .spec = second, .device = &second->devices[0]},
      {.name = {"a.com", "gpu", "0"}, .spec = first, .device = &first->devices[0]},
  };
  const std::vector<EditsSource> edits = CollectEdits(devices);
  ASSERT_EQ(edits.size(), 5u);
  EXPECT_EQ(edits[0].edits, &first->edits);
  EXPECT_EQ(edits[0].device, "a.com/gpu=1");
  EXPECT_EQ(edits[1].edits, &first->devices[1].edits);
  EXPECT_EQ(edits[2].edits, &second->edits);
  EXPECT_EQ(edits[3].edits, &second->devices[0].edits);
  EXPECT_EQ(edits[4].edits, &first->devices[0].edits);
  EXPECT_EQ(edits[4].file, "/etc/cdi/a.json");
}

TEST(StatHostDeviceTest, ReadsCharacterDevices) {
  StatusOr<HostDevice> null = StatHostDevice("/dev/null");
  ASSERT_TRUE(null.ok()) << null.status().message();
  EXPECT_EQ(null->type, "c");
  EXPECT_EQ(null->major, 1);
  EXPECT_EQ(null->minor, 3);
  fakes::TempDir temp;
  const std::string fifo = (temp.path() / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  StatusOr<HostDevice> pipe = StatHostDevice(fifo);
  ASSERT_TRUE(pipe.ok()) << pipe.status().message();
  EXPECT_EQ(pipe->type, "p");
}

}  // namespace
}  // namespace gpuop::agent::cdi::inject
