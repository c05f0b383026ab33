#include "hw/amd/amd_names.h"

#include <gtest/gtest.h>

namespace gpuop::hw {
namespace {

TEST(AmdNamesTest, GfxTargetFromKfdVersion) {
  struct Case {
    uint32_t version;
    const char* name;
  };
  for (const Case& c : {Case{90010, "gfx90a"}, Case{90402, "gfx942"}, Case{90008, "gfx908"},
                        Case{90012, "gfx90c"}, Case{90500, "gfx950"}, Case{100300, "gfx1030"},
                        Case{110000, "gfx1100"}, Case{110501, "gfx1151"}, Case{120001, "gfx1201"},
                        Case{0, ""}, Case{91600, ""}, Case{90016, ""}}) {
    EXPECT_EQ(GfxTargetName(c.version), c.name) << c.version;
  }
}

TEST(AmdNamesTest, InstinctProductNames) {
  EXPECT_EQ(AmdInstinctProductName(0x74a1), "AMD Instinct MI300X");
  EXPECT_EQ(AmdInstinctProductName(0x74a5), "AMD Instinct MI325X");
  EXPECT_EQ(AmdInstinctProductName(0x740c), "AMD Instinct MI250X / MI250");
  EXPECT_EQ(AmdInstinctProductName(0x740f), "AMD Instinct MI210");
  EXPECT_EQ(AmdInstinctProductName(0x738c), "AMD Instinct MI100");
  EXPECT_EQ(AmdInstinctProductName(0x744c), "");  // a Radeon
}

TEST(AmdNamesTest, FamilyOfDiscreteTargets) {
  EXPECT_EQ(AmdFamilyName(90402), "AI");
  EXPECT_EQ(AmdFamilyName(90010), "AI");
  EXPECT_EQ(AmdFamilyName(90008), "AI");
  EXPECT_EQ(AmdFamilyName(100300), "NV");
  EXPECT_EQ(AmdFamilyName(110000), "GC_11_0_0");
  EXPECT_EQ(AmdFamilyName(120001), "GC_12_0_0");
  EXPECT_EQ(AmdFamilyName(90012), "");   // Renoir APU
  EXPECT_EQ(AmdFamilyName(110501), "");  // Strix Halo APU
  EXPECT_EQ(AmdFamilyName(0), "");
}

}  // namespace
}  // namespace gpuop::hw
