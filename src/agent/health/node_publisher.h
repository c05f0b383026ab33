#ifndef GPUOP_AGENT_HEALTH_NODE_PUBLISHER_H_
#define GPUOP_AGENT_HEALTH_NODE_PUBLISHER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/health/report.h"
#include "common/clock.h"
#include "kube/client/client.h"
#include "kube/events/event.h"
#include "kube/events/event_sink.h"
#include "kube/transport/backoff.h"
#include "kube/types/object_meta.h"
#include "metrics/registry.h"

namespace gpuop::agent {

struct NodeHealthPublisherOptions {
  std::string node_name;
  // reportingInstance of the Events (the pod's name); the node name when empty.
  std::string reporting_instance;
  // The condition is written again after this long even without a change, refreshing
  // lastHeartbeatTime and repairing an edit by someone else.
  absl::Duration heartbeat = absl::Minutes(5);
  // Delay between attempts while the API server does not answer.
  kube::BackoffPolicy retry = {.base = absl::Seconds(1), .cap = absl::Minutes(1)};
  // Transitions kept while the API server is unreachable. Beyond it the oldest are dropped and
  // counted; the condition always carries the current state.
  size_t max_pending_events = 4096;
  const common::Clock* clock = &common::Clock::Real();
  // Registers gpuop_health_publish_* metrics; none when null.
  metrics::Registry* metrics = nullptr;
};

struct NodeHealthPublisherStats {
  int64_t condition_writes = 0;
  int64_t events_written = 0;
  int64_t write_failures = 0;
  int64_t events_dropped = 0;  // over max_pending_events
  size_t events_pending = 0;
  bool condition_pending = false;
};

// Publishes a node's GPU health to the API server: the GPUHealthy and GPURecoveryAction Node
// conditions (report.h), and an Event on the Node for each device that became unhealthy or
// recovered.
//
// Update() never waits for the API server. A background thread writes; while the API server is
// unreachable, the latest condition and every transition wait (with backoff between attempts)
// and are written once it answers, each Event carrying the time the transition happened and the
// condition the time its status changed. Events have names fixed when they are queued, so a
// retried write that had in fact succeeded is not duplicated.
//
// Thread-safe. `client` and `events` must outlive the publisher.
class NodeHealthPublisher {
 public:
  NodeHealthPublisher(kube::Client& client, kube::EventSink& events,
                      NodeHealthPublisherOptions options);
  ~NodeHealthPublisher();

  void Start();
  // Tries once to write what is pending, then stops the writer. Idempotent.
  void Stop();

  // The current report and what changed since the previous one.
  void Update(const HealthReport& report, std::vector<HealthTransition> transitions);

  // Waits (real time) until nothing is pending. For tests and for an orderly shutdown.
  bool WaitUntilPublished(absl::Duration timeout) const;

  NodeHealthPublisherStats stats() const;

 private:
  struct PendingEvent {
    std::string name;
    HealthTransition transition;
  };
  struct Metrics;

  void Loop(std::stop_token stop);
  // Writes what is pending; returns the first failure.
  absl::Status Flush();
  // Writes the conditions (each with its transition time) in one patch.
  absl::Status WriteConditions(
      const std::vector<std::pair<kube::Condition, absl::Time>>& conditions);
  absl::Status WriteEvent(const PendingEvent& event);
  // Reads the Node once: its UID for Events, and the condition's lastTransitionTime so a restart
  // does not move it.
  absl::Status LearnNode();

  kube::Client& client_;
  kube::EventSink& events_;
  const NodeHealthPublisherOptions options_;
  const common::Clock& clock_;
  std::unique_ptr<Metrics> metrics_;

  mutable absl::Mutex mu_;
  // The latest to publish, GPUHealthy then GPURecoveryAction, each with the time its status
  // last changed.
  std::vector<std::pair<kube::Condition, absl::Time>> conditions_ ABSL_GUARDED_BY(mu_);
  bool condition_dirty_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<PendingEvent> pending_ ABSL_GUARDED_BY(mu_);
  absl::Time next_heartbeat_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  NodeHealthPublisherStats stats_ ABSL_GUARDED_BY(mu_);
  absl::BitGen random_ ABSL_GUARDED_BY(mu_);
  // Learned from the Node; used by the writer thread only.
  std::optional<kube::ObjectReference> node_ref_;
  std::map<std::string, kube::Condition> existing_;  // as the Node shows them, by type

  absl::Mutex stop_mu_;
  std::jthread writer_;
};

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_HEALTH_NODE_PUBLISHER_H_
