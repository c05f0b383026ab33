#include "agent/exporter/exporter.h"

#include "absl/strings/str_cat.h"

namespace gpuop::agent::exporter {
namespace {

constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace

Exporter::Exporter(ExporterOptions options) : options_(std::move(options)) {
  podresources::PodLister* pods = options_.pod_lister;
  if (pods == nullptr && !options_.pod_resources_socket.empty()) {
    kubelet_ = podresources::NewKubeletPodLister(options_.pod_resources_socket);
    pods = kubelet_.get();
  }
  collector_ = std::make_unique<Collector>(CollectorOptions{
      .accelerators = options_.accelerators,
      .interval = options_.interval,
      .pods = pods,
      .pod_resources_timeout = options_.pod_resources_timeout,
      .node_name = options_.node_name,
      .series_per_holder = options_.series_per_holder,
      .clock = options_.clock,
  });
}

Exporter::~Exporter() { Stop(); }

absl::Status Exporter::Start() {
  absl::StatusOr<std::pair<std::string, int>> address =
      http::ParseListenAddress(options_.listen_address);
  if (!address.ok()) return address.status();
  if (server_ != nullptr) return absl::FailedPreconditionError("exporter: already started");
  auto server = std::make_unique<http::Server>(
      http::ServerOptions{.host = address->first, .port = address->second});
  server->Handle("/metrics", [this](const http::Request&) { return Metrics(); });
  server->Handle("/healthz", [this](const http::Request&) { return Healthz(); });
  if (absl::Status started = server->Start(); !started.ok()) {
    return absl::Status(started.code(), absl::StrCat("exporter: ", started.message()));
  }
  server_ = std::move(server);
  collector_->Start();
  return absl::OkStatus();
}

void Exporter::Stop() {
  if (server_ != nullptr) server_->Stop();
  collector_->Stop();
}

http::Response Exporter::Metrics() {
  const int64_t scrapes = scrapes_.fetch_add(1) + 1;
  http::Response response;
  response.content_type = kContentType;
  response.shared_body = collector_->Exposition();
  response.body = absl::StrCat(
      "# HELP gpuop_exporter_scrapes_total Scrapes of /metrics served.\n"
      "# TYPE gpuop_exporter_scrapes_total counter\n"
      "gpuop_exporter_scrapes_total ",
      scrapes, "\n");
  return response;
}

http::Response Exporter::Healthz() const {
  const absl::Status health = collector_->Health();
  if (health.ok()) return http::Response::Text(200, "ok");
  return http::Response::Text(503, health.message());
}

}  // namespace gpuop::agent::exporter
