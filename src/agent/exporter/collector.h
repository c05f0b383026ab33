#ifndef GPUOP_AGENT_EXPORTER_COLLECTOR_H_
#define GPUOP_AGENT_EXPORTER_COLLECTOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/podresources/attribution.h"
#include "agent/podresources/pod_resources.h"
#include "common/clock.h"
#include "hw/accelerator.h"
#include "metrics/registry.h"

namespace gpuop::agent::exporter {

struct CollectorOptions {
  // Borrowed; they must outlive the collector. Each needs its own Accelerator instance if
  // another component also calls WaitEvents: events go to one waiter.
  std::vector<hw::Accelerator*> accelerators;
  absl::Duration interval = absl::Seconds(10);
  // Borrowed. Null: no pod labels and no per-pod energy.
  podresources::PodLister* pods = nullptr;
  // Longest wait for the kubelet in one cycle.
  absl::Duration pod_resources_timeout = absl::Seconds(2);
  std::string node_name;  // the Hostname label
  // A shared GPU's series once per holding container (ExpositionInput::series_per_holder).
  bool series_per_holder = false;
  // The inventory (identity, MIG layout) is cached and taken again this often, and at once when
  // a sample's GPU count changes or pods hold devices the inventory does not know (at most once
  // per `unknown_device_rediscover_gap`).
  absl::Duration rediscover_interval = absl::Minutes(1);
  absl::Duration unknown_device_rediscover_gap = absl::Seconds(30);
  // Longest single wait for hardware events; bounds how long Stop() takes.
  absl::Duration event_wait = absl::Milliseconds(500);
  podresources::AttributionOptions attribution;
  const common::Clock* clock = &common::Clock::Real();
};

// Collects GPU telemetry for Prometheus, dcgm-exporter style, so that a scrape costs nothing:
// every `interval` one cycle samples every accelerator, asks the kubelet which pods hold which
// devices, accounts energy, and renders the whole exposition text once (RenderExposition); the
// text is published as an immutable string that scrapes share. A thread per accelerator follows
// hardware events to keep the latest XID per GPU.
//
// Failures never stop collection; each is counted by source (discover, sample, events) or in
// the PodResources error count, and the latest is kept for Health(). A kubelet that is down or
// slow costs at most `pod_resources_timeout` per cycle, and pod labels and per-pod energy keep
// their last known mapping until it answers again.
//
// Energy: each cycle adds every GPU's energy counter delta (a counter that went backwards, as
// after a driver reload, adds nothing; a GPU without an energy counter adds power x time, except
// across a gap of more than 3 intervals without samples) to its total and charges it to the
// containers holding the GPU as EnergyShares() says. Per-container totals are dropped when the
// kubelet no longer lists the container.
//
// Thread-safe.
class Collector {
 public:
  explicit Collector(CollectorOptions options);
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Starts collecting (the first cycle at once) and following events. Idempotent.
  void Start();
  // Stops and joins the threads: returns within `event_wait` plus, when a cycle is running, what
  // is left of it (at most `pod_resources_timeout` plus the accelerators' answers). Idempotent.
  void Stop();

  // Runs one cycle on the calling thread, serialized with the collector's own cycles.
  void CollectOnce();

  // The latest exposition text; empty before the first cycle. Never null; costs one reference
  // count, never a copy or a render.
  std::shared_ptr<const std::string> Exposition() const;

  // OK when a cycle succeeded (every accelerator sampled) within the last 3 intervals;
  // otherwise Unavailable saying since when, and the latest error.
  absl::Status Health() const;

  // Completed cycles, each counted once its exposition is served.
  int64_t collections() const;
  absl::Status last_error() const;

 private:
  struct AcceleratorState {
    std::optional<hw::Inventory> inventory;
    absl::Time discovered_at = absl::InfinitePast();
    bool rediscover = false;
    std::optional<hw::Sample> sample;  // null when the latest sample failed
  };
  struct EnergyState {
    std::optional<double> counter;  // the latest energy counter reading (joules)
    absl::Time time = absl::InfinitePast();
    double total = 0;
  };
  struct EventState {
    bool supported = true;                        // false once WaitEvents answered Unimplemented
    absl::flat_hash_map<int, uint64_t> last_xid;  // by GPU index
  };

  void Loop(std::stop_token stop);
  void WatchEvents(std::stop_token stop, size_t accelerator);
  void CountError(const char* source, const absl::Status& status, absl::Status& first)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(cycle_mu_);
  void SampleAndDiscover(size_t i, absl::Time now, absl::Status& first)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(cycle_mu_);
  void UpdatePods(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(cycle_mu_);
  void AccountEnergy() ABSL_EXCLUSIVE_LOCKS_REQUIRED(cycle_mu_);
  std::string Render(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(cycle_mu_);

  const CollectorOptions options_;
  const common::Clock& clock_;

  // The cycle's working state, owned by whichever thread runs a cycle.
  absl::Mutex cycle_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::vector<AcceleratorState> accelerators_ ABSL_GUARDED_BY(cycle_mu_);
  podresources::Attribution attribution_ ABSL_GUARDED_BY(cycle_mu_);
  bool pods_listed_ ABSL_GUARDED_BY(cycle_mu_) = false;
  absl::Time unknown_rediscovered_at_ ABSL_GUARDED_BY(cycle_mu_) = absl::InfinitePast();
  std::map<std::string, EnergyState> gpu_energy_ ABSL_GUARDED_BY(cycle_mu_);  // by UUID
  std::map<podresources::Holder, double> pod_energy_ ABSL_GUARDED_BY(cycle_mu_);
  metrics::Histogram duration_;
  size_t last_size_ ABSL_GUARDED_BY(cycle_mu_) = 0;

  // What other threads read.
  mutable absl::Mutex mu_;
  std::shared_ptr<const std::string> exposition_ ABSL_GUARDED_BY(mu_);
  std::vector<EventState> events_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> errors_ ABSL_GUARDED_BY(mu_);  // by source
  int64_t pod_resources_errors_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t collections_ ABSL_GUARDED_BY(mu_) = 0;
  // Cycles whose text is published: what collections() counts, so a caller that sees a cycle
  // counted also sees its exposition.
  int64_t published_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_success_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);

  absl::Mutex lifecycle_mu_;
  std::vector<std::jthread> threads_ ABSL_GUARDED_BY(lifecycle_mu_);
};

}  // namespace gpuop::agent::exporter

#endif  // GPUOP_AGENT_EXPORTER_COLLECTOR_H_
