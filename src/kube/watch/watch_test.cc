#include "kube/watch/watch.h"

#include <gtest/gtest.h>

namespace gpuop::kube {
namespace {

TEST(LineSplitterTest, JoinsLinesSplitAcrossChunks) {
  LineSplitter splitter;
  std::vector<std::string> lines;
  auto collect = [&](absl::string_view line) {
    lines.emplace_back(line);
    return true;
  };
  EXPECT_TRUE(splitter.Feed("{\"a\":", collect));
  EXPECT_TRUE(lines.empty());
  EXPECT_TRUE(splitter.Feed("1}\n{\"b\":2}\n{\"c\"", collect));
  EXPECT_TRUE(splitter.Feed(":3}\n\n", collect));
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "{\"c\":3}"}));
  EXPECT_EQ(splitter.pending(), 0u);
}

TEST(LineSplitterTest, StopsWhenTheHandlerSaysSo) {
  LineSplitter splitter;
  int seen = 0;
  EXPECT_FALSE(splitter.Feed("1\n2\n3\n", [&](absl::string_view) { return ++seen < 2; }));
  EXPECT_EQ(seen, 2);
}

TEST(ParseWatchEventTest, DecodesEachType) {
  auto added =
      ParseWatchEvent(R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"p"}}})", "w");
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(added->type, WatchEventType::kAdded);
  EXPECT_EQ(added->object["metadata"]["name"], "p");
  EXPECT_EQ(ParseWatchEvent(R"({"type":"MODIFIED","object":{}})", "w")->type,
            WatchEventType::kModified);
  EXPECT_EQ(ParseWatchEvent(R"({"type":"DELETED","object":{}})", "w")->type,
            WatchEventType::kDeleted);
  auto bookmark = ParseWatchEvent(
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"12345"}}})", "w");
  ASSERT_TRUE(bookmark.ok());
  EXPECT_EQ(bookmark->type, WatchEventType::kBookmark);
}

TEST(ParseWatchEventTest, ExpiredErrorEventMeansRelist) {
  auto gone = ParseWatchEvent(
      R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",
          "message":"too old resource version: 1 (2042)","reason":"Expired","code":410}})json",
      "watch pods");
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(IsGone(gone.status())) << gone.status();
  EXPECT_EQ(ApiReason(gone.status()), "Expired");
  EXPECT_NE(gone.status().message().find("too old resource version"), std::string::npos);
}

TEST(ParseWatchEventTest, RejectsGarbage) {
  EXPECT_EQ(ParseWatchEvent("not json", "w").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ParseWatchEvent(R"({"type":"ADDED"})", "w").status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(ParseWatchEvent(R"({"type":"WHAT","object":{}})", "w").status().code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace gpuop::kube
