#ifndef GPUOP_COMMON_HTTP_INTERNAL_REQUEST_PARSER_H_
#define GPUOP_COMMON_HTTP_INTERNAL_REQUEST_PARSER_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "common/http/server.h"

namespace gpuop::http::internal {

// The outcome of parsing the start of a connection's input.
struct ParseResult {
  enum class Kind {
    kIncomplete,  // the header section has not ended yet; read more
    kComplete,    // `request` is filled in; `consumed` bytes were the request head
    kError,       // answer `status` with `reason` and close
  };
  Kind kind = Kind::kIncomplete;
  size_t consumed = 0;
  int status = 0;
  std::string reason;
};

// Parses an HTTP/1.x request line and header fields (RFC 9112) from `data`, which holds what a
// client has sent so far. Strict where leniency invites smuggling or confusion: obsolete line
// folding, whitespace before a colon, control characters and targets that are not in
// origin-form ("/path?query") are 400; versions other than 1.x are 505; more than `max_fields`
// header fields are 431. Lines may end in CRLF or a bare LF. A body, if any, is not read.
// Untrusted input: never reads outside `data` and allocates at most O(data.size()).
ParseResult ParseRequestHead(absl::string_view data, size_t max_fields, Request& request);

// The reason phrase of a status code ("Not Found"); "Unknown" for codes it does not list.
absl::string_view ReasonPhrase(int status);

}  // namespace gpuop::http::internal

#endif  // GPUOP_COMMON_HTTP_INTERNAL_REQUEST_PARSER_H_
