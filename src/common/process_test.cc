#include "common/process.h"

#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace gpuop::common {
namespace {

namespace fs = std::filesystem;

class ProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/gpuop-process-test-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = templ;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string ReadOutput(const fs::path& path) {
    std::ifstream file(path);
    std::ostringstream out;
    out << file.rdbuf();
    return out.str();
  }

  fs::path dir_;
};

TEST_F(ProcessTest, ReportsExitCode) {
  auto p = Subprocess::Spawn({.argv = {"/bin/sh", "-c", "exit 3"}});
  ASSERT_TRUE(p.ok()) << p.status();
  auto status = p->Wait(absl::Seconds(10));
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 3);
  EXPECT_EQ(p->DescribeExit(), "exited with code 3");
  EXPECT_FALSE(p->Running());
}

TEST_F(ProcessTest, MissingProgramIsNotFound) {
  auto p = Subprocess::Spawn({.argv = {(dir_ / "no-such-program").string()}});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound) << p.status();
  EXPECT_NE(p.status().message().find("no-such-program"), std::string::npos);
}

TEST_F(ProcessTest, EmptyArgvIsInvalid) {
  EXPECT_EQ(Subprocess::Spawn({}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ProcessTest, WritesOutputEnvironmentAndWorkingDirectory) {
  const fs::path out = dir_ / "out.log";
  auto p = Subprocess::Spawn({.argv = {"/bin/sh", "-c", "echo \"$GPUOP_PROBE\"; pwd; echo err >&2"},
                              .env = {"GPUOP_PROBE=hello"},
                              .output_path = out,
                              .working_dir = dir_});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->Wait(absl::Seconds(10)).ok());
  EXPECT_EQ(ReadOutput(out), "hello\n" + fs::canonical(dir_).string() + "\nerr\n");
}

TEST_F(ProcessTest, ReadsItsInputFromAFile) {
  const fs::path in = dir_ / "in.txt";
  const fs::path out = dir_ / "out.log";
  std::ofstream(in) << "get_default_active_thread_percentage";
  auto p = Subprocess::Spawn({.argv = {"/bin/cat"}, .output_path = out, .input_path = in});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->Wait(absl::Seconds(10)).ok());
  EXPECT_EQ(ReadOutput(out), "get_default_active_thread_percentage");
  auto missing = Subprocess::Spawn({.argv = {"/bin/cat"}, .input_path = dir_ / "none"});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
}

TEST_F(ProcessTest, WaitTimesOutWhileRunning) {
  auto p = Subprocess::Spawn({.argv = {"/bin/sleep", "30"}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Wait(absl::Milliseconds(50)).status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(p->Running());
  ASSERT_TRUE(p->Stop(absl::Seconds(5)).ok());
  EXPECT_EQ(p->DescribeExit().rfind("killed by signal 15", 0), 0u) << p->DescribeExit();
}

TEST_F(ProcessTest, StopKillsAProcessThatIgnoresSigterm) {
  const fs::path ready = dir_ / "ready";
  auto p = Subprocess::Spawn(
      {.argv = {"/bin/sh", "-c",
                "trap '' TERM; touch " + ready.string() + "; while :; do sleep 1; done"}});
  ASSERT_TRUE(p.ok()) << p.status();
  for (int i = 0; i < 500 && !fs::exists(ready); ++i) usleep(10000);
  ASSERT_TRUE(fs::exists(ready));
  ASSERT_TRUE(p->Stop(absl::Milliseconds(200)).ok());
  EXPECT_EQ(p->DescribeExit().rfind("killed by signal 9", 0), 0u) << p->DescribeExit();
}

TEST_F(ProcessTest, StopAlsoEndsTheChildsOwnChildren) {
  const fs::path pidfile = dir_ / "grandchild.pid";
  auto p = Subprocess::Spawn(
      {.argv = {"/bin/sh", "-c", "sleep 30 & echo $! > " + pidfile.string() + "; wait"}});
  ASSERT_TRUE(p.ok()) << p.status();
  for (int i = 0; i < 500 && ReadOutput(pidfile).empty(); ++i) usleep(10000);
  const pid_t grandchild = std::stoi(ReadOutput(pidfile));
  ASSERT_TRUE(p->Stop(absl::Seconds(5)).ok());
  // The grandchild was in the child's process group; it is gone (or a zombie of init).
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    std::ifstream stat("/proc/" + std::to_string(grandchild) + "/stat");
    std::string content((std::istreambuf_iterator<char>(stat)), {});
    gone = !stat || content.find(") Z") != std::string::npos;
    if (!gone) usleep(10000);
  }
  EXPECT_TRUE(gone) << "grandchild " << grandchild << " survived";
}

TEST_F(ProcessTest, ChildDiesWithTheThreadThatSpawnedIt) {
  std::optional<Subprocess> child;
  std::thread spawner([&] {
    auto p = Subprocess::Spawn({.argv = {"/bin/sleep", "30"}, .kill_with_parent = true});
    ASSERT_TRUE(p.ok()) << p.status();
    child.emplace(*std::move(p));
  });
  spawner.join();
  ASSERT_TRUE(child.has_value());
  auto status = child->Wait(absl::Seconds(10));
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_TRUE(WIFSIGNALED(*status));
  EXPECT_EQ(WTERMSIG(*status), SIGKILL);
}

TEST_F(ProcessTest, DestructorKillsAndReaps) {
  pid_t pid;
  {
    auto p = Subprocess::Spawn({.argv = {"/bin/sleep", "30"}});
    ASSERT_TRUE(p.ok()) << p.status();
    pid = p->pid();
  }
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);  // Already reaped: not our child any more.
  EXPECT_EQ(errno, ECHILD);
}

}  // namespace
}  // namespace gpuop::common
