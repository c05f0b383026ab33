#include "common/log.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gpuop::common {
namespace {

TEST(LogTest, TextQuotesValuesThatWouldNotReadBack) {
  EXPECT_EQ(FormatLogRecord(LogFormat::kText, "T", LogLevel::kWarning, "operator", "apply failed",
                            {{"object", "DaemonSet gpuop-system/gpuop-exporter"}, {"n", "3"}}),
            "T warning operator: apply failed object=\"DaemonSet gpuop-system/gpuop-exporter\" "
            "n=3");
}

TEST(LogTest, JsonIsOneParseableObjectWithTheFieldsInOrder) {
  const std::string line =
      FormatLogRecord(LogFormat::kJson, "2026-11-29T10:00:00.000Z", LogLevel::kInfo, "operator",
                      "said \"hi\"\n", {{"node", "gpu-1"}});
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const nlohmann::json record = nlohmann::json::parse(line);
  EXPECT_EQ(record["level"], "info");
  EXPECT_EQ(record["msg"], "said \"hi\"\n");
  EXPECT_EQ(record["node"], "gpu-1");
  EXPECT_EQ(line.rfind(R"({"ts":"2026-11-29T10:00:00.000Z","level":"info")", 0), 0u);
}

TEST(LogTest, ParsesOnlyKnownFormats) {
  LogFormat format = LogFormat::kText;
  EXPECT_TRUE(ParseLogFormat("json", format));
  EXPECT_EQ(format, LogFormat::kJson);
  EXPECT_FALSE(ParseLogFormat("yaml", format));
  EXPECT_EQ(format, LogFormat::kJson);
}

}  // namespace
}  // namespace gpuop::common
