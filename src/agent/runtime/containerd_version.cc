#include "agent/runtime/containerd_version.h"

#include <chrono>

#include <google/protobuf/empty.pb.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "proto/containerd/services/version/v1/version.grpc.pb.h"

namespace gpuop::agent::runtime {

namespace fs = std::filesystem;

absl::StatusOr<int> ParseContainerdMajor(absl::string_view version) {
  absl::string_view text = absl::StripAsciiWhitespace(version);
  if (!text.empty() && (text.front() == 'v' || text.front() == 'V')) text.remove_prefix(1);
  const size_t dot = text.find('.');
  int major = 0;
  if (dot == absl::string_view::npos || !absl::SimpleAtoi(text.substr(0, dot), &major) ||
      major < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("containerd version \"", version, "\": expected <major>.<minor>..."));
  }
  return major;
}

absl::StatusOr<int> AskContainerdMajor(const fs::path& socket, absl::Duration timeout) {
  const std::shared_ptr<grpc::Channel> channel = grpc::CreateChannel(
      absl::StrCat("unix:", socket.string()), grpc::InsecureChannelCredentials());
  const std::unique_ptr<containerd::services::version::v1::Version::Stub> stub =
      containerd::services::version::v1::Version::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
  containerd::services::version::v1::VersionResponse response;
  const grpc::Status status = stub->Version(&context, google::protobuf::Empty(), &response);
  if (!status.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "containerd at ", socket.string(), " did not tell its version: ", status.error_message()));
  }
  return ParseContainerdMajor(response.version());
}

absl::StatusOr<int> HostContainerdMajor(const fs::path& host_root) {
  absl::Status last = absl::UnavailableError("no containerd socket");
  for (const char* socket : kContainerdSockets) {
    const fs::path path = host_root / fs::path(socket).relative_path();
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      last = absl::UnavailableError(absl::StrCat(path.string(), " does not exist"));
      continue;
    }
    absl::StatusOr<int> major = AskContainerdMajor(path);
    if (major.ok()) return major;
    last = major.status();
  }
  return last;
}

}  // namespace gpuop::agent::runtime
