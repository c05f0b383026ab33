// The built gpuop-container-runtime as containerd's runc shim runs it, against a fake runc: a
// shell script that records its arguments and the bundle's config.json as it finds them.
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spawn.h>
#include <sys/wait.h>

#include "agent/cdi/inject/test_files.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi::inject {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

void Write(const fs::path& path, const std::string& content, fs::perms mode = fs::perms(0644)) {
  testing::WriteTestFile(path, content, mode);
}

std::string Read(const fs::path& path) { return testing::ReadTestFile(path); }

std::vector<std::string> Lines(const fs::path& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

struct Result {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

// Runs the wrapper with `args` and exactly the environment `env`, in `cwd`.
Result RunWrapper(const std::vector<std::string>& args, const std::vector<std::string>& env,
                  const fs::path& cwd, const fs::path& output) {
  std::vector<std::string> argv = {GPUOP_CONTAINER_RUNTIME_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c_argv;
  for (std::string& arg : argv) c_argv.push_back(arg.data());
  c_argv.push_back(nullptr);
  std::vector<std::string> env_copy = env;
  std::vector<char*> c_env;
  for (std::string& entry : env_copy) c_env.push_back(entry.data());
  c_env.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  pid_t pid = -1;
  Result result;
  const int error = posix_spawn(&pid, c_argv[0], &actions, nullptr, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    ADD_FAILURE() << "spawn " << c_argv[0] << ": " << error;
    return result;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = Read(output);
  return result;
}

class ContainerRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The fake runc: $0 and each argument on a line, then a copy of config.json, then the exit
    // status the test asks for.
    Write(fake_runc_,
          "#!/bin/sh\n"
          "printf '%s\\n' \"$0\" \"$@\" > \"$RECORD/argv\"\n"
          "[ -f \"$RECORD_BUNDLE/config.json\" ] && cp \"$RECORD_BUNDLE/config.json\" "
          "\"$RECORD/config.json\"\n"
          "exit \"${FAKE_RUNC_EXIT:-0}\"\n",
          fs::perms(0755));
    Write(spec_dir_ / "gpuop.json", R"({
      "cdiVersion": "0.6.0", "kind": "management.gpuop.io/gpu",
      "devices": [{"name": "all", "containerEdits": {
        "env": ["GPUOP_MANAGEMENT=1"],
        "deviceNodes": [{"path": "/dev/nvidia0", "hostPath": "/dev/full"}]}}]})");
    fs::create_directories(record_);
    fs::create_directories(bundle_);
  }

  std::vector<std::string> Env(bool runc_override = true) const {
    std::vector<std::string> env = {"PATH=" + fake_runc_.parent_path().string() + ":/usr/bin:/bin",
                                    "RECORD=" + record_.string(),
                                    "RECORD_BUNDLE=" + bundle_.string(),
                                    "GPUOP_CDI_SPEC_DIRS=/nonexistent:" + spec_dir_.string()};
    if (runc_override) env.push_back("GPUOP_RUNC=" + fake_runc_.string());
    return env;
  }

  Result Run(const std::vector<std::string>& args, std::vector<std::string> env) {
    return RunWrapper(args, env, bundle_, temp_.path() / "output");
  }

  // What containerd's runc shim runs to create a container.
  std::vector<std::string> CreateArgs() const {
    return {"--root",
            "/run/containerd/runc/k8s.io",
            "--log",
            log_.string(),
            "--log-format",
            "json",
            "--systemd-cgroup",
            "create",
            "--bundle",
            bundle_.string(),
            "--pid-file",
            (bundle_ / "init.pid").string(),
            "c1"};
  }

  static std::string Config(const std::string& devices) {
    return R"({"ociVersion":"1.2.0","process":{"args":["sh"],"env":["PATH=/bin","GPUOP_CDI_DEVICES=)" +
           devices + R"("],"cwd":"/"},"root":{"path":"rootfs"}})";
  }

  fakes::TempDir temp_;
  fs::path fake_runc_ = temp_.path() / "runc-bin/runc";
  fs::path spec_dir_ = temp_.path() / "cdi";
  fs::path record_ = temp_.path() / "record";
  fs::path bundle_ = temp_.path() / "bundle";
  fs::path log_ = temp_.path() / "log.json";
};

TEST_F(ContainerRuntimeTest, CreateEditsTheSpecThenRunsRuncWithTheSameArguments) {
  Write(bundle_ / "config.json", Config("management.gpuop.io/gpu=all"));
  const std::vector<std::string> args = CreateArgs();
  const Result result = Run(args, Env());
  ASSERT_EQ(result.exit_code, 0) << result.out;
  std::vector<std::string> want = {fake_runc_.string()};
  want.insert(want.end(), args.begin(), args.end());
  EXPECT_THAT(Lines(record_ / "argv"), ElementsAreArray(want));

  const nlohmann::json config = nlohmann::json::parse(Read(record_ / "config.json"));
  EXPECT_EQ(config["process"]["env"],
            nlohmann::json::parse(R"(["PATH=/bin","GPUOP_CDI_DEVICES=management.gpuop.io/gpu=all",
                                      "GPUOP_MANAGEMENT=1"])"));
  EXPECT_EQ(
      config["linux"]["devices"],
      nlohmann::json::parse(R"([{"path": "/dev/nvidia0", "type": "c", "major": 1, "minor": 7}])"));
  EXPECT_FALSE(fs::exists(log_));
}

TEST_F(ContainerRuntimeTest, TheBundleDefaultsToTheCurrentDirectory) {
  Write(bundle_ / "config.json", Config("management.gpuop.io/gpu=all"));
  const Result result = Run({"run", "-d", "c1"}, Env());
  ASSERT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(Read(record_ / "config.json"), HasSubstr("/dev/nvidia0"));
}

TEST_F(ContainerRuntimeTest, OtherCommandsPassThroughWithRuncsExitStatus) {
  const std::string text = Config("not a name");
  Write(bundle_ / "config.json", text);
  std::vector<std::string> env = Env(/*runc_override=*/false);  // found on PATH
  env.push_back("FAKE_RUNC_EXIT=3");
  const std::vector<std::string> args = {"--root", "/run/r", "delete", "--force", "c1"};
  const Result result = Run(args, env);
  EXPECT_EQ(result.exit_code, 3) << result.out;
  EXPECT_THAT(Lines(record_ / "argv"),
              ElementsAre(fake_runc_.string(), args[0], args[1], args[2], args[3], args[4]));
  EXPECT_EQ(Read(bundle_ / "config.json"), text);
}

TEST_F(ContainerRuntimeTest, ItSkipsItselfOnPath) {
  Write(bundle_ / "config.json", Config(""));
  const fs::path self_dir = temp_.path() / "self-bin";
  fs::create_directories(self_dir);
  fs::create_symlink(GPUOP_CONTAINER_RUNTIME_BINARY, self_dir / "runc");
  std::vector<std::string> env = Env(/*runc_override=*/false);
  env[0] = "PATH=" + self_dir.string() + ":" + fake_runc_.parent_path().string();
  const Result result = Run({"state", "c1"}, env);
  ASSERT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(Lines(record_ / "argv"), ElementsAre(fake_runc_.string(), "state", "c1"));
}

TEST_F(ContainerRuntimeTest, AFailedCreateIsReportedInRuncsLogAndRuncIsNotRun) {
  const std::string text = Config("management.gpuop.io/gpu=missing");
  Write(bundle_ / "config.json", text);
  Write(log_, "{\"level\":\"info\",\"msg\":\"earlier\"}\n");
  const Result result = Run(CreateArgs(), Env());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.out,
              StartsWith("gpuop-container-runtime: CDI device management.gpuop.io/gpu=missing "
                         "is not defined"));
  EXPECT_FALSE(fs::exists(record_ / "argv"));
  EXPECT_EQ(Read(bundle_ / "config.json"), text);

  const std::vector<std::string> lines = Lines(log_);
  ASSERT_EQ(lines.size(), 2u);
  const nlohmann::json entry = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(entry["level"], "error");
  EXPECT_THAT(entry["msg"].get<std::string>(), AllOf(StartsWith("gpuop-container-runtime: "),
                                                     HasSubstr("management.gpuop.io/gpu=missing")));
  EXPECT_TRUE(entry["time"].is_string());
}

TEST_F(ContainerRuntimeTest, NoRuncIsAClearError) {
  std::vector<std::string> env = Env(/*runc_override=*/false);
  env[0] = "PATH=" + (temp_.path() / "empty").string();
  const Result result = Run({"--log", log_.string(), "--log-format", "json", "state", "c1"}, env);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.out, HasSubstr("gpuop-container-runtime: no runc or crun found in PATH="));
  EXPECT_THAT(Read(log_), HasSubstr("no runc or crun found"));
}

TEST_F(ContainerRuntimeTest, VersionAndHelpAreItsOwnOnlyAlone) {
  Result result = Run({"--version"}, Env());
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out, StartsWith("gpuop-container-runtime "));
  EXPECT_FALSE(fs::exists(record_ / "argv"));
  result = Run({"--help"}, Env());
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out, HasSubstr("GPUOP_CDI_DEVICES"));
  result = Run({"--debug", "--version"}, Env());
  EXPECT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(Lines(record_ / "argv"), ElementsAre(fake_runc_.string(), "--debug", "--version"));
  EXPECT_THAT(Read(temp_.path() / "output"), IsEmpty());
}

}  // namespace
}  // namespace gpuop::agent::cdi::inject
