#include "agent/cdi/inject/spec_lookup.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/cdi/inject/test_files.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi::inject {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

void Write(const fs::path& path, const std::string& content) {
  testing::WriteTestFile(path, content);
}

// A spec of `kind` whose devices each set MARKER=<marker>.
std::string SpecJson(const std::string& kind, const std::vector<std::string>& devices,
                     const std::string& marker) {
  std::string out = R"({"cdiVersion": "0.6.0", "kind": ")" + kind + R"(", "devices": [)";
  for (size_t i = 0; i < devices.size(); ++i) {
    if (i > 0) out += ",";
    out += R"({"name": ")" + devices[i] + R"(", "containerEdits": {"env": ["MARKER=)" + marker +
           R"("]}})";
  }
  return out + "]}";
}

QualifiedName Name(const std::string& text) {
  StatusOr<QualifiedName> name = ParseQualifiedName(text);
  EXPECT_TRUE(name.ok()) << text;
  return *name;
}

class SpecLookupTest : public ::testing::Test {
 protected:
  StatusOr<std::vector<ResolvedDevice>> Resolve(const std::vector<std::string>& names) {
    std::vector<QualifiedName> requests;
    for (const std::string& name : names) requests.push_back(Name(name));
    return ResolveDevices({etc_.string(), run_.string()}, requests);
  }

  fakes::TempDir temp_;
  fs::path etc_ = temp_.path() / "etc/cdi";
  fs::path run_ = temp_.path() / "var/run/cdi";
};

TEST_F(SpecLookupTest, FindsDevicesInRequestOrder) {
  Write(run_ / "gpuop.json", SpecJson("management.gpuop.io/gpu", {"all", "mig-monitor"}, "run"));
  Write(etc_ / "nvidia.json", SpecJson("nvidia.com/gpu", {"0"}, "etc"));
  StatusOr<std::vector<ResolvedDevice>> devices = Resolve(
      {"management.gpuop.io/gpu=mig-monitor", "nvidia.com/gpu=0", "management.gpuop.io/gpu=all"});
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  ASSERT_EQ(devices->size(), 3u);
  EXPECT_EQ((*devices)[0].name.full(), "management.gpuop.io/gpu=mig-monitor");
  EXPECT_EQ((*devices)[0].device->name, "mig-monitor");
  EXPECT_EQ((*devices)[0].spec->file, (run_ / "gpuop.json").string());
  EXPECT_EQ((*devices)[1].spec->file, (etc_ / "nvidia.json").string());
  EXPECT_EQ((*devices)[2].device->name, "all");
  EXPECT_EQ((*devices)[0].spec, (*devices)[2].spec);
}

TEST_F(SpecLookupTest, TheLaterDirectoryWins) {
  Write(etc_ / "a.json", SpecJson("nvidia.com/gpu", {"0", "1"}, "etc"));
  Write(run_ / "b.json", SpecJson("nvidia.com/gpu", {"0"}, "run"));
  StatusOr<std::vector<ResolvedDevice>> devices = Resolve({"nvidia.com/gpu=0", "nvidia.com/gpu=1"});
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  EXPECT_THAT((*devices)[0].device->edits.env, ElementsAre("MARKER=run"));
  EXPECT_THAT((*devices)[1].device->edits.env, ElementsAre("MARKER=etc"));
}

TEST_F(SpecLookupTest, TheSameDeviceTwiceInOneDirectoryIsAnError) {
  Write(etc_ / "a.json", SpecJson("nvidia.com/gpu", {"0"}, "a"));
  Write(etc_ / "b.json", SpecJson("nvidia.com/gpu", {"0"}, "b"));
  StatusOr<std::vector<ResolvedDevice>> devices = Resolve({"nvidia.com/gpu=0"});
  ASSERT_FALSE(devices.ok());
  EXPECT_THAT(devices.status().message(),
              AllOf(HasSubstr("nvidia.com/gpu=0"), HasSubstr((etc_ / "a.json").string()),
                    HasSubstr((etc_ / "b.json").string())));
  // A definition in a later directory settles it.
  Write(run_ / "c.json", SpecJson("nvidia.com/gpu", {"0"}, "c"));
  devices = Resolve({"nvidia.com/gpu=0"});
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  EXPECT_THAT((*devices)[0].device->edits.env, ElementsAre("MARKER=c"));
}

TEST_F(SpecLookupTest, AMissingDeviceNamesItAndTheDirectories) {
  Write(etc_ / "a.json", SpecJson("nvidia.com/gpu", {"0"}, "a"));
  StatusOr<std::vector<ResolvedDevice>> devices = Resolve({"nvidia.com/gpu=7"});
  ASSERT_FALSE(devices.ok());
  EXPECT_THAT(devices.status().message(),
              AllOf(HasSubstr("CDI device nvidia.com/gpu=7 is not defined"),
                    HasSubstr(etc_.string() + ", " + run_.string())));
}

TEST_F(SpecLookupTest, MissingDirectoriesAreSkipped) {
  Write(run_ / "a.json", SpecJson("nvidia.com/gpu", {"0"}, "a"));
  StatusOr<std::vector<ResolvedDevice>> devices = Resolve({"nvidia.com/gpu=0"});
  ASSERT_TRUE(devices.ok()) << devices.status().message();
}

TEST_F(SpecLookupTest, ABrokenSpecOfTheRequestedKindIsAnErrorNamingFileAndField) {
  Write(etc_ / "a.json", SpecJson("nvidia.com/gpu", {"0"}, "a"));
  Write(run_ / "bad.json", R"({"cdiVersion": "0.6.0", "kind": "nvidia.com/gpu", "devices": [
    {"name": "1", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia1", "major": "x"}]}}]})");
  StatusOr<std::vector<ResolvedDevice>> devices = Resolve({"nvidia.com/gpu=0"});
  ASSERT_FALSE(devices.ok());
  EXPECT_THAT(devices.status().message(),
              AllOf(HasSubstr((run_ / "bad.json").string()),
                    HasSubstr("devices[0].containerEdits.deviceNodes[0].major")));
}

TEST_F(SpecLookupTest, SpecsOfOtherKindsAreNotChecked) {
  Write(etc_ / "a.json", SpecJson("nvidia.com/gpu", {"0"}, "a"));
  Write(etc_ / "other.json", R"({"cdiVersion": 3, "kind": "other.com/x", "devices": 7})");
  Write(etc_ / "other.yaml", "cdiVersion: 0.6.0\nkind: other.com/x\ndevices: []\n");
  Write(etc_ / "notes.txt", "not a spec");
  fs::create_directories(etc_ / "dir.json");
  Write(etc_ / "dir.json/inner.json", SpecJson("nvidia.com/gpu", {"9"}, "inner"));
  StatusOr<std::vector<ResolvedDevice>> devices = Resolve({"nvidia.com/gpu=0"});
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  // Subdirectories are not searched.
  devices = Resolve({"nvidia.com/gpu=9"});
  EXPECT_FALSE(devices.ok());
}

TEST_F(SpecLookupTest, AYamlSpecOfTheRequestedKindIsUnsupported) {
  Write(run_ / "a.json", SpecJson("nvidia.com/gpu", {"0"}, "a"));
  Write(etc_ / "nvidia.yaml",
        "---\ncdiVersion: 0.5.0\nkind: \"nvidia.com/gpu\"  # generated\ndevices:\n- name: \"0\"\n");
  StatusOr<std::vector<ResolvedDevice>> devices = Resolve({"nvidia.com/gpu=0"});
  ASSERT_FALSE(devices.ok());
  EXPECT_THAT(devices.status().message(), AllOf(HasSubstr((etc_ / "nvidia.yaml").string()),
                                                HasSubstr("YAML"), HasSubstr("nvidia.com/gpu")));
}

TEST_F(SpecLookupTest, UnreadableFilesDoNotStopTheLookupButExplainAMissingDevice) {
  Write(etc_ / "a.json", SpecJson("nvidia.com/gpu", {"0"}, "a"));
  Write(etc_ / "broken.json", R"({"cdiVersion": "0.6.0", "kind": "nvidia.com/gpu", )");
  Write(run_ / "nokind.json", R"({"cdiVersion": "0.6.0"})");
  StatusOr<std::vector<ResolvedDevice>> devices = Resolve({"nvidia.com/gpu=0"});
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  devices = Resolve({"nvidia.com/gpu=1"});
  ASSERT_FALSE(devices.ok());
  EXPECT_THAT(devices.status().message(),
              AllOf(HasSubstr("nvidia.com/gpu=1"),
                    HasSubstr((etc_ / "broken.json").string() + ": not valid JSON"),
                    HasSubstr((run_ / "nokind.json").string() + ": kind")));
}

TEST_F(SpecLookupTest, NoRequestsReadNothing) {
  StatusOr<std::vector<ResolvedDevice>> devices = ResolveDevices({"/nonexistent"}, {});
  ASSERT_TRUE(devices.ok());
  EXPECT_TRUE(devices->empty());
}

}  // namespace
}  // namespace gpuop::agent::cdi::inject
