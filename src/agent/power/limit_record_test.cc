#include "agent/power/limit_record.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace gpuop::agent::power {
namespace {

using ::testing::HasSubstr;

class LimitRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuop-limit-record-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(LimitRecordTest, RoundTripsThroughTheFileAndAnEmptyRecordRemovesIt) {
  FileLimitRecord record(dir_ / "var/lib/gpuop/power-limits.json");
  absl::StatusOr<LimitMap> none = record.Load();
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty()) << "no file is no record";
  const LimitMap limits = {{"GPU-a", {.original_watts = 700, .lowered_watts = 350}},
                           {"GPU-b", {.original_watts = 512.5, .lowered_watts = 200}}};
  ASSERT_TRUE(record.Save(limits).ok());
  absl::StatusOr<LimitMap> back = record.Load();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, limits);
  ASSERT_TRUE(record.Save({}).ok());
  EXPECT_FALSE(std::filesystem::exists(dir_ / "var/lib/gpuop/power-limits.json"));
}

TEST_F(LimitRecordTest, AMalformedRecordIsAnErrorNamingTheField) {
  struct Case {
    const char* json;
    const char* field;
  } cases[] = {
      {"[]", "(document)"},
      {R"({"version": 2, "gpus": {}})", "version"},
      {R"({"version": 1})", "gpus"},
      {R"({"version": 1, "gpus": {"GPU-a": {"loweredWatts": 300}}})", "gpus.GPU-a.originalWatts"},
      {R"({"version": 1, "gpus": {"GPU-a": {"originalWatts": 700, "loweredWatts": "low"}}})",
       "gpus.GPU-a.loweredWatts"},
      {R"({"version": 1, "gpus": {"GPU-a": {"originalWatts": -1, "loweredWatts": 300}}})",
       "gpus.GPU-a.originalWatts"},
      {"{\"version\": 1, \"gpus\": ", "power-limits.json"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<LimitMap> parsed = ParseLimitRecord(c.json, "power-limits.json");
    ASSERT_FALSE(parsed.ok()) << c.json;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << c.json;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(c.field)) << c.json;
  }
}

// A damaged file is kept as it is: the limits it holds are still owed to the GPUs.
TEST_F(LimitRecordTest, ADamagedFileIsNeitherTakenAsEmptyNorReplacedByLoad) {
  std::filesystem::create_directories(dir_);
  const std::filesystem::path path = dir_ / "power-limits.json";
  std::ofstream(path) << "{\"version\": 1, \"gpus\": {\"GPU-a\": ";
  FileLimitRecord record(path);
  absl::StatusOr<LimitMap> loaded = record.Load();
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr(path.string()));
  EXPECT_TRUE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace gpuop::agent::power
