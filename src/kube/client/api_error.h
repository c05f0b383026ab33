#ifndef GPUOP_KUBE_CLIENT_API_ERROR_H_
#define GPUOP_KUBE_CLIENT_API_ERROR_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gpuop::kube {

// Turns a non-2xx API server response into a Status. `what` says what was attempted and on which
// object ("update nodes/gpu-1"). The message carries the HTTP code, the server's reason and
// message: "update nodes/gpu-1: 409 Conflict: Operation cannot be fulfilled on ...".
//
// Codes: 400 and 422 InvalidArgument; 401 Unauthenticated; 403 PermissionDenied; 404 NotFound;
// 409 AlreadyExists (reason AlreadyExists) or Aborted (a conflict: re-read and retry);
// 410 OutOfRange (the resourceVersion is too old: relist); 429 ResourceExhausted; 500 Internal;
// 501 Unimplemented; 504 DeadlineExceeded; other 5xx Unavailable.
absl::Status ApiError(absl::string_view what, int http_status, absl::string_view body);

// The server's reason ("Conflict", "NotFound", "Invalid", "Expired", "TooManyRequests") carried
// by a Status from ApiError, or "" for other statuses.
std::string ApiReason(const absl::Status& status);

// The HTTP status carried by a Status from ApiError, or 0.
int ApiHttpStatus(const absl::Status& status);

// True for the "resource version too old" answer, as a 410 or as an ERROR watch event.
inline bool IsGone(const absl::Status& status) {
  return status.code() == absl::StatusCode::kOutOfRange;
}

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_CLIENT_API_ERROR_H_
