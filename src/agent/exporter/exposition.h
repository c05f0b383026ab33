#ifndef GPUOP_AGENT_EXPORTER_EXPOSITION_H_
#define GPUOP_AGENT_EXPORTER_EXPOSITION_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/podresources/attribution.h"
#include "hw/model.h"
#include "metrics/registry.h"

namespace gpuop::agent::exporter {

// Everything one rendering of /metrics shows. Pointers are borrowed for the call.
struct ExpositionInput {
  struct Gpu {
    const hw::Gpu* gpu = nullptr;
    const std::string* driver_version = nullptr;  // of the GPU's accelerator
    // The latest telemetry; null when this cycle's sample failed: no DCGM telemetry series then
    // (a stale value would read as current).
    const hw::GpuSample* sample = nullptr;
    // The latest XID's code, 0 before any; nullopt where the accelerator has no XID events.
    std::optional<uint64_t> last_xid;
    // Null or empty: nobody holds the GPU.
    const podresources::GpuHolders* holders = nullptr;
    // Energy the exporter has measured on this GPU since it started (joules).
    std::optional<double> energy_joules;
  };
  struct Self {
    std::string version;
    int64_t collections = 0;
    metrics::Histogram::Snapshot collection_duration;
    std::vector<std::pair<std::string, int64_t>> collection_errors;  // by source
    int64_t pod_resources_errors = 0;
    double last_collection_timestamp = 0;  // Unix seconds; 0 before the first
    std::optional<double> resident_memory_bytes;
    std::optional<double> cpu_seconds;
  };

  std::string node_name;  // the Hostname label; omitted when empty, as dcgm-exporter does
  // One series per holding container of a shared GPU instead of one per GPU (dcgm-exporter's
  // --kubernetes-virtual-gpus). Off by default: sums over pods then count each GPU once.
  bool series_per_holder = false;
  std::vector<Gpu> gpus;
  // Energy charged to each container since the exporter started (joules).
  const std::map<podresources::Holder, double>* pod_energy = nullptr;
  Self self;
};

// Appends the Prometheus text exposition (format 0.0.4) of `input` to `out`:
//
// 1. dcgm-exporter's default fields, under its names, types and labels, in its label order:
//      gpu, UUID, pci_bus_id ("00000000:17:00.0"), device ("nvidia0"; "amd0" for AMD),
//      modelName, [GPU_I_PROFILE, GPU_I_ID], Hostname, DCGM_FI_DRIVER_VERSION,
//      [container, namespace, pod].
//    GPU-level series describe the whole GPU: one series per GPU, with the pod labels of the
//    container holding it (of the first, in namespace/pod/container order, when time-slicing
//    or MPS shares it among several: dcgm-exporter keeps one holder too), none when nobody
//    holds it. With `series_per_holder` the series is repeated once per holding container
//    instead (dcgm-exporter's --kubernetes-virtual-gpus), so that each pod finds its own.
//    DCGM_FI_DEV_XID_ERRORS carries err_code (the XID) and, for an XID the catalogue names,
//    err_msg (hw::XidName), as dcgm-exporter labels it.
//    A GPU with MIG enabled keeps its GPU-level series without pod labels (pods hold its MIG
//    devices, not the GPU) and adds, per GPU instance that has MIG devices, DCGM_FI_DEV_FB_USED
//    and DCGM_FI_DEV_FB_FREE with GPU_I_PROFILE and GPU_I_ID (the parent GPU's gpu, UUID and
//    device, as dcgm-exporter labels MIG entities), repeated per holding container of that
//    instance (once per container with `series_per_holder`, else with the first holder's pod
//    labels). NVML reports no other field per instance. An instance's FB used is the memory of
//    the processes running in it; FB free is its size minus that.
//    A series whose value the GPU does not report (NOT_SUPPORTED) is left out; a lost GPU keeps
//    only DCGM_FI_DEV_XID_ERRORS.
// 2. gpuop_gpu_energy_joules_total{gpu,UUID} and
//    gpuop_pod_gpu_energy_joules_total{namespace,pod,container}.
// 3. The exporter's own metrics: build info, collections, their duration, errors, the latest
//    collection's time, and process_resident_memory_bytes / process_cpu_seconds_total.
// Families without samples are left out entirely.
void RenderExposition(const ExpositionInput& input, std::string& out);

// dcgm-exporter's pci_bus_id form of a sysfs address: "0000:17:00.0" -> "00000000:17:00.0".
std::string DcgmPciBusId(absl::string_view pci_bus_id);

// Appends `value` escaped for a label value (backslash, double quote, newline).
void AppendLabelValue(std::string& out, absl::string_view value);

// Appends a sample value: integers exactly, other numbers in the shortest form that reads back
// the same, NaN and +Inf/-Inf as Prometheus spells them.
void AppendSampleValue(std::string& out, double value);

}  // namespace gpuop::agent::exporter

#endif  // GPUOP_AGENT_EXPORTER_EXPOSITION_H_
