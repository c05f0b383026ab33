#include "common/file_watch.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "common/files.h"

namespace gpuop::common {
namespace {

namespace fs = std::filesystem;

class FileWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/gpuop-watch-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = templ;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FileWatchTest, SeesAtomicReplacementOfTheWatchedName) {
  FileWatch watch;
  ASSERT_TRUE(watch.Add(dir_ / "run", "layout").ok());  // Created on the way.
  EXPECT_FALSE(watch.Changed());
  ASSERT_TRUE(WriteFileAtomically(dir_ / "run" / "other", "x").ok());
  EXPECT_FALSE(watch.Wait(50));  // Another file: not ours.
  ASSERT_TRUE(WriteFileAtomically(dir_ / "run" / "layout", "1").ok());
  EXPECT_TRUE(watch.Wait(1000));
  EXPECT_FALSE(watch.Changed());
}

TEST_F(FileWatchTest, WholeDirectoryWatch) {
  FileWatch watch;
  ASSERT_TRUE(watch.Add(dir_).ok());
  ASSERT_TRUE(WriteFileAtomically(dir_ / "any", "x").ok());
  EXPECT_TRUE(watch.Wait(1000));
}

}  // namespace
}  // namespace gpuop::common
