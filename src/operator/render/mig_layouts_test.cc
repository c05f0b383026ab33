// The default MIG layouts the operator ships are NVIDIA's: the same layouts, board filters and
// profile counts as the documented default configuration (the MIG manager's fixture
// src/agent/mig/testdata/mig-parted-default.yaml, written from NVIDIA's documentation), read by
// the MIG manager's own parser.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/mig/mig_config.h"
#include "operator/render/config_maps.h"

namespace gpuop::op::render {
namespace {

// One line per entry: "<layout>[i]: filter 0x20B010DE,... devices all|0,1 on|off 1g.5gb=2,..."
std::vector<std::string> Describe(const agent::mig::MigConfig& config) {
  std::vector<std::string> lines;
  for (const auto& [name, entries] : config.layouts) {
    for (size_t i = 0; i < entries.size(); ++i) {
      const agent::mig::MigConfigEntry& e = entries[i];
      std::vector<std::string> ids;
      for (const auto& id : e.pci_ids) ids.push_back(absl::StrCat(absl::Hex(id.device_id)));
      lines.push_back(absl::StrCat(name, "[", i, "]: filter ", absl::StrJoin(ids, ","),
                                   absl::StrJoin(e.device_filter, ","), " devices ",
                                   e.devices.all ? "all" : absl::StrJoin(e.devices.indexes, ","),
                                   e.mig_enabled ? " on " : " off ",
                                   absl::StrJoin(e.mig_devices, ",", absl::PairFormatter("="))));
    }
  }
  return lines;
}

TEST(MigLayoutsTest, TheDefaultLayoutsAreNvidiasDocumentedOnes) {
  auto rendered = agent::mig::ParseMigConfig(DefaultMigLayouts(), "gpuop-mig-config");
  ASSERT_TRUE(rendered.ok()) << rendered.status();
  auto documented =
      agent::mig::LoadMigConfig(std::string(GPUOP_MIG_TESTDATA) + "/mig-parted-default.yaml");
  ASSERT_TRUE(documented.ok()) << documented.status();
  EXPECT_THAT(Describe(*rendered), ::testing::ContainerEq(Describe(*documented)));
}

}  // namespace
}  // namespace gpuop::op::render
