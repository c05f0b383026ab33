#include "agent/health/monitor.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace gpuop::agent {

namespace {

HealthWatcherOptions WithoutExternal(HealthWatcherOptions options) {
  options.external_file.clear();
  return options;
}

}  // namespace

struct HealthMonitor::Metrics {
  explicit Metrics(metrics::Registry& r)
      : transitions(r.AddCounter("gpuop_health_transitions_total",
                                 "Devices that became unhealthy or recovered.", {"kind"})),
        file_errors(r.AddCounter("gpuop_health_file_write_errors_total",
                                 "Failed writes of the health file the device plugin reads.")) {}
  metrics::Family<metrics::Counter>& transitions;
  metrics::Family<metrics::Counter>& file_errors;
};

HealthMonitor::HealthMonitor(std::vector<hw::Accelerator*> accelerators,
                             HealthMonitorOptions options, Listener on_change)
    : accelerators_(std::move(accelerators)),
      options_(std::move(options)),
      on_change_(std::move(on_change)),
      watcher_(accelerators_, WithoutExternal(options_.watch), [this] { Evaluate(false); }) {
  if (options_.metrics != nullptr) {
    metrics_ = std::make_unique<Metrics>(*options_.metrics);
    options_.metrics->AddCollector([this](metrics::TextWriter& w) {
      const HealthReport now = report();
      w.Header("gpuop_gpu_healthy",
               "1 when the device is healthy; 0 with the reason's code when it is not.", "gauge");
      for (const auto& d : now.devices) {
        std::vector<std::pair<std::string, std::string>> labels = {
            {"gpu", absl::StrCat(d.gpu_index)},
            {"UUID", d.gpu_uuid},
            {"pci_bus_id", d.pci_bus_id},
            {"GPU_I_ID", d.gpu_instance_id ? absl::StrCat(*d.gpu_instance_id) : ""},
            {"reason", d.problem ? d.problem->code : ""}};
        w.Sample("gpuop_gpu_healthy", labels, d.problem ? 0 : 1);
      }
    });
  }
}

HealthMonitor::~HealthMonitor() { Stop(); }

absl::Status HealthMonitor::Rediscover() {
  std::vector<hw::Inventory> inventories;
  for (hw::Accelerator* accelerator : accelerators_) {
    GPUOP_ASSIGN_OR_RETURN(hw::Inventory inventory, accelerator->Discover());
    inventories.push_back(std::move(inventory));
  }
  watcher_.SetInventories(inventories);
  {
    absl::MutexLock lock(&mu_);
    inventories_ = std::move(inventories);
  }
  Evaluate(false);
  return absl::OkStatus();
}

void HealthMonitor::LoadState() {
  if (options_.state_file.empty()) return;
  absl::StatusOr<std::optional<std::string>> text = common::ReadFileIfExists(options_.state_file);
  if (!text.ok() || !text->has_value()) return;
  const nlohmann::json state = nlohmann::json::parse(**text, nullptr, /*allow_exceptions=*/false);
  absl::Status loaded = watcher_.tracker().LoadState(state);
  if (!loaded.ok()) {
    // Never trusted in part; the conditions it held are seen again if they still hold.
    std::fprintf(stderr, "health: ignoring %s: %s\n", options_.state_file.c_str(),
                 loaded.ToString().c_str());
  }
}

void HealthMonitor::SaveState() {
  if (options_.state_file.empty()) return;
  std::string text = watcher_.tracker().SaveState().dump();
  if (text == state_written_) return;
  if (absl::Status s = common::WriteFileAtomically(options_.state_file, text + "\n"); !s.ok()) {
    std::fprintf(stderr, "health: %s\n", s.ToString().c_str());
    return;
  }
  state_written_ = std::move(text);
}

absl::Status HealthMonitor::Start() {
  LoadState();
  GPUOP_RETURN_IF_ERROR(Rediscover());
  watcher_.SampleNow();
  Evaluate(true);
  GPUOP_RETURN_IF_ERROR(watcher_.Start());
  maintainer_ = std::jthread([this](std::stop_token stop) { Maintain(stop); });
  return absl::OkStatus();
}

void HealthMonitor::Stop() {
  maintainer_ = std::jthread();  // Stops and joins.
  watcher_.Stop();
}

HealthReport HealthMonitor::report() const {
  absl::MutexLock lock(&mu_);
  return last_.value_or(HealthReport{});
}

void HealthMonitor::Evaluate(bool refresh) {
  absl::MutexLock evaluating(&evaluate_mu_);
  const absl::Time now = options_.watch.clock->Now();
  HealthReport report;
  std::vector<HealthTransition> transitions;
  bool write_file = refresh;
  {
    absl::MutexLock lock(&mu_);
    report = BuildReport(watcher_.tracker(), inventories_, now);
    transitions = Diff(last_.value_or(HealthReport{}), report);
    const bool changed = !last_.has_value() || last_->devices != report.devices;
    if (!changed && !refresh) return;
    write_file = write_file || changed || now - file_written_ >= options_.file_validity / 2;
    last_ = report;
  }
  SaveState();
  if (metrics_) {
    for (const auto& t : transitions) {
      metrics_->transitions.With({t.recovered ? "recovered" : "unhealthy"}).Inc();
    }
  }
  for (const auto& t : transitions) {
    std::fprintf(stderr, "health: %s: %s\n", t.device.Describe().c_str(),
                 t.recovered ? "healthy again" : t.device.problem->reason.c_str());
  }
  if (write_file && !options_.health_file.empty()) {
    absl::Status written = common::WriteFileAtomically(
        options_.health_file, HealthFileJson(report, now + options_.file_validity));
    if (written.ok()) {
      absl::MutexLock lock(&mu_);
      file_written_ = now;
    } else {
      if (metrics_) metrics_->file_errors.Get().Inc();
      std::fprintf(stderr, "health: %s\n", written.ToString().c_str());
    }
  }
  on_change_(report, std::move(transitions));
}

void HealthMonitor::Maintain(std::stop_token stop) {
  const common::Clock& clock = *options_.watch.clock;
  absl::Time next_discovery = clock.Now() + options_.rediscover_interval;
  while (!stop.stop_requested()) {
    clock.SleepFor(std::min(options_.file_validity / 4, absl::Seconds(1)), stop);
    if (stop.stop_requested()) break;
    if (clock.Now() >= next_discovery) {
      next_discovery = clock.Now() + options_.rediscover_interval;
      if (absl::Status s = Rediscover(); !s.ok()) {
        std::fprintf(stderr, "health: re-discovery failed, keeping the GPUs known: %s\n",
                     s.ToString().c_str());
      }
    }
    bool refresh = false;
    {
      absl::MutexLock lock(&mu_);
      refresh = clock.Now() - file_written_ >= options_.file_validity / 2;
    }
    if (refresh) Evaluate(true);
  }
}

}  // namespace gpuop::agent
