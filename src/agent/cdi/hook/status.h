#ifndef GPUOP_AGENT_CDI_HOOK_STATUS_H_
#define GPUOP_AGENT_CDI_HOOK_STATUS_H_

#include <string>
#include <utility>
#include <variant>

// The hook's error type. gpuop-cdi-hook is linked with -static (the runtime runs it on the host,
// whatever the host's distribution), and Debian's abseil CMake targets name shared objects, so
// this module keeps to the standard library: a Status that is OK or carries a message, and a
// StatusOr<T>. Messages say what was attempted and on which path; errors from a system call keep
// its errno.
namespace gpuop::agent::cdi::hook {

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message, int error_number = 0) {
    return Status(std::move(message), true, error_number);
  }

  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }
  // The errno of the failed system call; 0 when the error is not one.
  int error_number() const { return error_number_; }

 private:
  Status(std::string message, bool failed, int error_number)
      : message_(std::move(message)), failed_(failed), error_number_(error_number) {}
  std::string message_;
  bool failed_ = false;
  int error_number_ = 0;
};

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT: implicit, like absl::StatusOr
  StatusOr(Status status) : value_(std::move(status)) {}  // NOLINT; must not be OK

  bool ok() const { return std::holds_alternative<T>(value_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(value_); }
  T& operator*() { return std::get<T>(value_); }
  const T& operator*() const { return std::get<T>(value_); }
  T* operator->() { return &std::get<T>(value_); }
  const T* operator->() const { return &std::get<T>(value_); }

 private:
  std::variant<T, Status> value_;
};

}  // namespace gpuop::agent::cdi::hook

#endif  // GPUOP_AGENT_CDI_HOOK_STATUS_H_
