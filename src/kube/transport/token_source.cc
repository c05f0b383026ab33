#include "kube/transport/token_source.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace gpuop::kube {

TokenSource TokenSource::Static(std::string token) {
  TokenSource source;
  absl::MutexLock lock(&source.mu_);
  source.token_ = std::string(absl::StripAsciiWhitespace(token));
  source.loaded_ = true;
  return source;
}

TokenSource TokenSource::File(std::filesystem::path path) {
  TokenSource source;
  source.path_ = std::move(path);
  return source;
}

TokenSource::TokenSource(TokenSource&& other) noexcept { *this = std::move(other); }

TokenSource& TokenSource::operator=(TokenSource&& other) noexcept {
  if (this == &other) return *this;
  absl::MutexLock a(&mu_);
  absl::MutexLock b(&other.mu_);
  path_ = std::move(other.path_);
  token_ = std::move(other.token_);
  mtime_ = other.mtime_;
  size_ = other.size_;
  loaded_ = other.loaded_;
  return *this;
}

absl::StatusOr<std::string> TokenSource::Token() {
  absl::MutexLock lock(&mu_);
  if (path_.empty()) return token_;
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(path_, ec);
  const uintmax_t size = ec ? 0 : std::filesystem::file_size(path_, ec);
  if (ec) {
    loaded_ = false;
    return absl::UnauthenticatedError(
        absl::StrCat("token file ", path_.string(), ": ", ec.message()));
  }
  if (loaded_ && mtime == mtime_ && size == size_) return token_;
  std::ifstream file(path_);
  std::ostringstream content;
  content << file.rdbuf();
  std::string token(absl::StripAsciiWhitespace(content.str()));
  if (!file || token.empty()) {
    loaded_ = false;
    return absl::UnauthenticatedError(
        absl::StrCat("token file ", path_.string(), ": empty or unreadable"));
  }
  token_ = std::move(token);
  mtime_ = mtime;
  size_ = size;
  loaded_ = true;
  return token_;
}

void TokenSource::Invalidate() {
  absl::MutexLock lock(&mu_);
  if (!path_.empty()) loaded_ = false;
}

}  // namespace gpuop::kube
