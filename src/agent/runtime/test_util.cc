#include "agent/runtime/test_util.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include <stdlib.h>

#include "absl/strings/str_cat.h"
#include "common/files.h"

namespace gpuop::agent::runtime {

namespace fs = std::filesystem;

std::string Testdata(const std::string& name) {
  absl::StatusOr<std::string> content = common::ReadFile(fs::path(GPUOP_RUNTIME_TESTDATA) / name);
  EXPECT_TRUE(content.ok()) << content.status();
  return content.ok() ? *content : std::string();
}

void ExpectGolden(const std::string& actual, const std::string& name) {
  const fs::path path = fs::path(GPUOP_RUNTIME_TESTDATA) / "golden" / name;
  const char* update = getenv("GPUOP_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    ASSERT_TRUE(common::WriteFileAtomically(path, actual).ok());
    return;
  }
  absl::StatusOr<std::string> expected = common::ReadFile(path);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(actual, *expected) << "differs from " << path;
}

TempRoot::TempRoot() {
  char templ[] = "/tmp/gpuop-rt-XXXXXX";
  if (mkdtemp(templ) == nullptr) ADD_FAILURE() << "mkdtemp failed";
  path_ = templ;
}

TempRoot::~TempRoot() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

fs::path TempRoot::operator/(const fs::path& host_path) const {
  return path_ / host_path.relative_path();
}

void TempRoot::Put(const fs::path& host_path, const std::string& content) const {
  const fs::path path = *this / host_path;
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  ASSERT_TRUE(out.good()) << "write " << path;
}

std::optional<std::string> TempRoot::Get(const fs::path& host_path) const {
  absl::StatusOr<std::optional<std::string>> content = common::ReadFileIfExists(*this / host_path);
  EXPECT_TRUE(content.ok()) << content.status();
  return content.ok() ? *content : std::nullopt;
}

bool TempRoot::Exists(const fs::path& host_path) const {
  std::error_code ec;
  return fs::exists(fs::symlink_status(*this / host_path, ec));
}

std::string TempRoot::Snapshot() const {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(path_)) {
    if (!entry.is_regular_file()) continue;
    const std::string host = absl::StrCat("/", fs::relative(entry.path(), path_).string());
    if (host == "/var/lib/gpuop/runtime/lock") continue;  // created by every operation
    files[host] = common::ReadFile(entry.path()).value_or("<unreadable>");
  }
  std::string out;
  for (const auto& [path, content] : files) absl::StrAppend(&out, "== ", path, "\n", content);
  return out;
}

}  // namespace gpuop::agent::runtime
