#include "hw/pci/sysfs.h"

#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::hw::sysfs {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class PciSysfsTest : public ::testing::Test {
 protected:
  // Files live in t/ so they cannot collide with the directories FakeSysfs creates.
  std::string Put(const std::string& name, const std::string& content) {
    sysfs_.WriteFile("t/" + name, content);
    return Path(name);
  }
  std::string Path(const std::string& name) const { return Join(dir_.string(), "t/" + name); }

  fakes::TempDir dir_;
  fakes::FakeSysfs sysfs_{dir_.path()};
};

TEST_F(PciSysfsTest, ReadsAttributesWithoutTheTrailingNewline) {
  EXPECT_EQ(*ReadString(Put("product_name", "AMD Instinct MI210\n")), "AMD Instinct MI210");
  EXPECT_EQ(*ReadInt(Put("numa_node", "-1\n")), -1);
  EXPECT_EQ(*ReadUint(Put("hive_id", "11638818706288400384\n")), 11638818706288400384ULL);
  EXPECT_EQ(*ReadHex(Put("vendor", "0x10de\n")), 0x10deu);
  EXPECT_EQ(*ReadHex(Put("class", "0x030200\n")), 0x030200u);
  EXPECT_EQ(*ReadHex(Put("unique_id", "19019a2b3c4d5e60\n")), 0x19019a2b3c4d5e60ULL);
  EXPECT_EQ(*ReadString(Put("empty", "")), "");
}

TEST_F(PciSysfsTest, MissingFileIsNotFoundNamingThePath) {
  absl::StatusOr<std::string> text = ReadString(Path("no/such/file"));
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(text.status().message(), HasSubstr(Path("no/such/file")));
  EXPECT_FALSE(ReadOptionalInt(Path("no/such/file")).has_value());
}

TEST_F(PciSysfsTest, GarbageIsDataLossNamingThePathAndTheContent) {
  for (const auto& [file, status] : {std::pair{"a", ReadInt(Put("a", "garbage\n")).status()},
                                     std::pair{"b", ReadUint(Put("b", "-5\n")).status()},
                                     std::pair{"c", ReadHex(Put("c", "0xzz\n")).status()},
                                     std::pair{"d", ReadInt(Put("d", "12 34\n")).status()}}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << file;
    EXPECT_THAT(status.message(), HasSubstr(Path(file))) << file;
  }
  EXPECT_THAT(ReadInt(Put("a", "garbage\n")).status().message(), HasSubstr("\"garbage\""));
  EXPECT_FALSE(ReadOptionalUint(Path("b")).has_value());
}

TEST_F(PciSysfsTest, ParsersRejectWhatTheKernelNeverPrints) {
  EXPECT_EQ(ParseInt(" 42 "), 42);
  EXPECT_EQ(ParseInt("-273150"), -273150);
  EXPECT_FALSE(ParseInt("").has_value());
  EXPECT_FALSE(ParseInt("4x").has_value());
  EXPECT_FALSE(ParseUint("-1").has_value());
  EXPECT_FALSE(ParseUint("18446744073709551616").has_value());  // 2^64
  EXPECT_EQ(ParseHex("0X1002"), 0x1002u);
  EXPECT_EQ(ParseHex("74a1"), 0x74a1u);
  EXPECT_FALSE(ParseHex("0x").has_value());
  EXPECT_FALSE(ParseHex("-0x1").has_value());
}

TEST_F(PciSysfsTest, LinkBasenameIsTheTargetsLastComponent) {
  Put("plain", "x");
  std::filesystem::create_symlink("../../../bus/pci/drivers/nvidia", Path("driver"));
  EXPECT_EQ(*LinkBasename(Path("driver")), "nvidia");
  EXPECT_EQ(LinkBasename(Path("missing")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(LinkBasename(Path("plain")).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(PciSysfsTest, ListDirIsSortedAndMissingDirIsNotFound) {
  Put("list/b", "");
  Put("list/a", "");
  Put("list/c/x", "");
  EXPECT_THAT(*ListDir(Path("list")), ElementsAre("a", "b", "c"));
  EXPECT_EQ(ListDir(Path("nolist")).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(PciSysfsTest, ExistsFollowsLinks) {
  Put("target", "x");
  std::filesystem::create_symlink("target", Path("good"));
  std::filesystem::create_symlink("gone", Path("dangling"));
  EXPECT_TRUE(Exists(Path("good")));
  EXPECT_FALSE(Exists(Path("dangling")));
}

TEST_F(PciSysfsTest, WriteReplacesAnExistingAttributeOnly) {
  const std::string cap = Put("power1_cap", "300000000\n");
  ASSERT_TRUE(WriteString(cap, "250000000\n").ok());
  EXPECT_EQ(sysfs_.ReadFile("t/power1_cap"), "250000000\n");
  absl::Status missing = WriteString(Path("power9_cap"), "1");
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr(Path("power9_cap")));
  EXPECT_FALSE(Exists(Path("power9_cap")));
  EXPECT_FALSE(WriteString(dir_.string(), "1").ok());  // a directory
}

TEST_F(PciSysfsTest, JoinUsesOneSeparator) {
  EXPECT_EQ(Join("/sys/", "/bus/pci"), "/sys/bus/pci");
  EXPECT_EQ(Join("/sys", "bus"), "/sys/bus");
}

}  // namespace
}  // namespace gpuop::hw::sysfs
