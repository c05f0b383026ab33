#include "kube/transport/token_source.h"

#include <fstream>

#include <gtest/gtest.h>

namespace gpuop::kube {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& content) {
  std::ofstream(path, std::ios::trunc) << content;
}

TEST(TokenSourceTest, EmptyAndStatic) {
  TokenSource none;
  EXPECT_EQ(*none.Token(), "");
  TokenSource fixed = TokenSource::Static("  abc\n");
  EXPECT_EQ(*fixed.Token(), "abc");
  EXPECT_FALSE(fixed.from_file());
}

TEST(TokenSourceTest, FileIsReReadWhenItChanges) {
  const fs::path path = fs::temp_directory_path() / ("gpuop-token-" + std::to_string(getpid()));
  Write(path, "first\n");
  TokenSource source = TokenSource::File(path);
  EXPECT_EQ(*source.Token(), "first");
  // A rotated token has another size or modification time.
  Write(path, "second-token\n");
  EXPECT_EQ(*source.Token(), "second-token");
  // Same size, same second: Invalidate() forces the read (what a 401 does).
  Write(path, "third-token!\n");
  fs::last_write_time(path, fs::last_write_time(path));
  source.Invalidate();
  EXPECT_EQ(*source.Token(), "third-token!");
  fs::remove(path);
}

TEST(TokenSourceTest, MissingOrEmptyFileIsUnauthenticated) {
  const fs::path path =
      fs::temp_directory_path() / ("gpuop-token-missing-" + std::to_string(getpid()));
  TokenSource source = TokenSource::File(path);
  auto token = source.Token();
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(token.status().message().find(path.string()), std::string::npos);
  Write(path, "\n");
  EXPECT_EQ(source.Token().status().code(), absl::StatusCode::kUnauthenticated);
  fs::remove(path);
}

}  // namespace
}  // namespace gpuop::kube
