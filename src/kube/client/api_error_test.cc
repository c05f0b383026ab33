#include "kube/client/api_error.h"

#include <gtest/gtest.h>

namespace gpuop::kube {
namespace {

TEST(ApiErrorTest, CarriesReasonMessageAndCode) {
  const absl::Status s =
      ApiError("update nodes gpu-1", 409,
               R"({"kind":"Status","status":"Failure","reason":"Conflict","code":409,
          "message":"Operation cannot be fulfilled on nodes \"gpu-1\": the object has been modified"})");
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(s.message(),
            "update nodes gpu-1: 409 Conflict: Operation cannot be fulfilled on nodes \"gpu-1\": "
            "the object has been modified");
  EXPECT_EQ(ApiReason(s), "Conflict");
  EXPECT_EQ(ApiHttpStatus(s), 409);
}

TEST(ApiErrorTest, MapsStatusCodes) {
  struct Case {
    int http;
    const char* reason;
    absl::StatusCode code;
  };
  for (const Case& c : {Case{400, "BadRequest", absl::StatusCode::kInvalidArgument},
                        Case{401, "Unauthorized", absl::StatusCode::kUnauthenticated},
                        Case{403, "Forbidden", absl::StatusCode::kPermissionDenied},
                        Case{404, "NotFound", absl::StatusCode::kNotFound},
                        Case{409, "AlreadyExists", absl::StatusCode::kAlreadyExists},
                        Case{409, "Conflict", absl::StatusCode::kAborted},
                        Case{410, "Expired", absl::StatusCode::kOutOfRange},
                        Case{422, "Invalid", absl::StatusCode::kInvalidArgument},
                        Case{429, "TooManyRequests", absl::StatusCode::kResourceExhausted},
                        Case{500, "InternalError", absl::StatusCode::kInternal},
                        Case{503, "ServiceUnavailable", absl::StatusCode::kUnavailable},
                        Case{504, "Timeout", absl::StatusCode::kDeadlineExceeded}}) {
    const std::string body = std::string(R"({"kind":"Status","reason":")") + c.reason + "\"}";
    EXPECT_EQ(ApiError("x", c.http, body).code(), c.code) << c.http << " " << c.reason;
  }
  EXPECT_TRUE(IsGone(ApiError("watch pods", 410, "")));
}

TEST(ApiErrorTest, NonStatusBodyIsQuotedAndReasonDefaulted) {
  const absl::Status s = ApiError("get pods p", 502, "<html>bad gateway</html>");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "get pods p: 502: <html>bad gateway</html>");
  const absl::Status nf = ApiError("get pods p", 404, "");
  EXPECT_EQ(nf.message(), "get pods p: 404 NotFound");
  EXPECT_EQ(ApiReason(nf), "NotFound");
  EXPECT_EQ(ApiReason(absl::InternalError("other")), "");
  EXPECT_EQ(ApiHttpStatus(absl::InternalError("other")), 0);
}

}  // namespace
}  // namespace gpuop::kube
