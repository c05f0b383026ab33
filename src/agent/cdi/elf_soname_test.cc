#include "agent/cdi/elf_soname.h"

#include <cstdint>
#include <random>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi {
namespace {

using ::testing::HasSubstr;

// A minimal shared object laid out as the System V gABI describes it: the ELF header, two
// program headers (PT_LOAD mapping the file at `base`, PT_DYNAMIC), the dynamic array
// (DT_STRTAB, DT_STRSZ, DT_SONAME, DT_NULL) and the string table.
struct ElfSpec {
  bool is64 = true;
  bool big_endian = false;
  const char* soname = "libfoo.so.3";  // nullptr: no DT_SONAME
  uint64_t base = 0x10000;
};

std::string BuildElf(const ElfSpec& spec) {
  const size_t word = spec.is64 ? 8 : 4;
  const size_t ehsize = spec.is64 ? 64 : 52, phentsize = spec.is64 ? 56 : 32;
  const size_t phoff = ehsize, dynoff = phoff + 2 * phentsize;
  const size_t entries = spec.soname != nullptr ? 4 : 3;
  const size_t stroff = dynoff + entries * 2 * word;
  const std::string strtab = std::string("\0", 1) + (spec.soname ? spec.soname : "") + '\0';
  std::string out(stroff + strtab.size(), '\0');
  auto put = [&](size_t at, uint64_t value, size_t size) {
    for (size_t i = 0; i < size; ++i) {
      const size_t shift = 8 * (spec.big_endian ? size - 1 - i : i);
      out[at + i] = static_cast<char>((value >> shift) & 0xff);
    }
  };
  out.replace(0, 4,
              "\x7f"
              "ELF");
  out[4] = spec.is64 ? 2 : 1;
  out[5] = spec.big_endian ? 2 : 1;
  out[6] = 1;     // EV_CURRENT
  put(16, 3, 2);  // ET_DYN
  put(spec.is64 ? 0x20 : 0x1c, phoff, word);
  put(spec.is64 ? 0x36 : 0x2a, phentsize, 2);
  put(spec.is64 ? 0x38 : 0x2c, 2, 2);
  auto program_header = [&](size_t at, uint32_t type, uint64_t offset, uint64_t size) {
    put(at, type, 4);
    const size_t fields = at + (spec.is64 ? 8 : 4);    // ELF64 has p_flags second
    put(fields, offset, word);                         // p_offset
    put(fields + word, spec.base + offset, word);      // p_vaddr
    put(fields + 2 * word, spec.base + offset, word);  // p_paddr
    put(fields + 3 * word, size, word);                // p_filesz
    put(fields + 4 * word, size, word);                // p_memsz
  };
  program_header(phoff, 1, 0, out.size());                           // PT_LOAD
  program_header(phoff + phentsize, 2, dynoff, entries * 2 * word);  // PT_DYNAMIC
  size_t at = dynoff;
  auto dyn = [&](uint64_t tag, uint64_t value) {
    put(at, tag, word);
    put(at + word, value, word);
    at += 2 * word;
  };
  dyn(5, spec.base + stroff);              // DT_STRTAB, an address
  dyn(10, strtab.size());                  // DT_STRSZ
  if (spec.soname != nullptr) dyn(14, 1);  // DT_SONAME, an offset in the string table
  dyn(0, 0);
  out.replace(stroff, strtab.size(), strtab);
  return out;
}

TEST(ElfSonameTest, ReadsTheProjectsFakeDriverLibraries) {
  absl::StatusOr<std::string> nvml = ReadElfSoname(GPUOP_FAKE_NVML_LIBRARY);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  EXPECT_EQ(*nvml, "libnvidia-ml.so.1");
  absl::StatusOr<std::string> cuda = ReadElfSoname(GPUOP_FAKE_CUDA_LIBRARY);
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  EXPECT_EQ(*cuda, "libcuda.so.1");
}

TEST(ElfSonameTest, BothClassesAndByteOrders) {
  for (const bool is64 : {true, false}) {
    for (const bool big : {false, true}) {
      SCOPED_TRACE(testing::Message() << "64-bit " << is64 << " big-endian " << big);
      absl::StatusOr<std::string> soname = ElfSonameOf(BuildElf({.is64 = is64, .big_endian = big}));
      ASSERT_TRUE(soname.ok()) << soname.status();
      EXPECT_EQ(*soname, "libfoo.so.3");
    }
  }
}

TEST(ElfSonameTest, WhatIsNotThere) {
  EXPECT_EQ(ElfSonameOf(BuildElf({.soname = nullptr})).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ElfSonameOf("ELF").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ElfSonameOf("#!/bin/sh\n").status().message(), HasSubstr("not an ELF file"));
  fakes::TempDir dir;
  EXPECT_EQ(ReadElfSoname(dir.path() / "missing.so.1").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadElfSoname(dir.path()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ElfSonameTest, InconsistentHeadersAreInvalid) {
  std::string image = BuildElf({});
  image[0x36] = 40;  // e_phentsize
  EXPECT_THAT(ElfSonameOf(image).status().message(), HasSubstr("program header size"));
  image = BuildElf({.base = 0x10000});
  // DT_STRTAB's address outside every PT_LOAD: the dynamic array starts at 64 + 2 * 56.
  image[176 + 8 + 3] = 0x7f;
  EXPECT_THAT(ElfSonameOf(image).status().message(), HasSubstr("not in a loaded segment"));
}

// Untrusted input: every truncation and a few thousand random corruptions of a valid image end
// in a value or an error, never a crash or a read outside the image (the ASan build checks that).
TEST(ElfSonameTest, TruncatedAndCorruptedImagesNeverCrash) {
  for (const bool is64 : {true, false}) {
    const std::string image = BuildElf({.is64 = is64});
    for (size_t n = 0; n < image.size(); ++n) {
      EXPECT_FALSE(ElfSonameOf(image.substr(0, n)).ok()) << n;
    }
    std::mt19937 random(is64 ? 1 : 2);
    for (int i = 0; i < 4000; ++i) {
      std::string bad = image;
      for (int flips = 0; flips < 4; ++flips) {
        bad[random() % bad.size()] = static_cast<char>(random() & 0xff);
      }
      (void)ElfSonameOf(bad);
    }
  }
}

}  // namespace
}  // namespace gpuop::agent::cdi
