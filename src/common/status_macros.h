#ifndef GPUOP_COMMON_STATUS_MACROS_H_
#define GPUOP_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns from the enclosing function when `expr` (an absl::Status) is not OK.
#define GPUOP_RETURN_IF_ERROR(expr)                                                \
  do {                                                                             \
    if (::absl::Status gpuop_status_ = (expr); !gpuop_status_.ok()) [[unlikely]] { \
      return gpuop_status_;                                                        \
    }                                                                              \
  } while (false)

#define GPUOP_STATUS_CONCAT_INNER_(a, b) a##b
#define GPUOP_STATUS_CONCAT_(a, b) GPUOP_STATUS_CONCAT_INNER_(a, b)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status from the enclosing
// function, otherwise moves the value into `lhs`, which may be a declaration.
#define GPUOP_ASSIGN_OR_RETURN(lhs, rexpr) \
  GPUOP_ASSIGN_OR_RETURN_IMPL_(GPUOP_STATUS_CONCAT_(gpuop_statusor_, __LINE__), lhs, rexpr)

#define GPUOP_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                 \
  if (!statusor.ok()) [[unlikely]] {                       \
    return std::move(statusor).status();                   \
  }                                                        \
  lhs = std::move(statusor).value()

#endif  // GPUOP_COMMON_STATUS_MACROS_H_
