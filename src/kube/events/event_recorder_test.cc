#include "kube/events/event_recorder.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "common/fake_clock.h"
#include "kube/events/fake_event_sink.h"
#include "kube/types/object_meta.h"

namespace gpuop::kube {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::StartsWith;

ObjectReference Node(const std::string& name) {
  return {.api_version = "v1", .kind = "Node", .name = name, .uid = "uid-" + name};
}

class EventRecorderTest : public ::testing::Test {
 protected:
  EventRecorderOptions Options() {
    return {.reporting_instance = "gpuop-operator-0", .clock = &clock_, .metrics = &registry_};
  }
  std::unique_ptr<EventRecorder> Recorder(EventRecorderOptions options) {
    auto recorder = EventRecorder::Create(sink_, std::move(options));
    EXPECT_TRUE(recorder.ok()) << recorder.status();
    return recorder.ok() ? *std::move(recorder) : nullptr;
  }
  void RecordXid(EventRecorder& recorder, int times = 1) {
    for (int i = 0; i < times; ++i) {
      recorder.Record(Node("gpu-node-1"), EventType::kWarning, "XidError", "MonitorGPU", "Xid 79");
    }
  }
  // Waits until the sink completed `calls` calls and the writer is parked on the clock again.
  void AwaitIdle(int calls) {
    ASSERT_TRUE(sink_.AwaitCalls(calls));
    clock_.AwaitWaiters(1);
  }
  Json OnlyEvent() {
    std::vector<Json> events = sink_.Events();
    EXPECT_THAT(events, SizeIs(1));
    return events.empty() ? Json() : events[0];
  }

  common::FakeClock clock_;
  FakeEventSink sink_;
  metrics::Registry registry_;
};

TEST_F(EventRecorderTest, CreatesAnEventWithTheRequiredFields) {
  auto recorder = Recorder(Options());
  const absl::Time t0 = clock_.Now();
  recorder->Eventf(Node("gpu-node-1"), EventType::kWarning, "XidError", "MonitorGPU",
                   "GPU %d reported Xid %d", 3, 79);
  AwaitIdle(1);
  const Json event = OnlyEvent();
  EXPECT_THAT(event["metadata"]["name"].get<std::string>(), StartsWith("gpu-node-1."));
  EXPECT_EQ(event["metadata"]["namespace"], "default");
  EXPECT_EQ(event["eventTime"], FormatMicroTimestamp(t0));
  EXPECT_EQ(event["reportingController"], "gpuop.io/operator");
  EXPECT_EQ(event["reportingInstance"], "gpuop-operator-0");
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["reason"], "XidError");
  EXPECT_EQ(event["action"], "MonitorGPU");
  EXPECT_EQ(event["note"], "GPU 3 reported Xid 79");
  EXPECT_EQ(event["regarding"], Node("gpu-node-1").ToJson());
  EXPECT_FALSE(event.contains("series"));
  EXPECT_EQ(recorder->stats().created, 1);
  EXPECT_THAT(registry_.Render(), HasSubstr("gpuop_events_written_total{operation=\"create\"} 1"));
}

TEST_F(EventRecorderTest, RepeatsJoinTheSeriesWrittenOncePerFlushInterval) {
  auto recorder = Recorder(Options());
  const absl::Time t0 = clock_.Now();
  RecordXid(*recorder);
  AwaitIdle(1);
  RecordXid(*recorder, 99);
  clock_.Advance(absl::Seconds(29));
  EXPECT_EQ(sink_.patches(), 0);
  clock_.Advance(absl::Seconds(1));  // 30s after the create
  AwaitIdle(2);
  EXPECT_EQ(OnlyEvent()["series"], EventSeries(100, t0));

  clock_.Advance(absl::Seconds(1));
  RecordXid(*recorder, 50);
  clock_.Advance(absl::Seconds(28));
  EXPECT_EQ(sink_.patches(), 1);
  clock_.Advance(absl::Seconds(1));  // 30s after the last write
  AwaitIdle(3);
  EXPECT_EQ(OnlyEvent()["series"], EventSeries(150, t0 + absl::Seconds(31)));
  EXPECT_EQ(sink_.creates(), 1);
  EXPECT_EQ(sink_.patches(), 2);
  const EventRecorderStats stats = recorder->stats();
  EXPECT_EQ(stats.created, 1);
  EXPECT_EQ(stats.series_updates, 2);
  EXPECT_EQ(stats.aggregated, 149);
}

TEST_F(EventRecorderTest, SeriesEndsWhenTheEventStopsRecurringForTheWindow) {
  auto recorder = Recorder(Options());
  RecordXid(*recorder);
  AwaitIdle(1);
  // Recurring within 6 minutes of the last occurrence keeps the series going.
  clock_.Advance(absl::Minutes(5));
  RecordXid(*recorder);
  AwaitIdle(2);
  clock_.Advance(absl::Minutes(5));
  RecordXid(*recorder);
  AwaitIdle(3);
  EXPECT_EQ(OnlyEvent()["series"]["count"], 3);
  // Quiet for the window: the next occurrence is a new Event.
  clock_.Advance(absl::Minutes(6));
  RecordXid(*recorder);
  AwaitIdle(4);
  EXPECT_THAT(sink_.Events(), SizeIs(2));
  EXPECT_EQ(sink_.creates(), 2);
  EXPECT_EQ(recorder->stats().aggregated, 2);
}

TEST_F(EventRecorderTest, EventsQueuedBehindASlowWriteAreCreatedWithTheirSeries) {
  auto recorder = Recorder(Options());
  sink_.Block();
  recorder->Record(Node("gpu-node-2"), EventType::kNormal, "Ready", "Probe", "");
  ASSERT_TRUE(sink_.AwaitBlocked(1));
  RecordXid(*recorder, 3);
  sink_.Unblock();
  AwaitIdle(2);
  EXPECT_THAT(sink_.Events(), SizeIs(2));
  EXPECT_EQ(sink_.patches(), 0);
  for (const Json& event : sink_.Events()) {
    if (event.at("reason") == "XidError") {
      EXPECT_EQ(event.at("series").at("count"), 3);
    }
  }
}

TEST_F(EventRecorderTest, SpamFilterLimitsNewEventsPerObject) {
  auto recorder = Recorder(Options());
  for (int i = 0; i < 30; ++i) {
    recorder->Record(Node("a"), EventType::kNormal, absl::StrCat("Reason", i), "Act", "");
  }
  recorder->Record(Node("b"), EventType::kNormal, "Reason0", "Act", "");
  AwaitIdle(26);
  EXPECT_EQ(recorder->stats().dropped_spam, 5);
  // Repeats of an existing Event draw no token.
  recorder->Record(Node("a"), EventType::kNormal, "Reason0", "Act", "");
  EXPECT_EQ(recorder->stats().aggregated, 1);
  // One token every 5 minutes.
  clock_.Advance(absl::Minutes(5));
  recorder->Record(Node("a"), EventType::kNormal, "Reason30", "Act", "");
  recorder->Record(Node("a"), EventType::kNormal, "Reason31", "Act", "");
  EXPECT_EQ(recorder->stats().dropped_spam, 6);
  ASSERT_TRUE(sink_.AwaitCalls(28));  // the new Event and Reason0's series update
  EXPECT_EQ(sink_.creates(), 27);
  EXPECT_THAT(registry_.Render(),
              HasSubstr("gpuop_events_dropped_total{reason=\"spam_filter\"} 6"));
}

TEST_F(EventRecorderTest, TruncatesNoteReasonAndAction) {
  auto recorder = Recorder(Options());
  recorder->Record(Node("n"), EventType::kNormal, std::string(200, 'R'), std::string(200, 'A'),
                   std::string(3000, 'x'));
  AwaitIdle(1);
  const Json event = OnlyEvent();
  EXPECT_EQ(event["note"].get<std::string>().size(), 1024u);
  EXPECT_EQ(event["reason"].get<std::string>().size(), 128u);
  EXPECT_EQ(event["action"].get<std::string>().size(), 128u);
}

TEST_F(EventRecorderTest, DropsWhenTheQueueIsFullWithoutBlockingCallers) {
  EventRecorderOptions options = Options();
  options.queue_capacity = 2;
  auto recorder = Recorder(options);
  sink_.Block();
  recorder->Record(Node("n0"), EventType::kNormal, "R", "A", "");
  ASSERT_TRUE(sink_.AwaitBlocked(1));  // the writer holds n0; the queue is empty
  for (int i = 1; i <= 4; ++i) {
    recorder->Record(Node(absl::StrCat("n", i)), EventType::kNormal, "R", "A", "");
  }
  EXPECT_EQ(recorder->stats().dropped_queue_full, 2);
  sink_.Unblock();
  AwaitIdle(3);
  EXPECT_THAT(sink_.Events(), SizeIs(3));
  EXPECT_THAT(registry_.Render(), HasSubstr("gpuop_events_dropped_total{reason=\"queue_full\"} 2"));
}

TEST_F(EventRecorderTest, RetriesTransientFailuresWithBackoff) {
  auto recorder = Recorder(Options());
  sink_.Fail(absl::UnavailableError("connection refused"), 2);
  RecordXid(*recorder);
  for (int call = 1; call <= 2; ++call) {
    ASSERT_TRUE(sink_.AwaitCalls(call));
    clock_.AwaitWaiters(1);  // backing off
    clock_.Advance(absl::Seconds(10));
  }
  AwaitIdle(3);
  EXPECT_THAT(sink_.Events(), SizeIs(1));
  EXPECT_EQ(recorder->stats().created, 1);
  EXPECT_EQ(recorder->stats().dropped_write_failed, 0);
}

TEST_F(EventRecorderTest, GivesUpAfterTheLastAttemptAndCountsTheDrop) {
  auto recorder = Recorder(Options());
  sink_.Fail(absl::UnavailableError("connection refused"));
  RecordXid(*recorder);
  for (int call = 1; call <= 2; ++call) {
    ASSERT_TRUE(sink_.AwaitCalls(call));
    clock_.AwaitWaiters(1);
    clock_.Advance(absl::Seconds(10));
  }
  AwaitIdle(3);
  EXPECT_EQ(recorder->stats().dropped_write_failed, 1);
  EXPECT_THAT(registry_.Render(),
              HasSubstr("gpuop_events_dropped_total{reason=\"write_failed\"} 1"));
  // The next occurrence starts over with a new Event.
  sink_.Fail(absl::OkStatus());
  RecordXid(*recorder);
  AwaitIdle(4);
  EXPECT_THAT(sink_.Events(), SizeIs(1));
}

TEST_F(EventRecorderTest, DoesNotRetryPermanentErrors) {
  auto recorder = Recorder(Options());
  sink_.Fail(absl::InvalidArgumentError("422 Unprocessable Entity"), 1);
  RecordXid(*recorder);
  AwaitIdle(1);
  EXPECT_EQ(sink_.creates(), 1);
  EXPECT_EQ(recorder->stats().dropped_write_failed, 1);
}

TEST_F(EventRecorderTest, ExpiredEventStartsANewOne) {
  auto recorder = Recorder(Options());
  RecordXid(*recorder);
  AwaitIdle(1);
  const Json first = OnlyEvent();
  sink_.Expire("default", first["metadata"]["name"].get<std::string>());
  RecordXid(*recorder);
  clock_.Advance(absl::Seconds(30));
  AwaitIdle(2);  // the series update finds no Event
  RecordXid(*recorder);
  AwaitIdle(3);
  const Json second = OnlyEvent();
  EXPECT_NE(second["metadata"]["name"], first["metadata"]["name"]);
  EXPECT_FALSE(second.contains("series"));
}

TEST_F(EventRecorderTest, StopFlushesPendingSeriesAtOnce) {
  auto recorder = Recorder(Options());
  RecordXid(*recorder);
  AwaitIdle(1);
  RecordXid(*recorder, 4);
  recorder->Stop();  // without waiting for the flush interval
  EXPECT_EQ(OnlyEvent()["series"]["count"], 5);
  RecordXid(*recorder);
  EXPECT_EQ(recorder->stats().dropped_stopped, 1);
  EXPECT_EQ(sink_.creates() + sink_.patches(), 2);
}

TEST_F(EventRecorderTest, StopIsPromptWhileTheApiServerIsDown) {
  auto recorder = Recorder(Options());
  sink_.Fail(absl::UnavailableError("connection refused"));
  recorder->Record(Node("a"), EventType::kNormal, "R", "A", "");
  ASSERT_TRUE(sink_.AwaitCalls(1));
  clock_.AwaitWaiters(1);  // backing off
  recorder->Record(Node("b"), EventType::kNormal, "R", "A", "");
  recorder->Record(Node("c"), EventType::kNormal, "R", "A", "");
  recorder->Stop();  // the clock never moves: nothing waits out a backoff
  const EventRecorderStats stats = recorder->stats();
  // a: given up when its backoff was interrupted; b: one try, which shows the API server is
  // down; c: not tried.
  EXPECT_EQ(stats.dropped_write_failed, 2);
  EXPECT_EQ(stats.dropped_stopped, 1);
  EXPECT_EQ(sink_.creates(), 2);
}

TEST_F(EventRecorderTest, DropsInvalidEvents) {
  auto recorder = Recorder(Options());
  recorder->Record(Node("n"), EventType::kNormal, "", "A", "");
  recorder->Record(Node(""), EventType::kNormal, "R", "A", "");
  EXPECT_EQ(recorder->stats().dropped_invalid, 2);
  recorder->Stop();
  EXPECT_EQ(sink_.creates(), 0);
}

TEST_F(EventRecorderTest, ValidatesOptions) {
  EventRecorderOptions options = Options();
  options.reporting_instance.clear();
  auto recorder = EventRecorder::Create(sink_, options);
  EXPECT_EQ(recorder.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(recorder.status().message(), HasSubstr("reporting_instance"));
  options = Options();
  options.reporting_controller = std::string(129, 'c');
  recorder = EventRecorder::Create(sink_, options);
  EXPECT_THAT(recorder.status().message(), HasSubstr("reporting_controller"));
  options = Options();
  options.series_flush_interval = absl::ZeroDuration();
  recorder = EventRecorder::Create(sink_, options);
  EXPECT_THAT(recorder.status().message(), HasSubstr("series_flush_interval"));
}

}  // namespace
}  // namespace gpuop::kube
