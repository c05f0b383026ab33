#include "test/fakes/nvml/embedded.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace gpuop::fakenvml {
namespace {

std::string Errno(int error) { return std::strerror(error); }

uint64_t DecodeLength(const char* bytes) {
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = length << 8 | static_cast<unsigned char>(bytes[i]);
  return length;
}

std::string EncodeLength(uint64_t length) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  return bytes;
}

// Reads exactly `size` bytes at `offset`.
bool ReadAt(int fd, char* out, size_t size, off_t offset) {
  while (size > 0) {
    const ssize_t got = pread(fd, out, size, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    size -= static_cast<size_t>(got);
    offset += got;
  }
  return true;
}

bool WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t wrote = write(fd, data.data(), data.size());
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    data.remove_prefix(static_cast<size_t>(wrote));
  }
  return true;
}

// The length of the YAML a file of `size` bytes ending in `trailer` carries; nullopt when the
// trailer is not ours.
std::optional<uint64_t> TrailerLength(const char* trailer, uint64_t size) {
  if (size < kScenarioTrailerSize ||
      absl::string_view(trailer, kScenarioMagic.size()) != kScenarioMagic) {
    return std::nullopt;
  }
  return DecodeLength(trailer + kScenarioMagic.size());
}

}  // namespace

absl::StatusOr<std::optional<std::string>> ReadEmbeddedScenario(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open the library file to look for ",
                                            "an embedded scenario: ", Errno(errno)));
  }
  struct stat info {};
  std::optional<std::string> yaml;
  absl::Status status;
  char trailer[kScenarioTrailerSize] = {};
  if (fstat(fd, &info) != 0) {
    status = absl::DataLossError(absl::StrCat(path, ": stat: ", Errno(errno)));
  } else if (static_cast<uint64_t>(info.st_size) >= kScenarioTrailerSize &&
             !ReadAt(fd, trailer, sizeof(trailer),
                     info.st_size - static_cast<off_t>(kScenarioTrailerSize))) {
    status = absl::DataLossError(absl::StrCat(path, ": cannot read the file's last bytes"));
  } else if (const std::optional<uint64_t> length =
                 TrailerLength(trailer, static_cast<uint64_t>(info.st_size))) {
    const uint64_t room = static_cast<uint64_t>(info.st_size) - kScenarioTrailerSize;
    if (*length > room || *length > kMaxEmbeddedScenarioBytes) {
      status = absl::DataLossError(
          absl::StrCat(path, ": damaged embedded scenario: its trailer claims ", *length,
                       " bytes, the file has ", room, " before the trailer (limit ",
                       kMaxEmbeddedScenarioBytes, ")"));
    } else {
      std::string text(*length, '\0');
      if (!ReadAt(fd, text.data(), text.size(), static_cast<off_t>(room - *length))) {
        status = absl::DataLossError(absl::StrCat(path, ": cannot read the embedded scenario"));
      } else {
        yaml = std::move(text);
      }
    }
  }
  close(fd);
  if (!status.ok()) return status;
  return yaml;
}

absl::string_view WithoutEmbeddedScenario(absl::string_view file) {
  if (file.size() < kScenarioTrailerSize) return file;
  const std::optional<uint64_t> length =
      TrailerLength(file.data() + file.size() - kScenarioTrailerSize, file.size());
  if (!length || *length > file.size() - kScenarioTrailerSize) return file;
  return file.substr(0, file.size() - kScenarioTrailerSize - *length);
}

std::string WithEmbeddedScenario(absl::string_view library, absl::string_view yaml) {
  return absl::StrCat(WithoutEmbeddedScenario(library), yaml, kScenarioMagic,
                      EncodeLength(yaml.size()));
}

absl::Status WriteLibraryWithScenario(const std::string& library_path, absl::string_view yaml,
                                      const std::string& out_path) {
  if (yaml.size() > kMaxEmbeddedScenarioBytes) {
    return absl::InvalidArgumentError(absl::StrCat("scenario for ", out_path, ": ", yaml.size(),
                                                   " bytes, more than the limit of ",
                                                   kMaxEmbeddedScenarioBytes));
  }
  const int in = open(library_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    return absl::NotFoundError(absl::StrCat("read ", library_path, ": ", Errno(errno)));
  }
  std::string library;
  char buffer[1 << 16];
  while (true) {
    const ssize_t got = read(in, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int error = errno;
      close(in);
      return absl::DataLossError(absl::StrCat("read ", library_path, ": ", Errno(error)));
    }
    if (got == 0) break;
    library.append(buffer, static_cast<size_t>(got));
  }
  close(in);
  const std::string contents = WithEmbeddedScenario(library, yaml);

  std::string temporary = out_path + ".tmp-XXXXXX";
  const int out = mkostemp(temporary.data(), O_CLOEXEC);
  if (out < 0) {
    return absl::UnavailableError(
        absl::StrCat("create a temporary file beside ", out_path, ": ", Errno(errno)));
  }
  std::string failed;
  if (!WriteAll(out, contents)) {
    failed = absl::StrCat("write ", temporary, ": ", Errno(errno));
  } else if (fchmod(out, 0755) != 0) {
    failed = absl::StrCat("chmod ", temporary, ": ", Errno(errno));
  } else if (fsync(out) != 0) {
    failed = absl::StrCat("fsync ", temporary, ": ", Errno(errno));
  }
  if (close(out) != 0 && failed.empty()) {
    failed = absl::StrCat("close ", temporary, ": ", Errno(errno));
  }
  if (failed.empty() && rename(temporary.c_str(), out_path.c_str()) != 0) {
    failed = absl::StrCat("rename ", temporary, " to ", out_path, ": ", Errno(errno));
  }
  if (!failed.empty()) {
    unlink(temporary.c_str());
    return absl::UnavailableError(failed);
  }
  return absl::OkStatus();
}

}  // namespace gpuop::fakenvml
