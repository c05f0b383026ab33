// gpuop's containerd configuration as the real containerd (v2.2.9, the node tier's) reads it:
// each documented starting point is configured by the Configurator on a temporary host root,
// then `containerd --config /etc/containerd/config.toml config dump` runs in a private mount
// namespace with that root's etc/ over /etc. config dump loads the file with its imports exactly
// as containerd does at start (and fails as start would on a bad version or bad TOML), then
// prints the merged configuration, migrated to version 3, which the test parses. config dump
// does not start the plugins, so each starting point is also started for real: containerd with
// its own /run and data directory, its CRI plugin asked by crictl (`crictl info`) whether it is
// ready and which runtime handlers it serves.
//
// Fixtures follow published formats: containerd's docs/cri/config.md (versions 1 and 2 for 1.x,
// 3 for 2.x, the CRI plugin's runtimes and cdi_spec_dirs) and the NVIDIA Container Toolkit's
// `nvidia-ctk runtime configure --drop-in-config` output (a 99-nvidia.toml holding only the
// nvidia handler, the main file importing conf.d/*.toml).

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <toml++/toml.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "agent/runtime/configurator.h"
#include "agent/runtime/containerd.h"
#include "agent/runtime/fake_restarter.h"
#include "agent/runtime/toml_util.h"
#include "common/process.h"
#include "test/cluster/control_plane.h"

namespace gpuop::agent::runtime {
namespace {

namespace fs = std::filesystem;

constexpr char kToolkitBinary[] = "/usr/bin/nvidia-container-runtime";

// containerd's docs/cri/config.md, "Config versions" and the runc runtime for 2.x.
constexpr char kV3[] = R"(version = 3
[plugins.'io.containerd.cri.v1.runtime']
  enable_cdi = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    conf_dir = "/etc/cni/net.d"
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
    SystemdCgroup = true
)";

// The same document's version 1 form (no `version`; plugins by their short IDs), which
// containerd 1.x reads natively and 2.x migrates on every start.
constexpr char kV1[] = R"(# containerd 1.x
[plugins.cri]
  [plugins.cri.cni]
    conf_dir = "/etc/cni/net.d"
  [plugins.cri.containerd]
    default_runtime_name = "runc"
    [plugins.cri.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.cri.containerd.runtimes.runc.options]
        SystemdCgroup = true
)";

// The same document's containerd 1.x form (version 2).
constexpr char kV2[] = R"(version = 2
[plugins."io.containerd.grpc.v1.cri"]
  enable_cdi = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
)";

std::string RunShell(const std::string& command, int* rc) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *rc = -1;
    return out;
  }
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  *rc = pclose(pipe);
  return out;
}

class RuntimeContainerdRealTest : public ::testing::Test {
 protected:
  void SetUp() override {
    containerd_ = ::gpuop::test::DefaultNodeBinDir() / "containerd";
    ASSERT_TRUE(fs::exists(containerd_)) << containerd_ << " is missing: run scripts/setup";
    int rc = 0;
    RunShell("unshare --mount true 2>&1", &rc);
    ASSERT_EQ(rc, 0) << "this tier needs `unshare --mount` (root)";
    root_ = fs::temp_directory_path() /
            absl::StrCat("gpuop-runtime-real-", getpid(), "-",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ResetRoot();
  }

  // An empty host root with the toolkit's runtime binary.
  void ResetRoot() {
    fs::remove_all(root_);
    fs::create_directories(root_ / "etc/containerd");
    Put(kToolkitBinary, "#!/bin/sh\n");
    fs::permissions(root_ / fs::path(kToolkitBinary).relative_path(), fs::perms::owner_all);
  }
  void TearDown() override { fs::remove_all(root_); }

  void Put(const fs::path& path, const std::string& content) {
    const fs::path file = root_ / path.relative_path();
    fs::create_directories(file.parent_path());
    std::ofstream(file) << content;
  }
  std::string Get(const fs::path& path) {
    std::ifstream in(root_ / path.relative_path());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  void Configure() {
    Options options;
    options.add_nvidia_runtime = true;
    options.runtime_binary = kToolkitBinary;
    Configurator configurator(root_, restarter_);
    const absl::StatusOr<ChangeReport> report =
        configurator.Configure(Runtime::kContainerd, options);
    ASSERT_TRUE(report.ok()) << report.status();
  }

  // The configuration the real containerd loads from the root's /etc/containerd/config.toml,
  // or the error it fails with.
  absl::StatusOr<toml::table> Dump() {
    const std::string command =
        absl::StrCat("unshare --mount --propagation private sh -c 'mount --bind ", root_.string(),
                     "/etc /etc && exec ", containerd_.string(),
                     " --config /etc/containerd/config.toml config dump' 2>&1");
    int rc = 0;
    const std::string out = RunShell(command, &rc);
    if (rc != 0) return absl::FailedPreconditionError(absl::StrCat("containerd: ", out));
    return ParseToml(out, "containerd config dump");
  }

  // containerd's built-in configuration, as `config dump` prints it without a file.
  absl::StatusOr<toml::table> DumpDefaults() {
    const fs::path none = root_ / "no-config.toml";
    int rc = 0;
    const std::string out = RunShell(
        absl::StrCat(containerd_.string(), " --config ", none.string(), " config dump 2>&1"), &rc);
    if (rc != 0) return absl::FailedPreconditionError(absl::StrCat("containerd: ", out));
    return ParseToml(out, "containerd config dump");
  }

  // The CRI runtime plugin of the loaded configuration, with runc (SystemdCgroup as the files set
  // it: `systemd_cgroup`) and the nvidia handler checked.
  toml::table LoadedCri(bool systemd_cgroup = true) {
    const absl::StatusOr<toml::table> dump = Dump();
    EXPECT_TRUE(dump.ok()) << dump.status();
    if (!dump.ok()) return {};
    const toml::table* cri = (*dump)["plugins"]["io.containerd.cri.v1.runtime"].as_table();
    EXPECT_NE(cri, nullptr);
    if (cri == nullptr) return {};
    const auto runtimes = (*cri)["containerd"]["runtimes"];
    EXPECT_EQ(runtimes["runc"]["runtime_type"].value<std::string>(), "io.containerd.runc.v2");
    EXPECT_EQ(runtimes["runc"]["options"]["SystemdCgroup"].value_or(false), systemd_cgroup);
    EXPECT_EQ(runtimes["nvidia"]["runtime_type"].value<std::string>(), "io.containerd.runc.v2");
    EXPECT_EQ((*cri)["enable_cdi"].value<bool>(), true);
    return *cri;
  }

  // Starts the real containerd on the root's configuration (in a private mount namespace with
  // its own /run; data under the root) and returns what CRI's `crictl info` says once it serves,
  // or why it never did. containerd checks the CRI runtimes only here, not in config dump: a
  // default_runtime_name without its runtime, say, fails the CRI plugin at start.
  absl::StatusOr<nlohmann::json> StartAndAskCri() {
    const fs::path socket = root_ / "containerd.sock";
    const std::string script = absl::StrCat(
        "mount --bind ", root_.string(), "/etc /etc && mount -t tmpfs gpuop-run /run && exec ",
        containerd_.string(), " --config /etc/containerd/config.toml --root ", root_.string(),
        "/lib --state /run/containerd --address ", socket.string());
    absl::StatusOr<common::Subprocess> daemon =
        common::Subprocess::Spawn({.argv = {"/usr/bin/unshare", "--mount", "--propagation",
                                            "private", "/bin/sh", "-c", script},
                                   .output_path = root_ / "containerd.log"});
    if (!daemon.ok()) return daemon.status();
    const fs::path crictl = ::gpuop::test::DefaultNodeBinDir() / "crictl";
    const std::string ask = absl::StrCat(crictl.string(), " --runtime-endpoint unix://",
                                         socket.string(), " --timeout 5s info 2>&1");
    std::string out;
    for (const absl::Time deadline = absl::Now() + absl::Seconds(60);
         absl::Now() < deadline && daemon->Running(); absl::SleepFor(absl::Milliseconds(250))) {
      if (!fs::exists(socket)) continue;
      int rc = 0;
      out = RunShell(ask, &rc);
      if (rc == 0) {
        (void)daemon->Stop(absl::Seconds(10));
        nlohmann::json info = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
        if (info.is_discarded()) return absl::InternalError(absl::StrCat("crictl info: ", out));
        return info;
      }
    }
    std::ifstream log(root_ / "containerd.log");
    std::stringstream text;
    text << log.rdbuf();
    return absl::FailedPreconditionError(
        absl::StrCat("containerd's CRI never answered (last: ", out, "); its log:\n", text.str()));
  }

  fs::path containerd_;
  fs::path root_;
  RecordingRestarter restarter_;
};

toml::array Dirs(const toml::table& cri) {
  const toml::array* dirs = cri["cdi_spec_dirs"].as_array();
  return dirs != nullptr ? *dirs : toml::array{};
}

TEST_F(RuntimeContainerdRealTest, Version2And3FilesLoadWithRuncAndTheNvidiaHandler) {
  // containerd 2.x reads both: version 3 natively, version 2 migrated.
  for (const char* main : {kV3, kV2}) {
    SCOPED_TRACE(main);
    ResetRoot();
    Put(kContainerdConfigPath, main);
    Configure();
    const toml::table cri = LoadedCri();
    EXPECT_EQ(cri["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"].value<std::string>(),
              kToolkitBinary);
    EXPECT_EQ(Dirs(cri), (toml::array{"/etc/cdi", "/var/run/cdi"}));
  }
}

TEST_F(RuntimeContainerdRealTest, AVersion1FileLoadsWithItsSettingsAndTheHandler) {
  // A file without `version`, and an empty one, are version 1 files; containerd 2.x migrates
  // the main file and the drop-in alike.
  for (const char* main : {kV1, ""}) {
    SCOPED_TRACE(main);
    ResetRoot();
    Put(kContainerdConfigPath, main);
    Configure();
    const bool from_file = *main != '\0';
    const toml::table cri = LoadedCri(/*systemd_cgroup=*/from_file);
    if (from_file) EXPECT_EQ(cri["cni"]["conf_dir"].value<std::string>(), "/etc/cni/net.d");
    EXPECT_EQ(Dirs(cri), (toml::array{"/etc/cdi", "/var/run/cdi"}));
  }
}

TEST_F(RuntimeContainerdRealTest, WithoutAMainFileContainerdKeepsItsDefaultsAndGetsTheHandler) {
  Configure();
  ASSERT_TRUE(fs::exists(root_ / "etc/containerd/config.toml"));
  const toml::table cri = LoadedCri(/*systemd_cgroup=*/false);
  EXPECT_EQ(Dirs(cri), (toml::array{"/etc/cdi", "/var/run/cdi"}));
  // Nothing but the handler and CDI differs from containerd's own defaults.
  const absl::StatusOr<toml::table> defaults = DumpDefaults();
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  toml::table expected = *(*defaults)["plugins"]["io.containerd.cri.v1.runtime"].as_table();
  toml::table loaded = cri;
  loaded["containerd"].as_table()->at("runtimes").as_table()->erase("nvidia");
  expected.insert_or_assign("enable_cdi", true);
  EXPECT_EQ(loaded, expected);
}

TEST_F(RuntimeContainerdRealTest, TheUsersCdiSpecDirsAreMerged) {
  Put(kContainerdConfigPath,
      absl::StrReplaceAll(kV3, {{"enable_cdi = false", "cdi_spec_dirs = [\"/opt/vendor/cdi\"]"}}));
  Configure();
  EXPECT_EQ(Dirs(LoadedCri()), (toml::array{"/opt/vendor/cdi", "/etc/cdi", "/var/run/cdi"}));
}

TEST_F(RuntimeContainerdRealTest, TheToolkitsNvidiaDropInIsKept) {
  Put(kContainerdConfigPath, absl::StrReplaceAll(kV2, {{"version = 2\n",
                                                        "version = 2\nimports = "
                                                        "[\"/etc/containerd/conf.d/*.toml\"]\n"}}));
  Put("/etc/containerd/conf.d/99-nvidia.toml", R"(version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  privileged_without_host_devices = false
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"
)");
  Configure();
  const toml::table cri = LoadedCri();
  EXPECT_EQ(cri["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"].value<std::string>(),
            "/usr/local/nvidia/toolkit/nvidia-container-runtime");
}

TEST_F(RuntimeContainerdRealTest, LaterEditsOfAVersion3MainFileShowThrough) {
  Put(kContainerdConfigPath, kV3);
  Configure();
  // The node's owner edits the main file after gpuop configured it; gpuop does not run again.
  Put(kContainerdConfigPath,
      absl::StrReplaceAll(Get(kContainerdConfigPath), {{"/etc/cni/net.d", "/etc/cni/edited.d"}}));
  const toml::table cri = LoadedCri();
  EXPECT_EQ(cri["cni"]["conf_dir"].value<std::string>(), "/etc/cni/edited.d");
}

TEST_F(RuntimeContainerdRealTest, ContainerdStartsOnWhatGpuopWroteWithTheHandlerServed) {
  // Every starting point gpuop accepts, started for real: the CRI plugin comes up ready with
  // runc and the nvidia handler among its runtime handlers.
  for (const char* main : {kV3, kV2, kV1, static_cast<const char*>(nullptr)}) {
    SCOPED_TRACE(main != nullptr ? main : "no main file");
    ResetRoot();
    if (main != nullptr) Put(kContainerdConfigPath, main);
    Configure();
    const absl::StatusOr<nlohmann::json> info = StartAndAskCri();
    ASSERT_TRUE(info.ok()) << info.status();
    bool runtime_ready = false;
    for (const nlohmann::json& condition :
         info->value("/status/conditions"_json_pointer, nlohmann::json::array())) {
      if (condition.value("type", "") == "RuntimeReady") {
        runtime_ready = condition.value("status", false);
      }
    }
    EXPECT_TRUE(runtime_ready) << info->dump(2);
    std::vector<std::string> handlers;
    for (const nlohmann::json& handler : info->value("runtimeHandlers", nlohmann::json::array())) {
      handlers.push_back(handler.value("name", ""));
    }
    EXPECT_NE(std::find(handlers.begin(), handlers.end(), "nvidia"), handlers.end())
        << info->dump(2);
    EXPECT_NE(std::find(handlers.begin(), handlers.end(), "runc"), handlers.end());
    EXPECT_EQ(info->value("/config/enableCDI"_json_pointer, false), true);
  }
}

TEST_F(RuntimeContainerdRealTest, TheStartCheckSeesACriPluginThatFails) {
  // The negative control of the start check: a default runtime that no table defines fails the
  // CRI plugin when containerd starts, although config dump loads the file.
  Put(kContainerdConfigPath, absl::StrReplaceAll(kV3, {{"default_runtime_name = \"runc\"",
                                                        "default_runtime_name = \"missing\""}}));
  EXPECT_TRUE(Dump().ok());
  EXPECT_FALSE(StartAndAskCri().ok());
}

TEST_F(RuntimeContainerdRealTest, TheCheckSeesAConfigContainerdRefuses) {
  // The negative control: a drop-in whose version is above the main file's (containerd 2.x
  // refuses it) makes config dump fail, so the passing cases above mean something.
  Put(kContainerdConfigPath, kV2);
  Configure();
  Put(kContainerdDropInPath,
      absl::StrReplaceAll(Get(kContainerdDropInPath), {{"version = 2", "version = 3"}}));
  EXPECT_FALSE(Dump().ok());
}

}  // namespace
}  // namespace gpuop::agent::runtime
