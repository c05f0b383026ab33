#include "agent/cdi/inject/runc_log.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi::inject {
namespace {

TEST(RuncLogTest, FormatsALogrusJsonLine) {
  EXPECT_EQ(FormatRuncLogLine("gpuop-container-runtime: \"x\" failed", 1714564800),
            R"({"level":"error","msg":"gpuop-container-runtime: \"x\" failed",)"
            R"("time":"2024-05-01T12:00:00Z"})"
            "\n");
}

TEST(RuncLogTest, AppendsToTheLog) {
  fakes::TempDir temp;
  const std::string path = (temp.path() / "log.json").string();
  ASSERT_TRUE(AppendToLog(path, "{\"level\":\"info\"}\n").ok());
  ASSERT_TRUE(AppendToLog(path, FormatRuncLogLine("m", 0)).ok());
  std::ifstream in(path);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_EQ(first, "{\"level\":\"info\"}");
  const nlohmann::json line = nlohmann::json::parse(second);
  EXPECT_EQ(line["msg"], "m");
  EXPECT_EQ(line["time"], "1970-01-01T00:00:00Z");
  EXPECT_FALSE(AppendToLog((temp.path() / "missing/log.json").string(), "x\n").ok());
}

}  // namespace
}  // namespace gpuop::agent::cdi::inject
