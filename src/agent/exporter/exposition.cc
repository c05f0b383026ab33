#include "agent/exporter/exposition.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "hw/nvml/xid_names.h"

namespace gpuop::agent::exporter {
namespace {

// What a MIG GPU instance's series of a field shows: nothing (the field is the GPU's alone), the
// memory its processes use or leave free, or its own activity counters.
enum class PerInstance { kNone, kFbUsed, kFbFree, kActivity };

using ValueFn = std::optional<double> (*)(const hw::GpuSample&);
using ActivityFn = std::optional<double> (*)(const hw::Activity&);

// One dcgm-exporter field: a value of the GPU's sample, or (profiling fields) of an Activity,
// the GPU's and each GPU instance's. Neither for DCGM_FI_DEV_XID_ERRORS, which comes from events.
struct Field {
  const char* name;
  const char* help;
  const char* type;
  ValueFn value;
  PerInstance per_instance = PerInstance::kNone;
  ActivityFn activity = nullptr;
};

template <typename T>
std::optional<double> Number(const std::optional<T>& v) {
  if (!v.has_value()) return std::nullopt;
  return static_cast<double>(*v);
}

std::optional<double> Mib(const std::optional<uint64_t>& bytes) {
  if (!bytes.has_value()) return std::nullopt;
  return static_cast<double>(*bytes >> 20);
}

// dcgm-exporter's default fields, in its order.
const Field kFields[] = {
    {"DCGM_FI_DEV_SM_CLOCK", "Current clock of the streaming multiprocessors (MHz).", "gauge",
     [](const hw::GpuSample& s) { return Number(s.sm_clock_mhz); }},
    {"DCGM_FI_DEV_MEM_CLOCK", "Current memory clock (MHz).", "gauge",
     [](const hw::GpuSample& s) { return Number(s.memory_clock_mhz); }},
    {"DCGM_FI_DEV_MEMORY_TEMP", "Temperature of the GPU's memory (degrees Celsius).", "gauge",
     [](const hw::GpuSample& s) { return Number(s.memory_temperature_celsius); }},
    {"DCGM_FI_DEV_GPU_TEMP", "Temperature of the GPU die (degrees Celsius).", "gauge",
     [](const hw::GpuSample& s) { return Number(s.temperature_celsius); }},
    {"DCGM_FI_DEV_POWER_USAGE", "Power the board draws now (W).", "gauge",
     [](const hw::GpuSample& s) { return s.power_watts; }},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Energy used since the driver loaded (mJ).", "counter",
     [](const hw::GpuSample& s) -> std::optional<double> {
       if (!s.energy_joules.has_value()) return std::nullopt;
       return std::round(*s.energy_joules * 1000);
     }},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "PCIe packets the link had to resend.", "counter",
     [](const hw::GpuSample& s) { return Number(s.pcie_replay_count); }},
    {"DCGM_FI_DEV_GPU_UTIL", "Share of the last interval a kernel ran on the GPU (%).", "gauge",
     [](const hw::GpuSample& s) { return Number(s.gpu_utilization_percent); }},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "Share of the last interval device memory was busy (%).", "gauge",
     [](const hw::GpuSample& s) { return Number(s.memory_utilization_percent); }},
    {"DCGM_FI_DEV_ENC_UTIL", "Video encoder busy time (%).", "gauge",
     [](const hw::GpuSample& s) { return Number(s.encoder_utilization_percent); }},
    {"DCGM_FI_DEV_DEC_UTIL", "Video decoder busy time (%).", "gauge",
     [](const hw::GpuSample& s) { return Number(s.decoder_utilization_percent); }},
    {"DCGM_FI_DEV_XID_ERRORS", "Code of the latest XID error the driver reported (0: none yet).",
     "gauge", nullptr},
    {"DCGM_FI_DEV_FB_FREE", "Frame buffer memory not in use (MiB).", "gauge",
     [](const hw::GpuSample& s) { return Mib(s.memory_free_bytes); }, PerInstance::kFbFree},
    {"DCGM_FI_DEV_FB_USED", "Frame buffer memory in use (MiB).", "gauge",
     [](const hw::GpuSample& s) { return Mib(s.memory_used_bytes); }, PerInstance::kFbUsed},
    {"DCGM_FI_DEV_FB_RESERVED", "Frame buffer memory the driver keeps for itself (MiB).", "gauge",
     [](const hw::GpuSample& s) { return Mib(s.memory_reserved_bytes); }},
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
     "NVLink traffic since the driver loaded, sent and received over all links, headers included "
     "(bytes).",
     "counter", [](const hw::GpuSample& s) { return Number(s.nvlink_bytes_total); }},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
     "Memory rows replaced after uncorrectable ECC errors.", "counter",
     [](const hw::GpuSample& s) { return Number(s.remapped_rows_uncorrected); }},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "Memory rows replaced after correctable ECC errors.",
     "counter", [](const hw::GpuSample& s) { return Number(s.remapped_rows_corrected); }},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE",
     "1 when a memory row could not be remapped and the GPU needs service, else 0.", "gauge",
     [](const hw::GpuSample& s) { return Number(s.remapped_rows_failure); }},
    // Profiling fields (GPM on Hopper and newer), the GPU's and each MIG GPU instance's: absent
    // where there are no counters for them.
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE",
     "Share of the interval a graphics or compute context was active on the GPU (ratio).", "gauge",
     nullptr, PerInstance::kActivity, [](const hw::Activity& a) { return a.graphics_active; }},
    {"DCGM_FI_PROF_SM_ACTIVE", "Share of the SMs busy over the interval (ratio).", "gauge", nullptr,
     PerInstance::kActivity, [](const hw::Activity& a) { return a.sm_active; }},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Share of the interval the tensor pipes were busy (ratio).",
     "gauge", nullptr, PerInstance::kActivity,
     [](const hw::Activity& a) { return a.tensor_active; }},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "Share of the peak memory bandwidth used (ratio).", "gauge",
     nullptr, PerInstance::kActivity, [](const hw::Activity& a) { return a.dram_active; }},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", "PCIe traffic sent by the GPU (bytes per second).", "gauge",
     nullptr, PerInstance::kActivity,
     [](const hw::Activity& a) { return a.pcie_tx_bytes_per_second; }},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", "PCIe traffic received by the GPU (bytes per second).", "gauge",
     nullptr, PerInstance::kActivity,
     [](const hw::Activity& a) { return a.pcie_rx_bytes_per_second; }},
};

bool IsXid(const Field& field) { return field.value == nullptr && field.activity == nullptr; }

// The value of an instance's series of `field` (one with a per_instance kind).
std::optional<double> InstanceValue(const Field& field, const hw::GpuSample& sample,
                                    unsigned int instance_id, uint64_t instance_memory_bytes) {
  if (field.per_instance == PerInstance::kActivity) {
    const auto it = sample.instance_activity.find(instance_id);
    if (it == sample.instance_activity.end()) return std::nullopt;
    return field.activity(it->second);
  }
  uint64_t used = 0;
  for (const hw::ProcessUsage& process : sample.processes) {
    if (process.gpu_instance_id == instance_id) used += process.used_memory_bytes;
  }
  used = std::min(used, instance_memory_bytes);
  const uint64_t bytes =
      field.per_instance == PerInstance::kFbUsed ? used : instance_memory_bytes - used;
  return static_cast<double>(bytes >> 20);
}

// The label sets of one GPU's series, rendered once per exposition.
struct GpuSeries {
  std::vector<std::string> gpu_level;  // one per holder, or one without pod labels
  struct Instance {
    unsigned int id = 0;
    uint64_t memory_bytes = 0;
    std::vector<std::string> labels;
  };
  std::vector<Instance> instances;  // MIG GPU instances, by id
};

void AppendLabel(std::string& out, absl::string_view name, absl::string_view value) {
  if (!out.empty()) out += ',';
  out.append(name.data(), name.size());
  out += "=\"";
  AppendLabelValue(out, value);
  out += '"';
}

// The label sets of a series: `base` with the pod labels ("base,container=…,namespace=…,pod=…")
// of each holder when `per_holder`, else of the first holder (holder lists are sorted); just
// `base` when nobody holds it.
std::vector<std::string> WithHolders(const std::string& base,
                                     const std::vector<podresources::Holder>* holders,
                                     bool per_holder) {
  if (holders == nullptr || holders->empty()) return {base};
  std::vector<std::string> sets;
  const size_t count = per_holder ? holders->size() : 1;
  sets.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const podresources::Holder& holder = (*holders)[i];
    std::string labels = base;
    AppendLabel(labels, "container", holder.container);
    if (holder.dra.has_value()) {  // dcgm-exporter's labels for a device a ResourceClaim gave
      AppendLabel(labels, "dra_claim_name", holder.dra->claim_name);
      AppendLabel(labels, "dra_claim_namespace", holder.dra->claim_namespace);
      AppendLabel(labels, "dra_device_name", holder.dra->device);
      AppendLabel(labels, "dra_driver_name", holder.dra->driver);
      AppendLabel(labels, "dra_pool_name", holder.dra->pool);
    }
    AppendLabel(labels, "namespace", holder.pod_namespace);
    AppendLabel(labels, "pod", holder.pod);
    sets.push_back(std::move(labels));
  }
  return sets;
}

GpuSeries Describe(const ExpositionInput::Gpu& view, const std::string& node_name,
                   bool per_holder) {
  const hw::Gpu& gpu = *view.gpu;
  std::string identity;
  AppendLabel(identity, "gpu", absl::StrCat(gpu.index));
  AppendLabel(identity, "UUID", gpu.uuid);
  AppendLabel(identity, "pci_bus_id", DcgmPciBusId(gpu.pci_bus_id));
  AppendLabel(identity, "device", absl::StrCat(hw::VendorName(gpu.vendor), gpu.index));
  AppendLabel(identity, "modelName", gpu.product);
  std::string node;
  if (!node_name.empty()) AppendLabel(node, "Hostname", node_name);
  AppendLabel(node, "DCGM_FI_DRIVER_VERSION",
              view.driver_version != nullptr ? *view.driver_version : "");

  GpuSeries series;
  series.gpu_level =
      WithHolders(absl::StrCat(identity, ",", node),
                  view.holders != nullptr ? &view.holders->gpu : nullptr, per_holder);
  if (!gpu.mig_enabled) return series;
  std::map<unsigned int, const hw::MigDevice*> instances;
  for (const hw::MigDevice& mig : gpu.mig_devices) instances.emplace(mig.gpu_instance_id, &mig);
  for (const auto& [id, mig] : instances) {
    std::string labels = identity;
    AppendLabel(labels, "GPU_I_PROFILE", mig->profile);
    AppendLabel(labels, "GPU_I_ID", absl::StrCat(id));
    absl::StrAppend(&labels, ",", node);
    const std::vector<podresources::Holder>* holders = nullptr;
    if (view.holders != nullptr) {
      if (auto it = view.holders->instances.find(id); it != view.holders->instances.end()) {
        holders = &it->second;
      }
    }
    series.instances.push_back({.id = id,
                                .memory_bytes = mig->memory_bytes,
                                .labels = WithHolders(labels, holders, per_holder)});
  }
  return series;
}

// Writes one family: its header before the first sample, nothing when it has none.
class FamilyWriter {
 public:
  FamilyWriter(std::string& out, const char* name, const char* help, const char* type)
      : out_(out), name_(name), help_(help), type_(type) {}

  void Sample(absl::string_view labels, double value, absl::string_view suffix = "") {
    if (!started_) {
      absl::StrAppend(&out_, "# HELP ", name_, " ", help_, "\n# TYPE ", name_, " ", type_, "\n");
      started_ = true;
    }
    absl::StrAppend(&out_, name_, suffix);
    if (!labels.empty()) absl::StrAppend(&out_, "{", labels, "}");
    out_ += ' ';
    AppendSampleValue(out_, value);
    out_ += '\n';
  }

 private:
  std::string& out_;
  const char* name_;
  const char* help_;
  const char* type_;
  bool started_ = false;
};

void RenderDcgmFields(const ExpositionInput& input, std::string& out) {
  std::vector<GpuSeries> series;
  series.reserve(input.gpus.size());
  for (const ExpositionInput::Gpu& gpu : input.gpus) {
    series.push_back(Describe(gpu, input.node_name, input.series_per_holder));
  }
  for (const Field& field : kFields) {
    FamilyWriter family(out, field.name, field.help, field.type);
    for (size_t i = 0; i < input.gpus.size(); ++i) {
      const ExpositionInput::Gpu& gpu = input.gpus[i];
      const bool telemetry = gpu.sample != nullptr && !gpu.sample->lost;
      std::optional<double> value;
      if (IsXid(field)) {
        value = Number(gpu.last_xid);
      } else if (telemetry) {
        value = field.value != nullptr ? field.value(*gpu.sample)
                                       : field.activity(gpu.sample->activity);
      }
      if (value.has_value()) {
        for (const std::string& labels : series[i].gpu_level) {
          if (!IsXid(field)) {
            family.Sample(labels, *value);
            continue;
          }
          std::string xid = labels;
          AppendLabel(xid, "err_code", absl::StrCat(*gpu.last_xid));
          if (absl::string_view name = hw::XidName(*gpu.last_xid); !name.empty()) {
            AppendLabel(xid, "err_msg", name);
          }
          family.Sample(xid, *value);
        }
      }
      if (field.per_instance == PerInstance::kNone || !telemetry) continue;
      for (const GpuSeries::Instance& instance : series[i].instances) {
        const std::optional<double> own =
            InstanceValue(field, *gpu.sample, instance.id, instance.memory_bytes);
        if (!own.has_value()) continue;
        for (const std::string& labels : instance.labels) family.Sample(labels, *own);
      }
    }
  }
}

void RenderEnergy(const ExpositionInput& input, std::string& out) {
  FamilyWriter gpus(out, "gpuop_gpu_energy_joules_total",
                    "Energy each GPU used while the exporter watched it.", "counter");
  for (const ExpositionInput::Gpu& gpu : input.gpus) {
    if (!gpu.energy_joules.has_value()) continue;
    std::string labels;
    AppendLabel(labels, "gpu", absl::StrCat(gpu.gpu->index));
    AppendLabel(labels, "UUID", gpu.gpu->uuid);
    gpus.Sample(labels, *gpu.energy_joules);
  }
  if (input.pod_energy == nullptr) return;
  FamilyWriter pods(out, "gpuop_pod_gpu_energy_joules_total",
                    "GPU energy charged to each container holding GPUs, MIG devices or "
                    "time-sliced replicas.",
                    "counter");
  for (const auto& [holder, joules] : *input.pod_energy) {
    std::string labels;
    AppendLabel(labels, "namespace", holder.pod_namespace);
    AppendLabel(labels, "pod", holder.pod);
    AppendLabel(labels, "container", holder.container);
    pods.Sample(labels, joules);
  }
}

void RenderSelf(const ExpositionInput::Self& self, std::string& out) {
  std::string version;
  AppendLabel(version, "version", self.version);
  FamilyWriter(out, "gpuop_exporter_build_info", "The exporter's version, as a label; always 1.",
               "gauge")
      .Sample(version, 1);
  FamilyWriter(out, "gpuop_exporter_collections_total", "Collection cycles run.", "counter")
      .Sample("", static_cast<double>(self.collections));
  const char* duration = "gpuop_exporter_collection_duration_seconds";
  FamilyWriter histogram(out, duration, "Time one collection cycle took.", "histogram");
  const metrics::Histogram::Snapshot& h = self.collection_duration;
  for (size_t i = 0; i < h.cumulative.size(); ++i) {
    std::string le = "le=\"";
    if (i < h.bounds.size()) {
      AppendSampleValue(le, h.bounds[i]);
    } else {
      le += "+Inf";
    }
    le += '"';
    histogram.Sample(le, static_cast<double>(h.cumulative[i]), "_bucket");
  }
  histogram.Sample("", h.sum, "_sum");
  histogram.Sample("", static_cast<double>(h.count), "_count");
  FamilyWriter errors(out, "gpuop_exporter_collection_errors_total",
                      "Failed steps of collection cycles, by what failed.", "counter");
  for (const auto& [source, count] : self.collection_errors) {
    std::string labels;
    AppendLabel(labels, "source", source);
    errors.Sample(labels, static_cast<double>(count));
  }
  FamilyWriter(out, "gpuop_exporter_pod_resources_errors_total",
               "Kubelet PodResources queries that failed; pod labels keep their last known "
               "values meanwhile.",
               "counter")
      .Sample("", static_cast<double>(self.pod_resources_errors));
  FamilyWriter(out, "gpuop_exporter_last_collection_timestamp_seconds",
               "When the latest collection cycle ended (Unix time).", "gauge")
      .Sample("", self.last_collection_timestamp);
  if (self.resident_memory_bytes.has_value()) {
    FamilyWriter(out, "process_resident_memory_bytes", "Resident memory size in bytes.", "gauge")
        .Sample("", *self.resident_memory_bytes);
  }
  if (self.cpu_seconds.has_value()) {
    FamilyWriter(out, "process_cpu_seconds_total", "Total user and system CPU time in seconds.",
                 "counter")
        .Sample("", *self.cpu_seconds);
  }
}

}  // namespace

void RenderExposition(const ExpositionInput& input, std::string& out) {
  RenderDcgmFields(input, out);
  RenderEnergy(input, out);
  RenderSelf(input.self, out);
}

std::string DcgmPciBusId(absl::string_view pci_bus_id) {
  const size_t colon = pci_bus_id.find(':');
  uint32_t domain = 0;
  if (colon == absl::string_view::npos ||
      !absl::SimpleHexAtoi(pci_bus_id.substr(0, colon), &domain)) {
    return absl::AsciiStrToUpper(pci_bus_id);
  }
  return absl::StrFormat("%08X:%s", domain, absl::AsciiStrToUpper(pci_bus_id.substr(colon + 1)));
}

void AppendLabelValue(std::string& out, absl::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
}

void AppendSampleValue(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else if (value == std::floor(value) && std::fabs(value) < 9e15) {
    absl::StrAppend(&out, static_cast<int64_t>(value));
  } else {
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
    out.append(buffer, result.ptr);
  }
}

}  // namespace gpuop::agent::exporter
