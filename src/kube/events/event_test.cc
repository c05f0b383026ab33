#include "kube/events/event.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kube/events/fake_event_sink.h"

namespace gpuop::kube {
namespace {

using ::testing::EndsWith;

struct TruncateCase {
  std::string name;
  std::string text;
  size_t max_bytes;
  std::string want;
};

class TruncateTest : public ::testing::TestWithParam<TruncateCase> {};

void PrintTo(const TruncateCase& c, std::ostream* os) { *os << c.name; }

TEST_P(TruncateTest, CutsAtCharacterBoundaries) {
  EXPECT_EQ(Truncate(GetParam().text, GetParam().max_bytes), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TruncateTest,
    ::testing::Values(TruncateCase{"Short", "abc", 10, "abc"},
                      TruncateCase{"Exact", "abcdefghij", 10, "abcdefghij"},
                      TruncateCase{"Ascii", "abcdefghijk", 10, "abcdefg..."},
                      // "é" is two bytes; the cut at 7 would split it, so it goes whole.
                      TruncateCase{"Utf8", "abcdef\xC3\xA9xyz", 10, "abcdef..."},
                      TruncateCase{"TinyLimit", "abcdef", 2, "ab"}),
    [](const ::testing::TestParamInfo<TruncateCase>& param) { return param.param.name; });

TEST(TruncateTest, NotesFitTheApiLimit) {
  const std::string note = Truncate(std::string(3000, 'x'), kMaxNoteBytes);
  EXPECT_EQ(note.size(), kMaxNoteBytes);
  EXPECT_THAT(note, EndsWith("..."));
}

TEST(EventNameTest, RegardingNameThenUniqueHex) {
  EXPECT_EQ(EventName("gpu-node-1", 0xabc), "gpu-node-1.0000000000000abc");
  // Made a valid DNS subdomain.
  EXPECT_EQ(EventName("GPU_Node-", 1), "gpu-node.0000000000000001");
  EXPECT_EQ(EventName("--", 1), "event.0000000000000001");
  const std::string long_name = EventName(std::string(300, 'a'), 1);
  EXPECT_EQ(long_name.size(), 253u);
  EXPECT_THAT(long_name, EndsWith(".0000000000000001"));
}

TEST(EventObjectTest, HasEveryRequiredField) {
  const ObjectReference node = ReferenceTo({{"apiVersion", "v1"},
                                            {"kind", "Node"},
                                            {"metadata",
                                             {{"name", "gpu-node-1"},
                                              {"uid", "u-1"},
                                              {"resourceVersion", "42"},
                                              {"labels", {{"a", "b"}}}}}});
  EXPECT_EQ(EventNamespace(node), "default");
  EXPECT_EQ(EventTypeName(EventType::kNormal), "Normal");
  EventDetails details{
      .regarding = node,
      .related =
          ObjectReference{
              .api_version = "v1", .kind = "Pod", .name = "driver", .namespace_ = "gpuop"},
      .type = EventType::kWarning,
      .reason = "XidError",
      .action = "MonitorGPU",
      .note = "Xid 79"};
  const absl::Time at = absl::FromUnixMicros(1'700'000'000'123'456);
  const Json event =
      EventObject(details, "gpu-node-1.1", "default", at, "gpuop.io/operator", "pod-1");
  EXPECT_EQ(event, Json::parse(R"({
    "apiVersion": "events.k8s.io/v1", "kind": "Event",
    "metadata": {"name": "gpu-node-1.1", "namespace": "default"},
    "eventTime": "2023-11-14T22:13:20.123456Z",
    "reportingController": "gpuop.io/operator", "reportingInstance": "pod-1",
    "action": "MonitorGPU", "reason": "XidError", "type": "Warning", "note": "Xid 79",
    "regarding": {"apiVersion": "v1", "kind": "Node", "name": "gpu-node-1", "uid": "u-1",
                  "resourceVersion": "42"},
    "related": {"apiVersion": "v1", "kind": "Pod", "name": "driver", "namespace": "gpuop"}
  })"));
  EXPECT_EQ(EventNamespace(*details.related), "gpuop");
  EXPECT_EQ(EventSeries(3, at), Json::parse(R"({"count": 3,
      "lastObservedTime": "2023-11-14T22:13:20.123456Z"})"));
}

TEST(FakeEventSinkTest, CreatesPatchesAndFails) {
  FakeEventSink sink;
  const Json event = {{"metadata", {{"name", "e.1"}}}, {"reason", "R"}};
  ASSERT_TRUE(sink.Create("ns", event).ok());
  EXPECT_EQ(sink.Create("ns", event).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(sink.Patch("ns", "e.1", {{"series", {{"count", 2}}}}).ok());
  EXPECT_EQ(sink.Get("ns", "e.1")->at("series").at("count"), 2);
  EXPECT_EQ(sink.Get("ns", "e.1")->at("reason"), "R");
  EXPECT_EQ(sink.Patch("ns", "e.2", Json::object()).code(), absl::StatusCode::kNotFound);
  sink.Fail(absl::UnavailableError("down"), 1);
  EXPECT_EQ(sink.Patch("ns", "e.1", Json::object()).code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(sink.Patch("ns", "e.1", Json::object()).ok());
  sink.Expire("ns", "e.1");
  EXPECT_TRUE(sink.Events().empty());
  EXPECT_EQ(sink.creates(), 2);
  EXPECT_EQ(sink.patches(), 4);
  EXPECT_TRUE(sink.AwaitCalls(6));
}

}  // namespace
}  // namespace gpuop::kube
