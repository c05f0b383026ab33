// The server's message types and address parsing.
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/http/server.h"

namespace gpuop::http {

absl::string_view Request::Header(absl::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return "";
}

Response Response::Text(int status, absl::string_view text) {
  Response response;
  response.status = status;
  response.body = absl::StrCat(text, "\n");
  return response;
}

absl::StatusOr<std::pair<std::string, int>> ParseListenAddress(absl::string_view address) {
  const auto invalid = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("listen address \"", address, "\": ", why));
  };
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) return invalid("expected host:port or :port");
  absl::string_view host = address.substr(0, colon);
  int port = 0;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return invalid("the port must be a number from 0 to 65535");
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != absl::string_view::npos) {
    return invalid("write IPv6 addresses in brackets: [::1]:9400");
  }
  return std::make_pair(std::string(host), port);
}

}  // namespace gpuop::http
