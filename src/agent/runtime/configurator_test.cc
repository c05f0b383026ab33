#include "agent/runtime/configurator.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/file.h>
#include <toml++/toml.h>
#include <unistd.h>

#include "absl/strings/str_replace.h"
#include "agent/runtime/configurator_test_util.h"
#include "agent/runtime/containerd.h"
#include "agent/runtime/crio.h"
#include "agent/runtime/docker.h"
#include "agent/runtime/fake_restarter.h"
#include "agent/runtime/test_util.h"
#include "agent/runtime/toml_util.h"

namespace gpuop::agent::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A sample main configuration and the one edit configure must make to it.
struct ContainerdSample {
  std::string name;
  std::string file;
  std::string before;  // text in the original
  std::string after;   // what it becomes
};

void PrintTo(const ContainerdSample& sample, std::ostream* os) { *os << sample.file; }

// The full cycle on each sample containerd configuration.
class RuntimeConfiguratorContainerdTest : public RuntimeConfiguratorTest,
                                          public ::testing::WithParamInterface<ContainerdSample> {};

TEST_P(RuntimeConfiguratorContainerdTest, ConfigureIsMinimalIdempotentAndReversible) {
  const ContainerdSample& sample = GetParam();
  const std::string original = Testdata(sample.file);
  root_.Put(kContainerdConfigPath, original);
  root_.Put("/etc/containerd/registry.toml", Testdata("containerd_registry.toml"));
  fs::permissions(root_ / kContainerdConfigPath, fs::perms::owner_read | fs::perms::owner_write);
  const std::string before = root_.Snapshot();
  EXPECT_THAT(States(Status(Runtime::kContainerd)),
              ElementsAre(FileState::kNotConfigured, FileState::kNotConfigured));

  const absl::StatusOr<ChangeReport> first = Configure(Runtime::kContainerd);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->Summary(),
            "containerd: wrote /etc/containerd/conf.d/99-gpuop.toml, added imports to "
            "/etc/containerd/config.toml; restarted containerd (test)");
  EXPECT_THAT(restarter_.calls, ElementsAre(Runtime::kContainerd));
  // The main file gains exactly the imports entry; its original bytes are kept beside it.
  EXPECT_EQ(root_.Get(kContainerdConfigPath),
            absl::StrReplaceAll(original, {{sample.before, sample.after}}));
  EXPECT_EQ(root_.Get(kMainBackup), original);
  std::vector<ImportedFile> imported;
  if (original.find("/etc/containerd/registry.toml") != std::string::npos) {
    imported.push_back({"/etc/containerd/registry.toml", Testdata("containerd_registry.toml")});
  }
  const absl::StatusOr<std::string> drop_in =
      RenderContainerdDropIn(original, imported, GpuOptions());
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  EXPECT_EQ(root_.Get(kContainerdDropInPath), *drop_in);
  // The drop-in copies the main file's permissions (it repeats its settings).
  const fs::perms owner_only = fs::perms::owner_read | fs::perms::owner_write;
  EXPECT_EQ(Mode(kContainerdDropInPath), owner_only);
  EXPECT_EQ(Mode(kContainerdConfigPath), owner_only);
  EXPECT_EQ(Mode(kMainBackup), owner_only);
  const absl::StatusOr<StatusReport> status = Status(Runtime::kContainerd);
  EXPECT_THAT(States(status), ElementsAre(FileState::kConfigured, FileState::kConfigured));
  EXPECT_TRUE(status->Configured());

  const std::string configured = root_.Snapshot();
  const absl::StatusOr<ChangeReport> second = Configure(Runtime::kContainerd);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->Summary(), "containerd: unchanged; no restart");
  EXPECT_EQ(root_.Snapshot(), configured);
  EXPECT_EQ(restarter_.calls.size(), 1u);

  const absl::StatusOr<ChangeReport> undone = Unconfigure(Runtime::kContainerd);
  ASSERT_TRUE(undone.ok()) << undone.status();
  EXPECT_EQ(undone->Summary(),
            "containerd: restored /etc/containerd/config.toml from "
            "/etc/containerd/config.toml.gpuop-backup, removed "
            "/etc/containerd/conf.d/99-gpuop.toml; restarted containerd (test)");
  EXPECT_EQ(root_.Snapshot(), before);
  EXPECT_EQ(Mode(kContainerdConfigPath), owner_only);
  EXPECT_EQ(restarter_.calls.size(), 2u);
  EXPECT_THAT(States(Status(Runtime::kContainerd)),
              ElementsAre(FileState::kNotConfigured, FileState::kNotConfigured));

  const absl::StatusOr<ChangeReport> again = Unconfigure(Runtime::kContainerd);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->Summary(), "containerd: unchanged; no restart");
  EXPECT_EQ(restarter_.calls.size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(
    Samples, RuntimeConfiguratorContainerdTest,
    ::testing::Values(ContainerdSample{"v2", "containerd_v2.toml", "\nversion = 2\n",
                                       absl::StrCat("\nversion = 2\n", kImportsLine)},
                      ContainerdSample{"v3", "containerd_v3.toml", "\nversion = 3\n",
                                       absl::StrCat("\nversion = 3\n", kImportsLine)},
                      ContainerdSample{
                          "imports", "containerd_imports.toml", "registry.toml\",",
                          "registry.toml\", \"/etc/containerd/conf.d/99-gpuop*.toml\""},
                      ContainerdSample{"v1", "containerd_v1.toml",
                                       "\nroot =", absl::StrCat("\n", kImportsLine, "root =")}),
    [](const ::testing::TestParamInfo<ContainerdSample>& param) { return param.param.name; });

TEST_F(RuntimeConfiguratorTest, RefusedConfigsAreLeftUntouched) {
  struct Case {
    std::string sample;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"containerd_malformed.toml", "/etc/containerd/config.toml:6:47: invalid"}}) {
    TempRoot root;
    RecordingRestarter restarter;
    Configurator configurator(root.path(), restarter);
    root.Put(kContainerdConfigPath, Testdata(c.sample));
    const std::string before = root.Snapshot();
    const absl::StatusOr<ChangeReport> result =
        configurator.Configure(Runtime::kContainerd, GpuOptions());
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(Message(result.status()), HasSubstr("containerd: " + c.message));
    EXPECT_EQ(root.Snapshot(), before);
    EXPECT_TRUE(restarter.calls.empty());
    EXPECT_FALSE(configurator.Status(Runtime::kContainerd, GpuOptions()).ok());
  }
}

TEST_F(RuntimeConfiguratorTest, AFileWithoutVersionWaitsForContainerdsVersion) {
  root_.Put(kContainerdConfigPath, Testdata("containerd_v1.toml"));
  const std::string before = root_.Snapshot();
  Options options = GpuOptions();
  options.containerd_major = 0;
  const absl::StatusOr<ChangeReport> result = Configure(Runtime::kContainerd, options);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(result.status()), HasSubstr("containerd's version is unknown"));
  EXPECT_EQ(root_.Snapshot(), before);
  EXPECT_TRUE(restarter_.calls.empty());
}

TEST_F(RuntimeConfiguratorTest, ExistingGlobImportMeansNoEditToTheMainFile) {
  const std::string main =
      "version = 2\nimports = [\"conf.d/*.toml\"]  # platform drop-ins\n" +
      Testdata("containerd_v2.toml").substr(Testdata("containerd_v2.toml").find("\nroot"));
  root_.Put(kContainerdConfigPath, main);
  root_.Put("/etc/containerd/conf.d/10-registry.toml", Testdata("containerd_registry.toml"));
  const std::string before = root_.Snapshot();

  const absl::StatusOr<ChangeReport> first = Configure(Runtime::kContainerd);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->Summary(),
            "containerd: wrote /etc/containerd/conf.d/99-gpuop.toml; restarted containerd (test)");
  EXPECT_EQ(root_.Get(kContainerdConfigPath), main);
  EXPECT_FALSE(root_.Exists(kMainBackup));
  // The other drop-in's CRI settings are carried over; gpuop's own file is not read back.
  const std::string drop_in = *root_.Get(kContainerdDropInPath);
  EXPECT_THAT(drop_in, HasSubstr("https://mirror.internal.example"));
  EXPECT_EQ(Configure(Runtime::kContainerd)->Summary(), "containerd: unchanged; no restart");

  const absl::StatusOr<ChangeReport> undone = Unconfigure(Runtime::kContainerd);
  ASSERT_TRUE(undone.ok()) << undone.status();
  EXPECT_EQ(undone->Summary(),
            "containerd: removed /etc/containerd/conf.d/99-gpuop.toml; restarted containerd "
            "(test)");
  EXPECT_EQ(root_.Snapshot(), before);
  EXPECT_EQ(restarter_.calls.size(), 2u);
}

TEST_F(RuntimeConfiguratorTest, WithoutAMainFileOneIsCreatedAndUnconfigureRemovesIt) {
  // containerd runs with its built-in defaults on such a node (Debian's and Ubuntu's packages
  // install none): gpuop creates the main file that imports its drop-in, and nothing else.
  const std::string before = root_.Snapshot();
  EXPECT_THAT(States(Status(Runtime::kContainerd)),
              ElementsAre(FileState::kNotConfigured, FileState::kNotConfigured));
  const absl::StatusOr<ChangeReport> first = Configure(Runtime::kContainerd);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->Summary(),
            "containerd: wrote /etc/containerd/conf.d/99-gpuop.toml, created "
            "/etc/containerd/config.toml; restarted containerd (test)");
  EXPECT_EQ(root_.Get(kContainerdConfigPath), NewContainerdConfig());
  EXPECT_EQ(root_.Get(kContainerdDropInPath),
            RenderContainerdDropIn(NewContainerdConfig(), {}, GpuOptions()).value_or(""));
  EXPECT_TRUE(root_.Exists("/etc/containerd/config.toml.gpuop-created"));
  EXPECT_THAT(States(Status(Runtime::kContainerd)),
              ElementsAre(FileState::kConfigured, FileState::kConfigured));
  const absl::StatusOr<ChangeReport> second = Configure(Runtime::kContainerd);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->Changed());

  const absl::StatusOr<ChangeReport> undone = Unconfigure(Runtime::kContainerd);
  ASSERT_TRUE(undone.ok()) << undone.status();
  EXPECT_EQ(undone->Summary(),
            "containerd: removed /etc/containerd/config.toml, removed "
            "/etc/containerd/conf.d/99-gpuop.toml; restarted containerd (test)");
  EXPECT_EQ(root_.Snapshot(), before);
}

TEST_F(RuntimeConfiguratorTest, SymlinkedConfigIsRefused) {
  root_.Put("/etc/containerd/real.toml", Testdata("containerd_v2.toml"));
  fs::create_symlink("real.toml", root_ / kContainerdConfigPath);
  const absl::StatusOr<ChangeReport> result = Configure(Runtime::kContainerd);
  EXPECT_THAT(Message(result.status()), HasSubstr("is a symbolic link"));
  EXPECT_TRUE(fs::is_symlink(root_ / kContainerdConfigPath));
  EXPECT_FALSE(root_.Exists(kContainerdDropInPath));
}

TEST_F(RuntimeConfiguratorTest, StatusSeesDriftAndConfigureRepairsIt) {
  root_.Put(kContainerdConfigPath, Testdata("containerd_v2.toml"));
  ASSERT_TRUE(Configure(Runtime::kContainerd).ok());

  root_.Put(kContainerdDropInPath, "version = 2\n");
  EXPECT_THAT(States(Status(Runtime::kContainerd)),
              ElementsAre(FileState::kDrifted, FileState::kConfigured));
  root_.Put(kContainerdConfigPath, Testdata("containerd_v2.toml"));  // imports line gone
  EXPECT_THAT(States(Status(Runtime::kContainerd)),
              ElementsAre(FileState::kDrifted, FileState::kDrifted));
  // Options that differ from what was applied also read as drift.
  root_.Put(kContainerdDropInPath,
            *RenderContainerdDropIn(Testdata("containerd_v2.toml"), {}, GpuOptions()));
  Options other = GpuOptions();
  other.runtime_binary = "/usr/bin/nvidia-container-runtime";
  EXPECT_THAT(States(Status(Runtime::kContainerd, other)),
              ElementsAre(FileState::kDrifted, FileState::kDrifted));

  const absl::StatusOr<ChangeReport> repaired = Configure(Runtime::kContainerd);
  ASSERT_TRUE(repaired.ok()) << repaired.status();
  EXPECT_EQ(repaired->Summary(),
            "containerd: added imports to /etc/containerd/config.toml; restarted containerd "
            "(test)");
  EXPECT_EQ(restarter_.calls.size(), 2u);
  EXPECT_THAT(States(Status(Runtime::kContainerd)),
              ElementsAre(FileState::kConfigured, FileState::kConfigured));
}

TEST_F(RuntimeConfiguratorTest, BackupIsWrittenOnceAndEditsAfterConfigureAreProtected) {
  const std::string original = Testdata("containerd_v2.toml");
  root_.Put(kContainerdConfigPath, original);
  ASSERT_TRUE(Configure(Runtime::kContainerd).ok());
  // Someone changes the main file after gpuop configured it.
  const std::string edited = *root_.Get(kContainerdConfigPath) + "# tuned by hand\n";
  root_.Put(kContainerdConfigPath, edited);
  ASSERT_TRUE(Configure(Runtime::kContainerd).ok());
  EXPECT_EQ(root_.Get(kMainBackup), original);

  // Restoring the backup would lose that change: refused, nothing done.
  const std::string before = root_.Snapshot();
  const absl::StatusOr<ChangeReport> refused = Unconfigure(Runtime::kContainerd);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(refused.status()),
              HasSubstr("/etc/containerd/config.toml was changed after gpuop configured it"));
  EXPECT_EQ(root_.Snapshot(), before);

  const absl::StatusOr<ChangeReport> forced =
      Unconfigure(Runtime::kContainerd, GpuOptions(), /*force=*/true);
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_EQ(root_.Get(kContainerdConfigPath), original);
  EXPECT_FALSE(root_.Exists(kMainBackup));
  EXPECT_FALSE(root_.Exists(kContainerdDropInPath));
}

TEST_F(RuntimeConfiguratorTest, FailedRestartIsRetriedByTheNextConfigure) {
  root_.Put(kContainerdConfigPath, Testdata("containerd_v3.toml"));
  restarter_.failure = absl::UnavailableError("systemctl restart containerd: exited with code 1");
  const absl::StatusOr<ChangeReport> failed = Configure(Runtime::kContainerd);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(failed.status()),
              HasSubstr("containerd: wrote /etc/containerd/conf.d/99-gpuop.toml, added imports to "
                        "/etc/containerd/config.toml; then failed: restart failed: systemctl"));
  const absl::StatusOr<StatusReport> status = Status(Runtime::kContainerd);
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(status->restart_pending);
  EXPECT_FALSE(status->Configured());

  restarter_.failure = absl::OkStatus();
  const absl::StatusOr<ChangeReport> retried = Configure(Runtime::kContainerd);
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_EQ(retried->Summary(),
            "containerd: unchanged; restarted containerd (test) (pending from an earlier run)");
  const absl::StatusOr<ChangeReport> quiet = Configure(Runtime::kContainerd);
  EXPECT_EQ(quiet->Summary(), "containerd: unchanged; no restart");
  EXPECT_EQ(restarter_.calls.size(), 2u);
  EXPECT_TRUE(Status(Runtime::kContainerd)->Configured());
}

TEST_F(RuntimeConfiguratorTest, ConcurrentOperationIsAborted) {
  root_.Put(kContainerdConfigPath, Testdata("containerd_v2.toml"));
  fs::create_directories(root_ / kStateDir);
  const int fd = open((root_ / kStateDir / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  EXPECT_EQ(Configure(Runtime::kContainerd).status().code(), absl::StatusCode::kAborted);
  close(fd);
  EXPECT_TRUE(Configure(Runtime::kContainerd).ok());
}

TEST_F(RuntimeConfiguratorTest, InvalidOptionsAreRejected) {
  Options options;
  options.set_as_default = true;
  EXPECT_EQ(Configure(Runtime::kDocker, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.add_nvidia_runtime = true;
  options.runtime_name = "Nvidia_GPU";
  EXPECT_THAT(Message(Configure(Runtime::kDocker, options).status()),
              HasSubstr("runtime_name \"Nvidia_GPU\" is not a DNS label"));
  EXPECT_FALSE(root_.Exists(kDockerConfigPath));
}

TEST_F(RuntimeConfiguratorTest, CrioCycle) {
  root_.Put(kCrioConfigPath, Testdata("crio.conf"));
  const std::string before = root_.Snapshot();
  const absl::StatusOr<ChangeReport> first = Configure(Runtime::kCrio);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->Summary(),
            "cri-o: wrote /etc/crio/crio.conf.d/99-gpuop.toml; restarted cri-o (test)");
  EXPECT_EQ(root_.Get(kCrioConfigPath), Testdata("crio.conf"));
  EXPECT_EQ(root_.Get(kCrioDropInPath),
            *RenderCrioDropIn({{kCrioConfigPath, Testdata("crio.conf")}}, GpuOptions()));
  EXPECT_THAT(States(Status(Runtime::kCrio)), ElementsAre(FileState::kConfigured));
  EXPECT_EQ(Configure(Runtime::kCrio)->Summary(), "cri-o: unchanged; no restart");
  EXPECT_EQ(restarter_.calls.size(), 1u);

  const absl::StatusOr<ChangeReport> undone = Unconfigure(Runtime::kCrio);
  ASSERT_TRUE(undone.ok()) << undone.status();
  EXPECT_EQ(undone->Summary(),
            "cri-o: removed /etc/crio/crio.conf.d/99-gpuop.toml; restarted cri-o (test)");
  EXPECT_EQ(root_.Snapshot(), before);
  EXPECT_THAT(States(Status(Runtime::kCrio)), ElementsAre(FileState::kNotConfigured));
}

TEST_F(RuntimeConfiguratorTest, CrioMalformedMainConfigIsReported) {
  root_.Put(kCrioConfigPath, "[crio.runtime]\ndefault_runtime = crun\n");
  const absl::StatusOr<ChangeReport> result = Configure(Runtime::kCrio);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(result.status()), HasSubstr("cri-o: /etc/crio/crio.conf:2:"));
  EXPECT_FALSE(root_.Exists(kCrioDropInPath));
  EXPECT_TRUE(restarter_.calls.empty());
}

TEST_F(RuntimeConfiguratorTest, DockerCycleOnAnExistingFile) {
  const std::string original = Testdata("daemon.json");
  root_.Put(kDockerConfigPath, original);
  const std::string before = root_.Snapshot();
  const absl::StatusOr<ChangeReport> first = Configure(Runtime::kDocker);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->Summary(), "docker: updated /etc/docker/daemon.json; restarted docker (test)");
  EXPECT_EQ(root_.Get(kDockerConfigPath), *EditDaemonJson(original, GpuOptions()));
  EXPECT_EQ(root_.Get("/etc/docker/daemon.json.gpuop-backup"), original);
  EXPECT_EQ(Configure(Runtime::kDocker)->Summary(), "docker: unchanged; no restart");
  EXPECT_THAT(States(Status(Runtime::kDocker)), ElementsAre(FileState::kConfigured));

  const absl::StatusOr<ChangeReport> undone = Unconfigure(Runtime::kDocker);
  ASSERT_TRUE(undone.ok()) << undone.status();
  EXPECT_EQ(undone->Summary(),
            "docker: restored /etc/docker/daemon.json from "
            "/etc/docker/daemon.json.gpuop-backup; restarted docker (test)");
  EXPECT_EQ(root_.Snapshot(), before);
  EXPECT_THAT(restarter_.calls, ElementsAre(Runtime::kDocker, Runtime::kDocker));
}

TEST_F(RuntimeConfiguratorTest, DockerCycleWithoutAFile) {
  const absl::StatusOr<ChangeReport> first = Configure(Runtime::kDocker);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->Summary(), "docker: created /etc/docker/daemon.json; restarted docker (test)");
  EXPECT_TRUE(root_.Exists("/etc/docker/daemon.json.gpuop-created"));
  EXPECT_EQ(Mode(kDockerConfigPath), fs::perms::owner_read | fs::perms::owner_write |
                                         fs::perms::group_read | fs::perms::others_read);
  const absl::StatusOr<ChangeReport> undone = Unconfigure(Runtime::kDocker);
  ASSERT_TRUE(undone.ok()) << undone.status();
  EXPECT_EQ(undone->Summary(), "docker: removed /etc/docker/daemon.json; restarted docker (test)");
  EXPECT_FALSE(root_.Exists(kDockerConfigPath));
  EXPECT_FALSE(root_.Exists("/etc/docker/daemon.json.gpuop-created"));
}

TEST_F(RuntimeConfiguratorTest, DockerMalformedFileIsLeftUntouched) {
  root_.Put(kDockerConfigPath, Testdata("daemon_malformed.json"));
  const std::string before = root_.Snapshot();
  const absl::StatusOr<ChangeReport> result = Configure(Runtime::kDocker);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(result.status()),
              HasSubstr("docker: /etc/docker/daemon.json:5:3: invalid JSON"));
  EXPECT_EQ(root_.Snapshot(), before);
  EXPECT_TRUE(restarter_.calls.empty());
}

TEST_F(RuntimeConfiguratorTest, DockerStatusSeesDrift) {
  root_.Put(kDockerConfigPath, Testdata("daemon.json"));
  EXPECT_THAT(States(Status(Runtime::kDocker)), ElementsAre(FileState::kNotConfigured));
  ASSERT_TRUE(Configure(Runtime::kDocker).ok());
  root_.Put(kDockerConfigPath, Testdata("daemon.json"));  // someone put the old file back
  const absl::StatusOr<StatusReport> status = Status(Runtime::kDocker);
  EXPECT_THAT(States(status), ElementsAre(FileState::kDrifted));
  EXPECT_THAT(status->Summary(), HasSubstr("docker: /etc/docker/daemon.json: drifted"));
}

TEST_F(RuntimeConfiguratorTest, WithoutTheToolkitBinaryNoHandlerIsAdded) {
  fs::remove(root_ / kToolkitRuntime);
  root_.Put(kContainerdConfigPath, Testdata("containerd_v3.toml"));
  Options options = GpuOptions();
  options.runtime_binary.clear();  // look for it
  options.set_as_default = true;
  const absl::StatusOr<ChangeReport> report = Configure(Runtime::kContainerd, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->Summary(), HasSubstr("containerd: note: no nvidia runtime handler: "
                                           "/usr/bin/nvidia-container-runtime, "
                                           "/usr/local/nvidia/toolkit/nvidia-container-runtime, "
                                           "/usr/local/bin/nvidia-container-runtime are not on "
                                           "the host"));
  EXPECT_THAT(report->Summary(), HasSubstr("the default runtime is left as it is"));
  // CDI is configured; no runtime points at a binary that is not there, runc stays the default.
  const toml::table cri =
      EffectiveCriRuntime(*root_.Get(kContainerdConfigPath), *root_.Get(kContainerdDropInPath));
  EXPECT_EQ(cri["enable_cdi"].value<bool>(), true);
  EXPECT_FALSE(cri["containerd"]["runtimes"]["nvidia"]);
  EXPECT_EQ(cri["containerd"]["default_runtime_name"].value<std::string>(), "runc");
  EXPECT_THAT(States(Status(Runtime::kContainerd, options)),
              ElementsAre(FileState::kConfigured, FileState::kConfigured));

  // An explicit binary that is not there is not used either.
  EXPECT_THAT(Configure(Runtime::kContainerd, GpuOptions())->Summary(),
              HasSubstr("no nvidia runtime handler: "
                        "/usr/local/nvidia/toolkit/nvidia-container-runtime is not on the host"));
  // A non-executable file is no runtime.
  root_.Put(kToolkitRuntime, "not a program\n");
  EXPECT_THAT(Configure(Runtime::kContainerd, GpuOptions())->Summary(),
              HasSubstr("no nvidia runtime handler"));

  // With only the handler asked for and no binary, nothing is touched at all.
  fs::remove(root_ / kToolkitRuntime);
  root_.Put(kCrioConfigPath, Testdata("crio.conf"));
  const std::string before = root_.Snapshot();
  const size_t restarts = restarter_.calls.size();
  options.enable_cdi = false;
  const absl::StatusOr<ChangeReport> none = Configure(Runtime::kCrio, options);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->Changed());
  EXPECT_EQ(root_.Snapshot(), before);
  EXPECT_EQ(restarter_.calls.size(), restarts);
}

TEST_F(RuntimeConfiguratorTest, APackageInstalledToolkitIsFound) {
  fs::remove(root_ / kToolkitRuntime);
  PutBinary(root_, "/usr/bin/nvidia-container-runtime");
  root_.Put(kContainerdConfigPath, Testdata("containerd_v3.toml"));
  Options options = GpuOptions();
  options.runtime_binary.clear();
  ASSERT_TRUE(Configure(Runtime::kContainerd, options).ok());
  const toml::table cri = CriRuntime(*root_.Get(kContainerdDropInPath));
  EXPECT_EQ(cri["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"].value<std::string>(),
            "/usr/bin/nvidia-container-runtime");
}

TEST_F(RuntimeConfiguratorTest, TheNodesOwnHandlerIsNeverReplaced) {
  // `nvidia-ctk runtime configure` left a working handler in the main file.
  const std::string main = Testdata("containerd_v3.toml") +
                           "      [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes."
                           "nvidia]\n"
                           "        runtime_type = \"io.containerd.runc.v2\"\n"
                           "        [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes."
                           "nvidia.options]\n"
                           "          BinaryName = \"/usr/bin/nvidia-container-runtime\"\n";
  root_.Put(kContainerdConfigPath, main);
  PutBinary(root_, "/usr/bin/nvidia-container-runtime");
  Options options = GpuOptions();  // gpuop would use the toolkit container's binary
  options.set_as_default = true;
  const absl::StatusOr<ChangeReport> report = Configure(Runtime::kContainerd, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->Summary(),
              HasSubstr("note: kept the node's own runtime handler plugins.\"io.containerd.cri.v1."
                        "runtime\".containerd.runtimes.nvidia; gpuop never replaces one"));
  // The drop-in does not touch the handler; the effective one is the node's.
  EXPECT_FALSE(CriRuntime(*root_.Get(kContainerdDropInPath))["containerd"]["runtimes"]["nvidia"]);
  const toml::table cri =
      EffectiveCriRuntime(*root_.Get(kContainerdConfigPath), *root_.Get(kContainerdDropInPath));
  EXPECT_EQ(cri["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"].value<std::string>(),
            "/usr/bin/nvidia-container-runtime");
  EXPECT_EQ(cri["containerd"]["default_runtime_name"].value<std::string>(), "nvidia");
  // Unconfigure gives the node its file back byte for byte, its handler with it.
  ASSERT_TRUE(Unconfigure(Runtime::kContainerd, options).ok());
  EXPECT_EQ(root_.Get(kContainerdConfigPath), main);

  // CRI-O: the node's drop-in defines it.
  root_.Put(kCrioConfigPath, Testdata("crio.conf"));
  root_.Put("/etc/crio/crio.conf.d/50-nvidia.toml",
            "[crio.runtime.runtimes.nvidia]\nruntime_path = \"/usr/bin/nvidia-container-runtime\"\n"
            "runtime_type = \"oci\"\n");
  const absl::StatusOr<ChangeReport> crio = Configure(Runtime::kCrio, options);
  ASSERT_TRUE(crio.ok()) << crio.status();
  EXPECT_THAT(crio->Summary(), HasSubstr("kept the node's own runtime handler "
                                         "crio.runtime.runtimes.nvidia"));
  const toml::table drop_in = toml::parse(*root_.Get(kCrioDropInPath));
  EXPECT_FALSE(drop_in["crio"]["runtime"]["runtimes"]["nvidia"]);
  EXPECT_EQ(drop_in["crio"]["runtime"]["default_runtime"].value<std::string>(), "nvidia");

  // Docker: an entry with another path is the node's.
  root_.Put(kDockerConfigPath,
            R"({"runtimes": {"nvidia": {"path": "/opt/nvidia/runtime", "args": []}}})");
  const absl::StatusOr<ChangeReport> docker = Configure(Runtime::kDocker, GpuOptions());
  ASSERT_TRUE(docker.ok()) << docker.status();
  EXPECT_THAT(docker->Summary(), HasSubstr("kept the node's own runtime handler runtimes.nvidia"));
  EXPECT_THAT(*root_.Get(kDockerConfigPath), HasSubstr("/opt/nvidia/runtime"));
}

TEST_F(RuntimeConfiguratorTest, CrioIsNeverDefaultedToAMissingHandler) {
  fs::remove(root_ / kToolkitRuntime);
  root_.Put(kCrioConfigPath, Testdata("crio.conf"));
  Options options = GpuOptions();
  options.set_as_default = true;
  const absl::StatusOr<ChangeReport> report = Configure(Runtime::kCrio, options);
  ASSERT_TRUE(report.ok()) << report.status();
  const toml::table drop_in = toml::parse(*root_.Get(kCrioDropInPath));
  EXPECT_FALSE(drop_in["crio"]["runtime"]["runtimes"]);
  EXPECT_FALSE(drop_in["crio"]["runtime"]["default_runtime"]);
  EXPECT_TRUE(drop_in["crio"]["runtime"]["cdi_spec_dirs"]);
}

// gpuop's own runtime handler.

}  // namespace
}  // namespace gpuop::agent::runtime
