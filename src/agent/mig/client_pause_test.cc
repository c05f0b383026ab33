#include "agent/mig/client_pause.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::agent::mig {
namespace {

using ::testing::HasSubstr;

const std::vector<PausedComponent> kComponents = {
    {"deploy.a", "app=a"}, {"deploy.b", "app=b"}, {"deploy.c", ""}};

TEST(ClientPauseTest, PauseRecordsExactValuesAndRestoreBringsThemBack) {
  NodeMeta meta{.labels = {{"deploy.a", "true"}, {"deploy.b", "false"}, {"other", "x"}}};
  const NodeMeta before = meta;
  const NodeWrite pause = PauseWrite(meta, kComponents, "true");
  EXPECT_EQ(pause.labels, (MetaChanges{{"deploy.a", kPausedValue},
                                       {"deploy.b", kPausedValue},
                                       {"deploy.c", kPausedValue}}));
  ASSERT_TRUE(pause.annotations.contains(kPauseRecordAnnotation));
  auto record = DecodePauseRecord(*pause.annotations.at(kPauseRecordAnnotation));
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(*record,
            (PauseRecord{{"deploy.a", "true"}, {"deploy.b", "false"}, {"deploy.c", std::nullopt}}));
  ApplyWrite(pause, meta);
  EXPECT_TRUE(IsPaused(meta, kComponents));
  // Pausing again (an agent restarted mid-change) keeps the record: it must not record
  // "paused" as the previous value.
  EXPECT_TRUE(PauseWrite(meta, kComponents, "true").empty());

  ApplyWrite(RestoreWrite(meta, kComponents, "true"), meta);
  EXPECT_EQ(meta.labels, before.labels);  // deploy.c removed again
  EXPECT_EQ(meta.annotations, before.annotations);
  EXPECT_FALSE(IsPaused(meta, kComponents));
  EXPECT_TRUE(RestoreWrite(meta, kComponents, "true").empty());
}

// Every component that opens the driver is paused (a GPU reset needs them all gone), and
// NVIDIA's operands only on nodes that carry their deploy labels, as NVIDIA's mig-manager pauses
// them; a second pause (a retry) writes nothing.
TEST(ClientPauseTest, DefaultsPauseEveryDriverClientAndNvidiasWhereLabelled) {
  const std::vector<PausedComponent> defaults = DefaultPausedComponents();
  NodeMeta meta{.labels = {{"gpuop.io/deploy.device-plugin", "true"},
                           {"nvidia.com/gpu.deploy.dcgm-exporter", "true"},
                           {"nvidia.com/gpu.deploy.dcgm", "false"}}};
  const NodeMeta before = meta;
  const NodeWrite pause = PauseWrite(meta, defaults, "true");
  std::vector<std::string> paused;
  for (const auto& [label, value] : pause.labels) {
    EXPECT_EQ(value, kPausedValue) << label;
    paused.push_back(label);
  }
  EXPECT_THAT(paused,
              ::testing::ElementsAre("gpuop.io/deploy.cdi", "gpuop.io/deploy.device-plugin",
                                     "gpuop.io/deploy.exporter", "gpuop.io/deploy.health",
                                     "gpuop.io/deploy.labels", "gpuop.io/deploy.mps-daemon",
                                     "gpuop.io/deploy.power-manager", "gpuop.io/deploy.validator",
                                     "nvidia.com/gpu.deploy.dcgm-exporter"));
  ApplyWrite(pause, meta);
  EXPECT_TRUE(PauseWrite(meta, defaults, "true").empty());
  ApplyWrite(RestoreWrite(meta, defaults, "true"), meta);
  EXPECT_EQ(meta.labels, before.labels);
  EXPECT_TRUE(meta.annotations.empty());
}

TEST(ClientPauseTest, LabelChangedDuringThePauseIsLeftAlone) {
  NodeMeta meta{.labels = {{"deploy.a", "true"}, {"deploy.b", "true"}, {"deploy.c", "true"}}};
  ApplyWrite(PauseWrite(meta, kComponents, "true"), meta);
  meta.labels["deploy.b"] = "false";  // an administrator disabled it meanwhile
  const NodeWrite restore = RestoreWrite(meta, kComponents, "true");
  EXPECT_EQ(restore.labels, (MetaChanges{{"deploy.a", "true"}, {"deploy.c", "true"}}));
  EXPECT_EQ(restore.annotations, (MetaChanges{{kPauseRecordAnnotation, std::nullopt}}));
}

TEST(ClientPauseTest, PausedLabelWithoutRecordGetsTheFallback) {
  // The record was lost (or is corrupt): a paused label cannot stay paused forever.
  NodeMeta meta{.labels = {{"deploy.a", kPausedValue}, {"deploy.b", "false"}},
                .annotations = {{kPauseRecordAnnotation, "{not json"}}};
  EXPECT_TRUE(IsPaused(meta, kComponents));
  const NodeWrite restore = RestoreWrite(meta, kComponents, "true");
  EXPECT_EQ(restore.labels, (MetaChanges{{"deploy.a", "true"}}));
  EXPECT_EQ(restore.annotations, (MetaChanges{{kPauseRecordAnnotation, std::nullopt}}));

  meta.annotations.clear();
  const NodeWrite pause = PauseWrite(meta, kComponents, "on");
  auto record = DecodePauseRecord(*pause.annotations.at(kPauseRecordAnnotation));
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->at("deploy.a"), "on");
  EXPECT_EQ(record->at("deploy.b"), "false");
}

TEST(ClientPauseTest, RecordCodec) {
  const PauseRecord record{{"a", "x"}, {"b", std::nullopt}};
  EXPECT_EQ(EncodePauseRecord(record), R"({"a":"x","b":null})");
  auto decoded = DecodePauseRecord(EncodePauseRecord(record));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, record);
  EXPECT_THAT(std::string(DecodePauseRecord("[1]").status().message()),
              HasSubstr("not a JSON object"));
  EXPECT_THAT(std::string(DecodePauseRecord(R"({"a": 1})").status().message()),
              HasSubstr("a: must be a string or null"));
}

}  // namespace
}  // namespace gpuop::agent::mig
