#include "common/files.h"

#include <csignal>

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>

namespace gpuop::common {
namespace {

namespace fs = std::filesystem;

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/gpuop-files-test-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = templ;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FilesTest, WritesCreatesParentsAndReplacesAtomically) {
  const fs::path path = dir_ / "a" / "b" / "config.toml";
  ASSERT_TRUE(WriteFileAtomically(path, "one\n").ok());
  EXPECT_EQ(*ReadFile(path), "one\n");
  ASSERT_TRUE(WriteFileAtomically(path, std::string(200000, 'x')).ok());
  EXPECT_EQ(ReadFile(path)->size(), 200000u);
  // No temporary files are left behind.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(path.parent_path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

TEST_F(FilesTest, AppliesTheMode) {
  const fs::path path = dir_ / "secret";
  ASSERT_TRUE(WriteFileAtomically(path, "s", fs::perms::owner_read | fs::perms::owner_write).ok());
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
}

TEST_F(FilesTest, FailedWriteLeavesTheOriginalUntouched) {
  const fs::path path = dir_ / "keep";
  ASSERT_TRUE(WriteFileAtomically(path, "original").ok());
  // A disk that fills up mid-write, simulated with a file size limit (which also binds root).
  struct rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  struct rlimit small = saved;
  small.rlim_cur = 4096;
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const absl::Status status = WriteFileAtomically(path, std::string(100000, 'n'));
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, old_handler);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find(path.string()), absl::string_view::npos) << status;
  EXPECT_EQ(*ReadFile(path), "original");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);  // The temporary file was removed.
}

TEST_F(FilesTest, WriteOverADirectoryFailsAndCleansUp) {
  const fs::path path = dir_ / "is-a-dir";
  fs::create_directory(path);
  EXPECT_FALSE(WriteFileAtomically(path, "x").ok());
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);  // Only the directory: the temporary file is gone.
}

TEST_F(FilesTest, ReadMissingFile) {
  EXPECT_EQ(ReadFile(dir_ / "absent").status().code(), absl::StatusCode::kNotFound);
  auto maybe = ReadFileIfExists(dir_ / "absent");
  ASSERT_TRUE(maybe.ok());
  EXPECT_FALSE(maybe->has_value());
}

TEST_F(FilesTest, InstallExecutableCopiesOnceWithMode0755) {
  const fs::path source = dir_ / "image" / "tool";
  const fs::path installed = dir_ / "host" / "bin" / "tool";
  ASSERT_TRUE(WriteFileAtomically(source, "program v1").ok());
  absl::StatusOr<bool> first = InstallExecutable(source, installed, "the tool");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(*first);
  EXPECT_EQ(*ReadFile(installed), "program v1");
  EXPECT_EQ(fs::status(installed).permissions() & fs::perms::mask, fs::perms(0755));
  EXPECT_FALSE(InstallExecutable(source, installed, "the tool").value_or(true));
}

TEST_F(FilesTest, InstallExecutableErrorsNameWhatAndTheFile) {
  const absl::StatusOr<bool> missing = InstallExecutable(dir_ / "none", dir_ / "out", "the tool");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("install the tool: "), absl::string_view::npos)
      << missing.status();
  EXPECT_NE(missing.status().message().find((dir_ / "none").string()), absl::string_view::npos);
  ASSERT_TRUE(WriteFileAtomically(dir_ / "empty", "").ok());
  const absl::StatusOr<bool> empty = InstallExecutable(dir_ / "empty", dir_ / "out", "the tool");
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

}  // namespace
}  // namespace gpuop::common
