#ifndef GPUOP_AGENT_CDI_ELF_SONAME_H_
#define GPUOP_AGENT_CDI_ELF_SONAME_H_

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::agent::cdi {

// The DT_SONAME of a shared library: the name the dynamic loader looks it up by
// ("libcuda.so.1" for libcuda.so.570.86.15). The CDI spec asks the hook to create a link with
// that name beside each mounted library, which is what ldconfig would create and what
// dlopen("libcuda.so.1") needs.
//
// Reads ELF32 and ELF64, either byte order, through the program headers only (PT_DYNAMIC for the
// dynamic array, PT_LOAD to map DT_STRTAB's address to a file offset), so stripped libraries
// without section headers work. The file is untrusted input: every offset and count is checked,
// nothing is read beyond what the headers point at, and nothing throws.
//
// NotFound when the file is an ELF object without DT_SONAME; InvalidArgument, saying what is
// wrong, when it is not ELF or its headers are inconsistent.

// Reads `size` bytes at `offset` into `out`; false when the source does not hold them all.
using ElfReadFn = absl::FunctionRef<bool(uint64_t offset, size_t size, char* out)>;

[[nodiscard]] absl::StatusOr<std::string> ParseElfSoname(ElfReadFn read);

// ParseElfSoname over bytes in memory.
[[nodiscard]] absl::StatusOr<std::string> ElfSonameOf(absl::string_view image);

// ParseElfSoname over a file, read with pread (a 30 MB library costs a few small reads). Errors
// opening the file keep their errno code and name the path; parse errors name it too.
[[nodiscard]] absl::StatusOr<std::string> ReadElfSoname(const std::filesystem::path& path);

}  // namespace gpuop::agent::cdi

#endif  // GPUOP_AGENT_CDI_ELF_SONAME_H_
