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

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "agent/runtime/configurator.h"
#include "agent/runtime/containerd.h"
#include "agent/runtime/containerd_version.h"
#include "agent/runtime/fake_restarter.h"
#include "agent/runtime/toml_util.h"
#include "common/process.h"
#include "test/cluster/control_plane.h"

namespace gpuop::agent::runtime {
namespace {

namespace fs = std::filesystem;

constexpr char kToolkitBinary[] = "/usr/bin/nvidia-container-runtime";
constexpr char kGpuopBinary[] = "/var/lib/gpuop/bin/gpuop-container-runtime";

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

  // An empty host root with the toolkit's runtime binary and gpuop's.
  void ResetRoot() {
    fs::remove_all(root_);
    fs::create_directories(root_ / "etc/containerd");
    for (const char* binary : {kToolkitBinary, kGpuopBinary}) {
      Put(binary, "#!/bin/sh\n");
      fs::permissions(root_ / fs::path(binary).relative_path(), fs::perms::owner_all);
    }
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

  // As the agent does on this node, whose containerd (2.2.9) tells its version.
  void Configure() {
    Options options;
    options.add_nvidia_runtime = true;
    options.runtime_binary = kToolkitBinary;
    options.add_gpuop_runtime = true;
    options.containerd_major = 2;
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
                     " --config /etc/containerd/config.toml config dump' 2>", StderrPath());
    int rc = 0;
    const std::string out = RunShell(command, &rc);
    if (rc != 0) return absl::FailedPreconditionError(absl::StrCat("containerd: ", Stderr()));
    return ParseToml(out, "containerd config dump");
  }

  // Where the commands' stderr goes (warnings such as a migrated version would spoil their
  // output), and what it holds.
  std::string StderrPath() const { return (root_ / "stderr").string(); }
  std::string Stderr() const {
    std::ifstream in(StderrPath());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  // containerd's built-in configuration, as `config dump` prints it without a file.
  absl::StatusOr<toml::table> DumpDefaults() {
    const fs::path none = root_ / "no-config.toml";
    int rc = 0;
    const std::string out = RunShell(absl::StrCat(containerd_.string(), " --config ", none.string(),
                                                  " config dump 2>", StderrPath()),
                                     &rc);
    if (rc != 0) return absl::FailedPreconditionError(absl::StrCat("containerd: ", Stderr()));
    return ParseToml(out, "containerd config dump");
  }

  // The CRI runtime plugin of the loaded configuration, with runc (SystemdCgroup as the files set
  // it: `systemd_cgroup`), the nvidia handler and gpuop's checked.
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
    EXPECT_EQ(runtimes["gpuop"]["runtime_type"].value<std::string>(), "io.containerd.runc.v2");
    EXPECT_EQ(runtimes["gpuop"]["options"]["BinaryName"].value<std::string>(), kGpuopBinary);
    EXPECT_EQ((*cri)["containerd"]["default_runtime_name"].value<std::string>(), "runc");
    EXPECT_EQ((*cri)["enable_cdi"].value<bool>(), true);
    return *cri;
  }

  // Starts the real containerd on the root's configuration (in a private mount namespace with
  // its own /run; data under the root) and returns what CRI's `crictl info` says once it serves,
  // or why it never did. containerd checks the CRI runtimes only here, not in config dump: a
  // default_runtime_name without its runtime, say, fails the CRI plugin at start.
  // `major`, when given, gets what containerd's Version service says (containerd_version.h).
  absl::StatusOr<nlohmann::json> StartAndAskCri(absl::StatusOr<int>* major = nullptr) {
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
                                         socket.string(), " --timeout 5s info 2>", StderrPath());
    std::string out;
    for (const absl::Time deadline = absl::Now() + absl::Seconds(30);
         absl::Now() < deadline && daemon->Running(); absl::SleepFor(absl::Milliseconds(250))) {
      if (!fs::exists(socket)) continue;
      int rc = 0;
      out = RunShell(ask, &rc);
      if (rc != 0) out = Stderr();
      // containerd registers its services before it serves any: one without CRI's is final.
      if (rc != 0 && absl::StrContains(out, "unknown service runtime.v1.RuntimeService")) break;
      if (rc == 0) {
        if (major != nullptr) *major = AskContainerdMajor(socket);
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

TEST_F(RuntimeContainerdRealTest, AVersion1FileGetsTheHandlerAndKeepsWhatContainerdIgnores) {
  // A file without `version`, and an empty one, are version 1 files. containerd 2.x ignores
  // their CRI settings (kV1's SystemdCgroup = true has no effect: it warns of unknown keys in
  // io.containerd.grpc.v1.cri); gpuop's version 3 drop-in changes the built-in ones, and leaves
  // what the node ignored ignored.
  for (const char* main : {kV1, ""}) {
    SCOPED_TRACE(main);
    ResetRoot();
    Put(kContainerdConfigPath, main);
    const absl::StatusOr<toml::table> before = Dump();
    ASSERT_TRUE(before.ok()) << before.status();
    EXPECT_EQ((*before)["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["runc"]
                       ["options"]["SystemdCgroup"]
                           .value<bool>(),
              false);
    Configure();
    const toml::table cri = LoadedCri(/*systemd_cgroup=*/false);
    EXPECT_EQ(Dirs(cri), (toml::array{"/etc/cdi", "/var/run/cdi"}));
  }
}

TEST_F(RuntimeContainerdRealTest, WithoutAMainFileContainerdKeepsItsDefaultsAndGetsTheHandler) {
  Configure();
  ASSERT_TRUE(fs::exists(root_ / "etc/containerd/config.toml"));
  const toml::table cri = LoadedCri(/*systemd_cgroup=*/false);
  EXPECT_EQ(Dirs(cri), (toml::array{"/etc/cdi", "/var/run/cdi"}));
  // Nothing but the handlers and CDI differs from containerd's own defaults.
  const absl::StatusOr<toml::table> defaults = DumpDefaults();
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  toml::table expected = *(*defaults)["plugins"]["io.containerd.cri.v1.runtime"].as_table();
  toml::table loaded = cri;
  loaded["containerd"].as_table()->at("runtimes").as_table()->erase("nvidia");
  loaded["containerd"].as_table()->at("runtimes").as_table()->erase("gpuop");
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

TEST_F(RuntimeContainerdRealTest, LaterEditsOfTheMainFileShowThrough) {
  // containerd 2.x merges the drop-in key by key, for version 2 files too.
  for (const char* main : {kV3, kV2}) {
    SCOPED_TRACE(main);
    ResetRoot();
    Put(kContainerdConfigPath,
        absl::StrReplaceAll(main, {{"SystemdCgroup = true", "SystemdCgroup = false"}}));
    Configure();
    // The node's owner edits the main file after gpuop configured it; gpuop does not run again.
    Put(kContainerdConfigPath,
        absl::StrReplaceAll(Get(kContainerdConfigPath),
                            {{"SystemdCgroup = false", "SystemdCgroup = true"}}));
    LoadedCri(/*systemd_cgroup=*/true);
  }
}

TEST_F(RuntimeContainerdRealTest, ContainerdStartsOnWhatGpuopWroteWithTheHandlerServed) {
  // Every starting point gpuop accepts, started for real: the CRI plugin comes up ready with
  // runc, the nvidia handler and gpuop's among its runtime handlers.
  for (const char* main : {kV3, kV2, kV1, static_cast<const char*>(nullptr)}) {
    SCOPED_TRACE(main != nullptr ? main : "no main file");
    ResetRoot();
    if (main != nullptr) Put(kContainerdConfigPath, main);
    Configure();
    absl::StatusOr<int> major;
    const absl::StatusOr<nlohmann::json> info = StartAndAskCri(&major);
    ASSERT_TRUE(info.ok()) << info.status();
    // What the agent asks before it configures: the running daemon's version.
    EXPECT_EQ(major.value_or(0), 2) << major.status();
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
    EXPECT_NE(std::find(handlers.begin(), handlers.end(), "gpuop"), handlers.end())
        << info->dump(2);
    EXPECT_NE(std::find(handlers.begin(), handlers.end(), "runc"), handlers.end());
    EXPECT_EQ(info->value("/config/enableCDI"_json_pointer, false), true);
  }
}

TEST_F(RuntimeContainerdRealTest, GpuopsHandlerRunsRuncWithRuncsSettings) {
  // runc's state Root and cgroup driver hold for gpuop's handler as containerd loads it, version
  // 2 and 3 alike.
  for (const char* main : {kV3, kV2}) {
    SCOPED_TRACE(main);
    ResetRoot();
    Put(kContainerdConfigPath,
        absl::StrReplaceAll(main, {{"SystemdCgroup = true",
                                    "SystemdCgroup = true\n    Root = \"/run/gpuop-test-runc\""}}));
    Configure();
    const toml::table cri = LoadedCri(/*systemd_cgroup=*/true);
    const auto options = cri["containerd"]["runtimes"]["gpuop"]["options"];
    EXPECT_EQ(options["Root"].value<std::string>(), "/run/gpuop-test-runc");
    EXPECT_EQ(options["SystemdCgroup"].value<bool>(), true);
    EXPECT_EQ(options["BinaryName"].value<std::string>(), kGpuopBinary);
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
  // The negative control of the load check: a drop-in containerd cannot parse (a string left
  // open) makes config dump fail, as it makes containerd fail at start.
  Put(kContainerdConfigPath, kV2);
  Configure();
  ASSERT_TRUE(Dump().ok());
  Put(kContainerdDropInPath, absl::StrCat(Get(kContainerdDropInPath), "broken = \"\n"));
  EXPECT_FALSE(Dump().ok());
}

}  // namespace
}  // namespace gpuop::agent::runtime
