#include "agent/cdi/elf_soname.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace gpuop::agent::cdi {
namespace {

// ELF constants (System V gABI).
constexpr unsigned char kElfMagic[4] = {0x7f, 'E', 'L', 'F'};
constexpr unsigned char kClass32 = 1, kClass64 = 2;
constexpr unsigned char kDataLittle = 1, kDataBig = 2;
constexpr uint32_t kPtLoad = 1, kPtDynamic = 2;
constexpr uint64_t kDtNull = 0, kDtStrtab = 5, kDtStrsz = 10, kDtSoname = 14;
constexpr uint16_t kPnXnum = 0xffff;  // the real count is elsewhere; libraries never need it

// Bounds on what a sane library has, so a hostile header cannot make us read or allocate much.
constexpr uint64_t kMaxProgramHeaders = 4096;
constexpr uint64_t kMaxDynamicEntries = 1 << 16;
constexpr size_t kMaxSonameLength = 4096;

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed ELF file: ", what));
}

class Reader {
 public:
  Reader(ElfReadFn read, bool is64, bool big) : read_(read), is64_(is64), big_(big) {}

  bool is64() const { return is64_; }

  // An unsigned integer of `size` bytes (1, 2, 4 or 8) at `offset`, in the file's byte order.
  std::optional<uint64_t> Uint(uint64_t offset, size_t size) const {
    unsigned char bytes[8];
    if (size > sizeof(bytes) || !read_(offset, size, reinterpret_cast<char*>(bytes))) {
      return std::nullopt;
    }
    uint64_t value = 0;
    for (size_t i = 0; i < size; ++i) {
      const size_t shift = 8 * (big_ ? size - 1 - i : i);
      value |= static_cast<uint64_t>(bytes[i]) << shift;
    }
    return value;
  }
  // A word: 8 bytes in ELF64, 4 in ELF32 (addresses, offsets, sizes, dynamic tags and values).
  std::optional<uint64_t> Word(uint64_t offset) const { return Uint(offset, is64_ ? 8 : 4); }
  size_t word_size() const { return is64_ ? 8 : 4; }

  bool Bytes(uint64_t offset, size_t size, char* out) const { return read_(offset, size, out); }

 private:
  ElfReadFn read_;
  bool is64_;
  bool big_;
};

struct Segment {
  uint64_t offset = 0;
  uint64_t vaddr = 0;
  uint64_t filesz = 0;
};

// a + b, or nullopt on overflow.
std::optional<uint64_t> Add(uint64_t a, uint64_t b) {
  if (a > UINT64_MAX - b) return std::nullopt;
  return a + b;
}

}  // namespace

absl::StatusOr<std::string> ParseElfSoname(ElfReadFn read) {
  unsigned char ident[16];
  if (!read(0, sizeof(ident), reinterpret_cast<char*>(ident)) ||
      std::memcmp(ident, kElfMagic, sizeof(kElfMagic)) != 0) {
    return absl::InvalidArgumentError("not an ELF file");
  }
  if (ident[4] != kClass32 && ident[4] != kClass64) return Malformed("unknown ELF class");
  if (ident[5] != kDataLittle && ident[5] != kDataBig) return Malformed("unknown byte order");
  const Reader r(read, ident[4] == kClass64, ident[5] == kDataBig);

  // e_phoff, e_phentsize and e_phnum.
  const std::optional<uint64_t> phoff = r.Word(r.is64() ? 0x20 : 0x1c);
  const std::optional<uint64_t> phentsize = r.Uint(r.is64() ? 0x36 : 0x2a, 2);
  const std::optional<uint64_t> phnum = r.Uint(r.is64() ? 0x38 : 0x2c, 2);
  if (!phoff || !phentsize || !phnum) return Malformed("truncated ELF header");
  const uint64_t want_phentsize = r.is64() ? 56 : 32;
  if (*phnum == 0) return absl::NotFoundError("no program headers, so no DT_SONAME");
  if (*phnum == kPnXnum || *phnum > kMaxProgramHeaders)
    return Malformed("too many program headers");
  if (*phentsize != want_phentsize) return Malformed("unexpected program header size");

  std::vector<Segment> loads;
  std::optional<Segment> dynamic;
  for (uint64_t i = 0; i < *phnum; ++i) {
    const std::optional<uint64_t> at = Add(*phoff, i * want_phentsize);
    if (!at) return Malformed("program header offset overflows");
    const std::optional<uint64_t> type = r.Uint(*at, 4);
    // ELF64: type, flags, offset, vaddr, paddr, filesz. ELF32: type, offset, vaddr, paddr,
    // filesz.
    const uint64_t w = r.word_size();
    const uint64_t base = *at + (r.is64() ? 8 : 4);
    const std::optional<uint64_t> offset = r.Word(base);
    const std::optional<uint64_t> vaddr = r.Word(base + w);
    const std::optional<uint64_t> filesz = r.Word(base + 3 * w);
    if (!type || !offset || !vaddr || !filesz) return Malformed("truncated program headers");
    const Segment segment{.offset = *offset, .vaddr = *vaddr, .filesz = *filesz};
    if (*type == kPtLoad) loads.push_back(segment);
    if (*type == kPtDynamic && !dynamic.has_value()) dynamic = segment;
  }
  if (!dynamic.has_value()) return absl::NotFoundError("no dynamic section, so no DT_SONAME");

  // The dynamic array: (tag, value) pairs up to DT_NULL or the segment's end.
  const uint64_t entry_size = 2 * r.word_size();
  const uint64_t entries = dynamic->filesz / entry_size;
  if (entries > kMaxDynamicEntries) return Malformed("dynamic section too large");
  std::optional<uint64_t> strtab, strsz, soname;
  for (uint64_t i = 0; i < entries; ++i) {
    const std::optional<uint64_t> at = Add(dynamic->offset, i * entry_size);
    if (!at) return Malformed("dynamic entry offset overflows");
    const std::optional<uint64_t> tag = r.Word(*at);
    const std::optional<uint64_t> value = r.Word(*at + r.word_size());
    if (!tag || !value) return Malformed("truncated dynamic section");
    if (*tag == kDtNull) break;
    if (*tag == kDtStrtab) strtab = *value;
    if (*tag == kDtStrsz) strsz = *value;
    if (*tag == kDtSoname) soname = *value;
  }
  if (!soname.has_value()) return absl::NotFoundError("no DT_SONAME");
  if (!strtab.has_value()) return Malformed("DT_SONAME without DT_STRTAB");
  if (strsz.has_value() && *soname >= *strsz) return Malformed("DT_SONAME outside DT_STRSZ");

  // DT_STRTAB is an address: find the PT_LOAD segment whose file image holds it.
  std::optional<uint64_t> name_offset;
  for (const Segment& load : loads) {
    const std::optional<uint64_t> end = Add(load.vaddr, load.filesz);
    if (!end || *strtab < load.vaddr || *strtab >= *end) continue;
    const std::optional<uint64_t> table = Add(load.offset, *strtab - load.vaddr);
    if (table) name_offset = Add(*table, *soname);
    break;
  }
  if (!name_offset.has_value()) return Malformed("DT_STRTAB is not in a loaded segment");

  // The NUL-terminated name, read in small steps so a short file or a missing NUL stops us.
  std::string name;
  const size_t limit =
      strsz.has_value()
          ? static_cast<size_t>(std::min<uint64_t>(kMaxSonameLength, *strsz - *soname))
          : kMaxSonameLength;
  while (name.size() < limit) {
    char c;
    const std::optional<uint64_t> at = Add(*name_offset, name.size());
    if (!at || !r.Bytes(*at, 1, &c)) return Malformed("DT_SONAME runs past the end of the file");
    if (c == '\0') break;
    name.push_back(c);
  }
  if (name.size() >= limit) return Malformed("DT_SONAME is not terminated");
  if (name.empty()) return Malformed("DT_SONAME is empty");
  return name;
}

absl::StatusOr<std::string> ElfSonameOf(absl::string_view image) {
  return ParseElfSoname([image](uint64_t offset, size_t size, char* out) {
    if (offset > image.size() || size > image.size() - offset) return false;
    std::memcpy(out, image.data() + offset, size);
    return true;
  });
}

absl::StatusOr<std::string> ReadElfSoname(const std::filesystem::path& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path.string()));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path.string(), " is not a regular file"));
  }
  // Small reads (headers, dynamic entries, a name byte by byte) go through one cached block.
  uint64_t block_start = UINT64_MAX;
  std::string block;
  absl::StatusOr<std::string> soname = ParseElfSoname([&](uint64_t offset, size_t size, char* out) {
    constexpr uint64_t kBlock = 4096;
    for (size_t done = 0; done < size;) {
      const uint64_t at = offset + done;
      if (at < offset) return false;
      const uint64_t start = at - at % kBlock;
      if (start != block_start) {
        block.resize(kBlock);
        const ssize_t n = pread(fd, block.data(), kBlock, static_cast<off_t>(start));
        if (n <= 0) return false;
        block.resize(static_cast<size_t>(n));
        block_start = start;
      }
      const uint64_t in_block = at - start;
      if (in_block >= block.size()) return false;
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(size - done, block.size() - in_block));
      std::memcpy(out + done, block.data() + in_block, n);
      done += n;
    }
    return true;
  });
  close(fd);
  if (!soname.ok()) {
    return absl::Status(soname.status().code(),
                        absl::StrCat(path.string(), ": ", soname.status().message()));
  }
  return soname;
}

}  // namespace gpuop::agent::cdi
