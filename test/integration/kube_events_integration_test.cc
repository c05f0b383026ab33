// The event recorder against the real kube-apiserver: the Events it writes pass the server's
// validation of events.k8s.io/v1, and a burst of identical events becomes one Event whose series
// counts them, written a few times rather than once per occurrence.
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "kube/events/event_recorder.h"
#include "kube/types/json_fields.h"
#include "test/cluster/test_api.h"
#include "test/integration/kube_test_util.h"

namespace gpuop::test {
namespace {

using kube::Json;
using ::testing::StartsWith;
namespace resources = kube::resources;

// Counts the writes that reach the API server.
class CountingSink final : public kube::EventSink {
 public:
  explicit CountingSink(kube::Client& client) : inner_(client) {}

  absl::Status Create(absl::string_view ns, const Json& event) override {
    ++writes_;
    return inner_.Create(ns, event);
  }
  absl::Status Patch(absl::string_view ns, absl::string_view name, const Json& patch) override {
    ++writes_;
    return inner_.Patch(ns, name, patch);
  }
  int writes() const { return writes_; }

 private:
  kube::ClientEventSink inner_;
  std::atomic<int> writes_{0};
};

class EventRecorderIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = AdminClient();
    ASSERT_NE(client_, nullptr);
    ns_ = CreateTestNamespace(*client_, "events");
    sink_ = std::make_unique<CountingSink>(*client_);
  }

  std::unique_ptr<kube::EventRecorder> Recorder(absl::Duration flush_interval) {
    auto recorder =
        kube::EventRecorder::Create(*sink_, {.reporting_controller = "gpuop.io/operator",
                                             .reporting_instance = "gpuop-operator-test",
                                             .series_flush_interval = flush_interval,
                                             .metrics = &registry_});
    EXPECT_TRUE(recorder.ok()) << recorder.status();
    return recorder.ok() ? *std::move(recorder) : nullptr;
  }
  // The Events in `ns` about the object named `regarding`.
  absl::StatusOr<std::vector<Json>> EventsAbout(const std::string& ns,
                                                const std::string& regarding) {
    absl::StatusOr<kube::ObjectList> list = client_->ListAll(resources::kEventsV1, ns);
    if (!list.ok()) return list.status();
    std::vector<Json> events;
    for (Json& event : list->items) {
      if (kube::StringField(kube::Field(event, "regarding"), "name") == regarding) {
        events.push_back(std::move(event));
      }
    }
    return events;
  }
  // Waits until exactly one Event about `regarding` exists and `done` holds for it.
  Json AwaitOneEvent(const std::string& ns, const std::string& regarding,
                     const std::function<bool(const Json&)>& done) {
    Json found;
    const absl::Status status = WaitUntil(
        absl::StrCat("event about ", regarding), absl::Seconds(30), [&]() -> absl::StatusOr<bool> {
          absl::StatusOr<std::vector<Json>> events = EventsAbout(ns, regarding);
          if (!events.ok()) return events.status();
          if (events->size() > 1) return absl::InternalError("more than one Event");
          if (events->empty() || !done((*events)[0])) return false;
          found = (*events)[0];
          return true;
        });
    EXPECT_TRUE(status.ok()) << status;
    return found;
  }
  static int64_t SeriesCount(const Json& event) {
    return kube::IntField(kube::Field(event, "series"), "count");
  }

  std::unique_ptr<kube::Client> client_;
  std::string ns_;
  std::unique_ptr<CountingSink> sink_;
  metrics::Registry registry_;
};

TEST_F(EventRecorderIntegrationTest, RecordsEventsAboutNamespacedAndClusterScopedObjects) {
  absl::StatusOr<Json> config_map =
      client_->Create(resources::kConfigMaps, ns_, ConfigMap("gpu-config", "1"));
  ASSERT_TRUE(config_map.ok()) << config_map.status();
  const kube::ObjectReference regarding = kube::ReferenceTo(*config_map);
  const kube::ObjectReference node{
      .api_version = "v1", .kind = "Node", .name = UniqueName("gpu-node"), .uid = "node-uid"};
  auto recorder = Recorder(absl::Seconds(30));
  recorder->Record(regarding, kube::EventType::kWarning, "DriverFailed", "InstallDriver",
                   "driver install failed: exit status 1");
  recorder->Record({.regarding = node,
                    .related = regarding,
                    .type = kube::EventType::kNormal,
                    .reason = "GPUsDiscovered",
                    .action = "Discover",
                    .note = "8 GPUs"});

  const Json event = AwaitOneEvent(ns_, "gpu-config", [](const Json&) { return true; });
  EXPECT_THAT(kube::StringField(event["metadata"], "name"), StartsWith("gpu-config."));
  EXPECT_EQ(event["reportingController"], "gpuop.io/operator");
  EXPECT_EQ(event["reportingInstance"], "gpuop-operator-test");
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["reason"], "DriverFailed");
  EXPECT_EQ(event["action"], "InstallDriver");
  EXPECT_EQ(event["note"], "driver install failed: exit status 1");
  EXPECT_FALSE(kube::StringField(event, "eventTime").empty());
  EXPECT_EQ(event["regarding"]["kind"], "ConfigMap");
  EXPECT_EQ(event["regarding"]["namespace"], ns_);
  EXPECT_EQ(event["regarding"]["uid"], (*config_map)["metadata"]["uid"]);

  // A cluster-scoped object's events live in "default".
  const Json node_event = AwaitOneEvent("default", node.name, [](const Json&) { return true; });
  EXPECT_EQ(node_event["regarding"]["kind"], "Node");
  EXPECT_EQ(node_event["related"]["name"], "gpu-config");
  EXPECT_EQ(node_event["type"], "Normal");

  recorder->Stop();
  const kube::EventRecorderStats stats = recorder->stats();
  EXPECT_EQ(stats.created, 2);
  EXPECT_EQ(stats.dropped_write_failed, 0);
  EXPECT_EQ(sink_->writes(), 2);
}

TEST_F(EventRecorderIntegrationTest, RepeatedEventBecomesOneEventWithASeries) {
  const kube::ObjectReference regarding{
      .api_version = "v1", .kind = "ConfigMap", .name = "flapping", .namespace_ = ns_};
  auto recorder = Recorder(absl::Seconds(1));
  auto record = [&](int times) {
    for (int i = 0; i < times; ++i) {
      recorder->Record(regarding, kube::EventType::kWarning, "GPUUnhealthy", "HealthCheck",
                       "GPU 0 failed its health check");
    }
  };
  record(1);
  AwaitOneEvent(ns_, "flapping", [](const Json&) { return true; });
  // The Event exists: the next 99 only count up locally, and a periodic flush brings the
  // series up to date.
  record(99);
  Json event = AwaitOneEvent(ns_, "flapping", [](const Json& e) { return SeriesCount(e) == 100; });
  EXPECT_FALSE(kube::StringField(event["series"], "lastObservedTime").empty());
  // The create and one series update; two if a flush fell in the middle of the burst.
  EXPECT_LE(sink_->writes(), 3);

  record(50);
  // Stop() flushes what is pending.
  recorder->Stop();
  event = AwaitOneEvent(ns_, "flapping", [](const Json&) { return true; });
  EXPECT_EQ(SeriesCount(event), 150);
  EXPECT_LE(sink_->writes(), 4);
  const kube::EventRecorderStats stats = recorder->stats();
  EXPECT_EQ(stats.created, 1);
  EXPECT_EQ(stats.aggregated, 149);
  EXPECT_EQ(stats.created + stats.series_updates, sink_->writes());
  EXPECT_EQ(stats.dropped_write_failed + stats.dropped_queue_full + stats.dropped_spam, 0);
}

}  // namespace
}  // namespace gpuop::test
