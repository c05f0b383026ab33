#ifndef GPUOP_AGENT_EXPORTER_EXPORTER_H_
#define GPUOP_AGENT_EXPORTER_EXPORTER_H_

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/exporter/collector.h"
#include "agent/podresources/pod_resources.h"
#include "common/clock.h"
#include "common/http/server.h"
#include "hw/accelerator.h"

namespace gpuop::agent::exporter {

struct ExporterOptions {
  // host:port; ":9400" (dcgm-exporter's port) listens on every address.
  std::string listen_address = ":9400";
  absl::Duration interval = absl::Seconds(10);
  // The kubelet's PodResources socket. Empty: no pod labels and no per-pod energy.
  std::filesystem::path pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  absl::Duration pod_resources_timeout = absl::Seconds(2);
  // The Hostname label: the Kubernetes node name.
  std::string node_name;
  // See CollectorOptions::series_per_holder.
  bool series_per_holder = false;
  // Borrowed; see CollectorOptions::accelerators.
  std::vector<hw::Accelerator*> accelerators;
  const common::Clock* clock = &common::Clock::Real();
  // Borrowed. When set it replaces the kubelet client built from pod_resources_socket.
  podresources::PodLister* pod_lister = nullptr;
};

// The `gpuop-agent exporter` component: a dcgm-exporter-compatible Prometheus endpoint.
//
//   GET /metrics  the collector's latest exposition (see Collector and RenderExposition) plus
//                 gpuop_exporter_scrapes_total. Serving it shares the text the collector
//                 rendered; it never touches the accelerators or the kubelet.
//   GET /healthz  200 "ok" when a collection succeeded within the last 3 intervals, else 503
//                 with the reason.
//
// Start() and Stop() belong to the owner's thread; everything else is thread-safe.
class Exporter {
 public:
  explicit Exporter(ExporterOptions options);
  ~Exporter();
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  // Listens, then starts collecting. InvalidArgument for a bad listen address; the server's
  // error when the address cannot be bound (nothing is left running then).
  [[nodiscard]] absl::Status Start();
  // Stops serving, then collecting; returns promptly (see Collector::Stop). Idempotent.
  void Stop();

  // The bound port once started (useful with port 0).
  int port() const { return server_ ? server_->port() : 0; }
  Collector& collector() { return *collector_; }
  int64_t scrapes() const { return scrapes_.load(); }

 private:
  http::Response Metrics();
  http::Response Healthz() const;

  const ExporterOptions options_;
  std::unique_ptr<podresources::PodLister> kubelet_;
  std::unique_ptr<Collector> collector_;
  std::unique_ptr<http::Server> server_;
  std::atomic<int64_t> scrapes_{0};
};

}  // namespace gpuop::agent::exporter

#endif  // GPUOP_AGENT_EXPORTER_EXPORTER_H_
