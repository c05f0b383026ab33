// gpuop's containerd configuration as the real containerd (v2.2.9, the node tier's) reads it:
// each documented starting point is configured by the Configurator on a temporary host root,
// then `containerd --config /etc/containerd/config.toml config dump` runs in a private mount
// namespace with that root's etc/ over /etc. config dump loads the file with its imports exactly
// as containerd does at start (and fails as start would on a bad version or bad TOML), then
// prints the merged configuration, migrated to version 3, which the test parses.
//
// Fixtures follow published formats: containerd's docs/cri/config.md (version 2 for 1.x, 3 for
// 2.x, the CRI plugin's runtimes and cdi_spec_dirs) and the NVIDIA Container Toolkit's
// `nvidia-ctk runtime configure --drop-in-config` output (a 99-nvidia.toml holding only the
// nvidia handler, the main file importing conf.d/*.toml).

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <toml++/toml.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "agent/runtime/configurator.h"
#include "agent/runtime/containerd.h"
#include "agent/runtime/fake_restarter.h"
#include "agent/runtime/toml_util.h"
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

  // The CRI runtime plugin of the loaded configuration, with runc and the nvidia handler checked.
  toml::table LoadedCri() {
    const absl::StatusOr<toml::table> dump = Dump();
    EXPECT_TRUE(dump.ok()) << dump.status();
    if (!dump.ok()) return {};
    const toml::table* cri = (*dump)["plugins"]["io.containerd.cri.v1.runtime"].as_table();
    EXPECT_NE(cri, nullptr);
    if (cri == nullptr) return {};
    const auto runtimes = (*cri)["containerd"]["runtimes"];
    EXPECT_EQ(runtimes["runc"]["runtime_type"].value<std::string>(), "io.containerd.runc.v2");
    EXPECT_EQ(runtimes["runc"]["options"]["SystemdCgroup"].value<bool>(), true);
    EXPECT_EQ(runtimes["nvidia"]["runtime_type"].value<std::string>(), "io.containerd.runc.v2");
    EXPECT_EQ((*cri)["enable_cdi"].value<bool>(), true);
    return *cri;
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
