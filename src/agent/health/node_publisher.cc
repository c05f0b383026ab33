#include "agent/health/node_publisher.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "agent/node/node_condition.h"
#include "common/status_macros.h"
#include "kube/client/resource.h"
#include "kube/events/event.h"

namespace gpuop::agent {

namespace {

constexpr char kReportingController[] = "gpuop.io/health-monitor";

std::string EventNote(const HealthTransition& t) {
  if (t.recovered) {
    return absl::StrCat(
        t.device.Describe(), " is healthy again",
        t.previous.has_value() ? absl::StrCat(" (was: ", t.previous->reason, ")") : "");
  }
  return absl::StrCat(t.device.Describe(), ": ", t.device.problem->reason,
                      "; its devices are no longer offered to new pods");
}

}  // namespace

struct NodeHealthPublisher::Metrics {
  explicit Metrics(metrics::Registry& r)
      : writes(r.AddCounter("gpuop_health_publish_writes_total",
                            "Writes of GPU health to the API server, by kind and result.",
                            {"kind", "result"})),
        dropped(r.AddCounter("gpuop_health_publish_events_dropped_total",
                             "Health transitions dropped because too many waited to be written.")) {
  }
  metrics::Family<metrics::Counter>& writes;
  metrics::Family<metrics::Counter>& dropped;
};

NodeHealthPublisher::NodeHealthPublisher(kube::Client& client, kube::EventSink& events,
                                         NodeHealthPublisherOptions options)
    : client_(client), events_(events), options_(std::move(options)), clock_(*options_.clock) {
  if (options_.metrics != nullptr) {
    metrics_ = std::make_unique<Metrics>(*options_.metrics);
    options_.metrics->AddCollector([this](metrics::TextWriter& w) {
      const NodeHealthPublisherStats s = stats();
      w.Header("gpuop_health_publish_pending",
               "Health updates waiting for the API server: the condition (0 or 1) and events.",
               "gauge");
      w.Sample("gpuop_health_publish_pending", {{"kind", "condition"}},
               s.condition_pending ? 1 : 0);
      w.Sample("gpuop_health_publish_pending", {{"kind", "event"}},
               static_cast<double>(s.events_pending));
    });
  }
}

NodeHealthPublisher::~NodeHealthPublisher() { Stop(); }

void NodeHealthPublisher::Start() {
  absl::MutexLock stop_lock(&stop_mu_);
  if (writer_.joinable()) return;
  writer_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

void NodeHealthPublisher::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  if (!writer_.joinable()) return;
  writer_.request_stop();
  {
    absl::MutexLock lock(&mu_);
    wake_ = true;
  }
  writer_.join();
  writer_ = std::jthread();
}

void NodeHealthPublisher::Update(const HealthReport& report,
                                 std::vector<HealthTransition> transitions) {
  std::vector<kube::Condition> conditions = {NodeCondition(report),
                                             RecoveryActionCondition(report)};
  absl::MutexLock lock(&mu_);
  conditions_.resize(conditions.size(), {kube::Condition{}, report.time});
  for (size_t i = 0; i < conditions.size(); ++i) {
    auto& [current, transition] = conditions_[i];
    const kube::Condition& next = conditions[i];
    if (current.status != next.status) transition = report.time;
    if (current.status != next.status || current.reason != next.reason ||
        current.message != next.message) {
      current = next;
      condition_dirty_ = true;
    }
  }
  for (auto& t : transitions) {
    const std::string name = kube::EventName(options_.node_name, absl::Uniform<uint64_t>(random_));
    pending_.push_back({.name = name, .transition = std::move(t)});
  }
  while (pending_.size() > options_.max_pending_events) {
    pending_.pop_front();
    ++stats_.events_dropped;
    if (metrics_) metrics_->dropped.Get().Inc();
  }
  wake_ = true;
}

absl::Status NodeHealthPublisher::LearnNode() {
  GPUOP_ASSIGN_OR_RETURN(kube::Json node, client_.Get(kube::resources::kNodes, "",
                                                      options_.node_name, {.metadata_only = true}));
  kube::ObjectReference ref = kube::ReferenceTo(node);
  ref.api_version = "v1";
  ref.kind = "Node";
  ref.resource_version.clear();
  for (absl::string_view type : {kGpuHealthyCondition, kGpuRecoveryActionCondition}) {
    absl::StatusOr<kube::Condition> existing =
        GetNodeCondition(client_, options_.node_name, std::string(type));
    if (existing.ok()) {
      existing_[std::string(type)] = *std::move(existing);
    } else if (!absl::IsNotFound(existing.status())) {
      return existing.status();
    }
  }
  node_ref_ = std::move(ref);
  return absl::OkStatus();
}

absl::Status NodeHealthPublisher::WriteConditions(
    const std::vector<std::pair<kube::Condition, absl::Time>>& conditions) {
  std::vector<kube::Condition> written;
  for (const auto& [condition, transition] : conditions) {
    kube::Condition c = condition;
    c.last_transition_time = transition;
    // Keep the published transition time when the status is what the Node already shows (the
    // agent restarted, or this is a heartbeat).
    auto existing = existing_.find(condition.type);
    if (existing != existing_.end() && existing->second.status == condition.status &&
        existing->second.last_transition_time != absl::InfinitePast()) {
      c.last_transition_time = existing->second.last_transition_time;
    }
    written.push_back(std::move(c));
  }
  // One patch: a reader sees GPUHealthy and GPURecoveryAction change together.
  absl::Status patched = PatchNodeConditions(client_, options_.node_name, written, clock_.Now());
  if (metrics_) metrics_->writes.With({"condition", patched.ok() ? "ok" : "error"}).Inc();
  if (!patched.ok()) return patched;
  for (kube::Condition& c : written) existing_[c.type] = std::move(c);
  return absl::OkStatus();
}

absl::Status NodeHealthPublisher::WriteEvent(const PendingEvent& event) {
  const HealthTransition& t = event.transition;
  kube::EventDetails details{
      .regarding = *node_ref_,
      .type = t.recovered ? kube::EventType::kNormal : kube::EventType::kWarning,
      .reason = t.recovered ? "GPURecovered" : "GPUUnhealthy",
      .action = t.recovered ? "MarkHealthy" : "MarkUnhealthy",
      .note = kube::Truncate(EventNote(t), kube::kMaxNoteBytes)};
  const std::string instance =
      options_.reporting_instance.empty() ? options_.node_name : options_.reporting_instance;
  const kube::Json object =
      kube::EventObject(details, event.name, kube::EventNamespace(details.regarding), t.time,
                        kReportingController, kube::Truncate(instance, kube::kMaxReportingBytes));
  absl::Status written = events_.Create(kube::EventNamespace(details.regarding), object);
  // Already there: an earlier attempt succeeded although its answer was lost.
  if (absl::IsAlreadyExists(written)) written = absl::OkStatus();
  if (metrics_) metrics_->writes.With({"event", written.ok() ? "ok" : "error"}).Inc();
  return written;
}

absl::Status NodeHealthPublisher::Flush() {
  if (!node_ref_.has_value()) GPUOP_RETURN_IF_ERROR(LearnNode());
  std::vector<std::pair<kube::Condition, absl::Time>> conditions;
  {
    absl::MutexLock lock(&mu_);
    const bool heartbeat_due = clock_.Now() >= next_heartbeat_;
    if (!conditions_.empty() && (condition_dirty_ || heartbeat_due)) {
      conditions = conditions_;
      condition_dirty_ = false;
    }
  }
  if (!conditions.empty()) {
    if (absl::Status s = WriteConditions(conditions); !s.ok()) {
      absl::MutexLock lock(&mu_);
      condition_dirty_ = true;  // unless a newer one replaced it, which is dirty anyway
      return s;
    }
    absl::MutexLock lock(&mu_);
    ++stats_.condition_writes;
    next_heartbeat_ = clock_.Now() + options_.heartbeat;
  }
  while (true) {
    std::optional<PendingEvent> next;
    {
      absl::MutexLock lock(&mu_);
      if (pending_.empty()) break;
      next = pending_.front();
    }
    GPUOP_RETURN_IF_ERROR(WriteEvent(*next));
    absl::MutexLock lock(&mu_);
    // The queue only loses its front here or by overflow; overflow may have dropped it already.
    if (!pending_.empty() && pending_.front().name == next->name) pending_.pop_front();
    ++stats_.events_written;
  }
  return absl::OkStatus();
}

void NodeHealthPublisher::Loop(std::stop_token stop) {
  int failures = 0;
  absl::Time retry_at = absl::InfinitePast();
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      // After a failure only the retry time ends the wait; otherwise new work or the heartbeat.
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return (failures == 0 && wake_) || stop.stop_requested();
      };
      const absl::Time deadline = failures > 0 ? retry_at : next_heartbeat_;
      // Bounded waits, so a deadline on an injected clock is noticed too.
      while (!ready() && clock_.Now() < deadline) {
        mu_.AwaitWithTimeout(
            absl::Condition(&ready),
            std::clamp(deadline - clock_.Now(), absl::ZeroDuration(), absl::Milliseconds(200)));
      }
      if (stop.stop_requested()) break;
      wake_ = false;
    }
    if (absl::Status s = Flush(); !s.ok()) {
      absl::MutexLock lock(&mu_);
      ++stats_.write_failures;
      retry_at = clock_.Now() + kube::BackoffDelay(options_.retry, failures++, random_);
    } else {
      failures = 0;
    }
  }
  (void)Flush();  // One last try; what fails stays unwritten.
}

bool NodeHealthPublisher::WaitUntilPublished(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !condition_dirty_ && pending_.empty() && stats_.condition_writes > 0;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
}

NodeHealthPublisherStats NodeHealthPublisher::stats() const {
  absl::MutexLock lock(&mu_);
  NodeHealthPublisherStats s = stats_;
  s.events_pending = pending_.size();
  s.condition_pending = condition_dirty_;
  return s;
}

}  // namespace gpuop::agent
