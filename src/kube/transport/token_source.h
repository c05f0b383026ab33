#ifndef GPUOP_KUBE_TRANSPORT_TOKEN_SOURCE_H_
#define GPUOP_KUBE_TRANSPORT_TOKEN_SOURCE_H_

#include <filesystem>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace gpuop::kube {

// The bearer token for requests: a fixed string, or the content of a file that the kubelet
// rewrites when it rotates a bound service-account token. The file is re-read whenever its
// modification time or size changes, and on demand after the server rejected the token.
//
// Thread-safe.
class TokenSource {
 public:
  // A source with no token: Token() returns "".
  TokenSource() = default;
  static TokenSource Static(std::string token);
  static TokenSource File(std::filesystem::path path);

  TokenSource(TokenSource&& other) noexcept;
  TokenSource& operator=(TokenSource&& other) noexcept;

  // The current token, trimmed of surrounding whitespace. Fails when the file cannot be read or
  // is empty; a previously read token is not reused then, since the kubelet removes a token
  // file only when the token is no longer valid.
  [[nodiscard]] absl::StatusOr<std::string> Token();

  // Forces the next Token() to re-read the file.
  void Invalidate();

  bool from_file() const { return !path_.empty(); }

 private:
  std::filesystem::path path_;
  mutable absl::Mutex mu_;
  std::string token_ ABSL_GUARDED_BY(mu_);
  std::filesystem::file_time_type mtime_ ABSL_GUARDED_BY(mu_){};
  uintmax_t size_ ABSL_GUARDED_BY(mu_) = 0;
  bool loaded_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_TRANSPORT_TOKEN_SOURCE_H_
