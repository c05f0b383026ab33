#include "agent/cdi/inject/inject.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "agent/cdi/inject/test_files.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi::inject {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

void Write(const fs::path& path, const std::string& content) {
  testing::WriteTestFile(path, content);
}

std::string Read(const fs::path& path) { return testing::ReadTestFile(path); }

constexpr char kSpec[] = R"({
  "cdiVersion": "0.6.0", "kind": "management.gpuop.io/gpu",
  "containerEdits": {"env": ["GPUOP_MANAGEMENT=1"],
                     "deviceNodes": [{"path": "/dev/nvidiactl", "hostPath": "/dev/null"}]},
  "devices": [
    {"name": "all", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0",
                                                        "hostPath": "/dev/full"}]}},
    {"name": "env-only", "containerEdits": {"env": ["ONLY=1"]}}
  ]})";

class InjectTest : public ::testing::Test {
 protected:
  void SetUp() override { Write(spec_dir_ / "gpuop.json", kSpec); }

  // A config.json as containerd writes it: compact, keys in the runtime-spec's order.
  static std::string Config(const std::string& env) {
    return R"({"ociVersion":"1.2.0","process":{"user":{"uid":0,"gid":0},"args":["sh"],"env":[)" +
           env +
           R"(],"cwd":"/","capabilities":{"effective":["CAP_CHOWN"]}},"root":{"path":"rootfs"},)"
           R"("mounts":[{"destination":"/proc","type":"proc","source":"proc"}],)"
           R"("linux":{"resources":{"devices":[{"allow":false,"access":"rwm"}]},)"
           R"("namespaces":[{"type":"pid"}]}})";
  }

  StatusOr<InjectResult> Inject() {
    return InjectIntoBundle(bundle_.string(), {.spec_dirs = {spec_dir_.string()}});
  }

  fakes::TempDir temp_;
  fs::path bundle_ = temp_.path() / "bundle";
  fs::path config_ = bundle_ / "config.json";
  fs::path spec_dir_ = temp_.path() / "cdi";
};

TEST_F(InjectTest, WithoutTheVariableTheFileIsNotTouched) {
  const std::string text =
      "{\n  \"process\": {\"env\": [\"PATH=/bin\", \"GPUOP_CDI=x\"]},"
      "  \"x\": 1.50, \"y\": \"\\u00e9\"\n}\n";
  Write(config_, text);
  struct stat before {};
  ASSERT_EQ(::stat(config_.c_str(), &before), 0);
  StatusOr<InjectResult> result = Inject();
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(*result, InjectResult::kNotRequested);
  EXPECT_EQ(Read(config_), text);
  struct stat after {};
  ASSERT_EQ(::stat(config_.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
}

TEST_F(InjectTest, AppliesTheRequestedDevicesAndKeepsTheRest) {
  Write(config_, Config(R"("PATH=/bin","GPUOP_CDI_DEVICES=management.gpuop.io/gpu=all")"));
  fs::permissions(config_, fs::perms(0600));
  StatusOr<InjectResult> result = Inject();
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(*result, InjectResult::kRewritten);

  const std::string text = Read(config_);
  const ordered_json config = ordered_json::parse(text);
  // The keys keep their order and the untouched fields their values.
  std::vector<std::string> keys;
  for (const auto& [key, value] : config.items()) keys.push_back(key);
  EXPECT_THAT(keys, ElementsAre("ociVersion", "process", "root", "mounts", "linux"));
  EXPECT_EQ(config["root"], ordered_json::parse(R"({"path":"rootfs"})"));
  EXPECT_EQ(config["linux"]["namespaces"], ordered_json::parse(R"([{"type":"pid"}])"));
  EXPECT_EQ(config["process"]["env"],
            ordered_json::parse(R"(["PATH=/bin","GPUOP_CDI_DEVICES=management.gpuop.io/gpu=all",
                                    "GPUOP_MANAGEMENT=1"])"));
  // Spec-wide edits, then the device's.
  EXPECT_EQ(config["linux"]["devices"], ordered_json::parse(R"([
    {"path": "/dev/nvidiactl", "type": "c", "major": 1, "minor": 3},
    {"path": "/dev/nvidia0", "type": "c", "major": 1, "minor": 7}])"));
  EXPECT_EQ(config["linux"]["resources"]["devices"].size(), 3u);
  EXPECT_EQ(text.find('\n'), std::string::npos) << "written compact";
  EXPECT_EQ(fs::status(config_).permissions(), fs::perms(0600));
  // Nothing but config.json in the bundle: the temporary file was renamed.
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(bundle_)) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_THAT(names, ElementsAre("config.json"));
}

TEST_F(InjectTest, EditsAlreadyThereLeaveTheFileAlone) {
  const std::string text = Config(R"("GPUOP_CDI_DEVICES=management.gpuop.io/gpu=env-only",)"
                                  R"("GPUOP_MANAGEMENT=1","ONLY=1")");
  // A spec whose only edits are env entries the container already has.
  Write(spec_dir_ / "gpuop.json",
        R"({"cdiVersion": "0.6.0", "kind": "management.gpuop.io/gpu",
            "containerEdits": {"env": ["GPUOP_MANAGEMENT=1"]},
            "devices": [{"name": "env-only", "containerEdits": {"env": ["ONLY=1"]}}]})");
  Write(config_, text);
  StatusOr<InjectResult> result = Inject();
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(*result, InjectResult::kUnchanged);
  EXPECT_EQ(Read(config_), text);
}

TEST_F(InjectTest, AnEmptyRequestChangesNothing) {
  const std::string text = Config(R"("GPUOP_CDI_DEVICES=")");
  Write(config_, text);
  StatusOr<InjectResult> result = Inject();
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(*result, InjectResult::kUnchanged);
  EXPECT_EQ(Read(config_), text);
}

TEST_F(InjectTest, ErrorsNameTheProblemAndLeaveTheFile) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {Config(R"("GPUOP_CDI_DEVICES=management.gpuop.io/gpu=all,gpu")"),
       "GPUOP_CDI_DEVICES: CDI device \"gpu\""},
      {Config(R"("GPUOP_CDI_DEVICES=management.gpuop.io/gpu=mig-monitor")"),
       "CDI device management.gpuop.io/gpu=mig-monitor is not defined by any JSON spec in " +
           spec_dir_.string()},
      {R"({"process": {"env": "GPUOP_CDI_DEVICES=x"}})", "process.env is not an array"},
      {"{\"process\": ", "config.json is not valid JSON"},
      {"[]", "config.json is not a JSON object"},
  };
  for (const auto& [text, want] : cases) {
    Write(config_, text);
    StatusOr<InjectResult> result = Inject();
    ASSERT_FALSE(result.ok()) << text;
    EXPECT_THAT(result.status().message(), HasSubstr(want));
    EXPECT_EQ(Read(config_), text);
  }
}

TEST_F(InjectTest, AMissingConfigIsAnErrorNamingIt) {
  StatusOr<InjectResult> result = Inject();
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), AllOf(HasSubstr(config_.string()), HasSubstr("open")));
}

TEST(RequestedDevicesTest, TheLastEntryCounts) {
  StatusOr<std::optional<std::vector<QualifiedName>>> devices =
      RequestedDevices(ordered_json::parse(R"({"process": {"env": [
        "GPUOP_CDI_DEVICES=a.com/gpu=0", 7, "GPUOP_CDI_DEVICES_X=b.com/x=1",
        "GPUOP_CDI_DEVICES=a.com/gpu=1"]}})"));
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  ASSERT_TRUE(devices->has_value());
  EXPECT_THAT(**devices, ElementsAre(QualifiedName{"a.com", "gpu", "1"}));
  devices = RequestedDevices(ordered_json::parse(R"({"process": {"env": ["A=1"]}})"));
  ASSERT_TRUE(devices.ok());
  EXPECT_FALSE(devices->has_value());
  devices = RequestedDevices(ordered_json::parse(R"({"root": {}})"));
  ASSERT_TRUE(devices.ok());
  EXPECT_FALSE(devices->has_value());
}

}  // namespace
}  // namespace gpuop::agent::cdi::inject
