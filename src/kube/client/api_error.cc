#include "kube/client/api_error.h"

#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpuop::kube {
namespace {

constexpr char kReasonPayload[] = "gpuop.io/kubernetes-reason";
constexpr char kHttpPayload[] = "gpuop.io/http-status";

absl::StatusCode CodeFor(int http, absl::string_view reason) {
  switch (http) {
    case 400:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 409:
      return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists
                                       : absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kOutOfRange;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 500:
      return absl::StatusCode::kInternal;
    case 501:
      return absl::StatusCode::kUnimplemented;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      return http >= 500 ? absl::StatusCode::kUnavailable : absl::StatusCode::kUnknown;
  }
}

std::string DefaultReason(int http) {
  switch (http) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "";
  }
}

}  // namespace

absl::Status ApiError(absl::string_view what, int http_status, absl::string_view body) {
  std::string reason;
  std::string message;
  const nlohmann::json status =
      nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (status.is_object() && status.value("kind", "") == "Status") {
    reason = status.value("reason", "");
    message = status.value("message", "");
  }
  if (reason.empty()) reason = DefaultReason(http_status);
  if (message.empty()) message = std::string(body.substr(0, 512));
  absl::Status result(CodeFor(http_status, reason),
                      absl::StrCat(what, ": ", http_status, reason.empty() ? "" : " ", reason,
                                   message.empty() ? "" : ": ", message));
  result.SetPayload(kReasonPayload, absl::Cord(reason));
  result.SetPayload(kHttpPayload, absl::Cord(absl::StrCat(http_status)));
  return result;
}

std::string ApiReason(const absl::Status& status) {
  auto payload = status.GetPayload(kReasonPayload);
  return payload.has_value() ? std::string(*payload) : std::string();
}

int ApiHttpStatus(const absl::Status& status) {
  auto payload = status.GetPayload(kHttpPayload);
  int code = 0;
  if (payload.has_value()) (void)absl::SimpleAtoi(std::string(*payload), &code);
  return code;
}

}  // namespace gpuop::kube
