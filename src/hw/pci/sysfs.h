#ifndef GPUOP_HW_PCI_SYSFS_H_
#define GPUOP_HW_PCI_SYSFS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

// Reading and writing sysfs attributes: small text files the kernel renders on each read.
//
// Errors carry the path and the errno's meaning through absl::ErrnoToStatus: NotFound for a
// missing file (often normal: optional attributes, a device that went away), PermissionDenied,
// Unavailable for I/O errors (EIO, EBUSY: a device in reset). Content that does not parse is
// DataLoss ("the kernel file held something unexpected"), naming the path and the content.
//
// Stateless and thread-safe.
namespace gpuop::hw::sysfs {

// The attribute's content with surrounding whitespace (the kernel's trailing newline) removed.
// Reads at most 1 MiB; sysfs attributes are at most one page.
[[nodiscard]] absl::StatusOr<std::string> ReadString(const std::string& path);

// A decimal integer ("-1", "45000").
[[nodiscard]] absl::StatusOr<int64_t> ReadInt(const std::string& path);
// A non-negative decimal integer that may use all 64 bits (KFD ids, byte counts).
[[nodiscard]] absl::StatusOr<uint64_t> ReadUint(const std::string& path);
// A hexadecimal integer with or without "0x" ("0x10de", "0x030200").
[[nodiscard]] absl::StatusOr<uint64_t> ReadHex(const std::string& path);

// The same, empty on any error: for telemetry attributes a device may not have or may fail to
// answer for a moment.
std::optional<int64_t> ReadOptionalInt(const std::string& path);
std::optional<uint64_t> ReadOptionalUint(const std::string& path);
std::optional<std::string> ReadOptionalString(const std::string& path);

// The last component of a symlink's target ("driver" -> "../../../bus/pci/drivers/nvidia" gives
// "nvidia"). NotFound when the link is absent; InvalidArgument when `path` is not a link.
[[nodiscard]] absl::StatusOr<std::string> LinkBasename(const std::string& path);

// The entry names of a directory, sorted; "." and ".." excluded. NotFound when absent.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path);

// Whether `path` exists, following symlinks (a dangling link does not).
bool Exists(const std::string& path);

// Writes `content` to an existing attribute with one open/write/close: sysfs hands the whole
// buffer to the driver in one store call, which accepts or rejects it as a unit. The kernel's
// answer is kept (an out-of-range value is InvalidArgument from the driver's EINVAL).
[[nodiscard]] absl::Status WriteString(const std::string& path, absl::string_view content);

// Parsers shared by the readers above, for content already in memory.
std::optional<int64_t> ParseInt(absl::string_view text);
std::optional<uint64_t> ParseUint(absl::string_view text);
std::optional<uint64_t> ParseHex(absl::string_view text);

// `root` + "/" + `relative` with exactly one separator.
std::string Join(absl::string_view root, absl::string_view relative);

}  // namespace gpuop::hw::sysfs

#endif  // GPUOP_HW_PCI_SYSFS_H_
