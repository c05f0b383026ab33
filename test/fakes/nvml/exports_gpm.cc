// GPU performance monitoring (GPM): samples of a GPU's activity counters, or of one MIG GPU
// instance's, and the metrics between two of them. SIMULATED: a sample records the scenario's
// readings (gpu_util, sm_active, tensor_active, dram_active, pcie_tx_mibps, pcie_rx_mibps) at the
// time it is taken, and a metric is the later sample's reading, which is what an average over the
// interval gives for the scenario's piecewise-constant telemetry. A GPU instance reports the
// GPU's activity ratios and its share of the PCIe traffic (its memory slices of the GPU's), so
// the instances of a fully partitioned GPU add up to the GPU's traffic.
#include <algorithm>

#include "test/fakes/nvml/exports.h"

using gpuop::fakenvml::DeviceRef;
using gpuop::fakenvml::Driver;
using gpuop::fakenvml::Field;
using gpuop::fakenvml::GpuState;
using gpuop::fakenvml::Machine;
using gpuop::fakenvml::WithDevice;

namespace {

// GPM exists on Hopper and newer whole GPUs; a MIG device is sampled through its parent and its
// GPU instance's id (nvmlGpmMigSampleGet).
bool HasGpm(const DeviceRef& ref) {
  return !ref.is_mig() && ref.gpu->spec.architecture >= NVML_DEVICE_ARCH_HOPPER &&
         ref.gpu->spec.architecture != NVML_DEVICE_ARCH_UNKNOWN;
}

nvmlGpmSample_st* FindSample(Machine& machine, nvmlGpmSample_t sample) {
  for (const auto& owned : machine.handles().gpm_samples) {
    if (owned.get() == sample) return owned.get();
  }
  return nullptr;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* support) {
  return WithDevice(device, [&](Machine&, const DeviceRef& ref) -> nvmlReturn_t {
    if (support == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (support->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    support->isSupportedDevice = HasGpm(ref) ? 1 : 0;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* sample) {
  return Driver::Get().Run([&](Machine& machine) -> nvmlReturn_t {
    if (sample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    machine.handles().gpm_samples.push_back(std::make_unique<nvmlGpmSample_st>());
    *sample = machine.handles().gpm_samples.back().get();
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  return Driver::Get().Run([&](Machine& machine) -> nvmlReturn_t {
    auto& samples = machine.handles().gpm_samples;
    const auto it = std::find_if(samples.begin(), samples.end(),
                                 [&](const auto& owned) { return owned.get() == sample; });
    if (it == samples.end()) return NVML_ERROR_INVALID_ARGUMENT;
    samples.erase(it);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t sample) {
  return WithDevice(device, [&](Machine& machine, const DeviceRef& ref) -> nvmlReturn_t {
    nvmlGpmSample_st* taken = FindSample(machine, sample);
    if (taken == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!HasGpm(ref)) return NVML_ERROR_NOT_SUPPORTED;
    const GpuState& gpu = *ref.gpu;
    taken->gpu = &gpu;
    taken->gpu_instance = kNvmlNoInstance;
    taken->taken_ms = machine.now_ms();
    taken->readings = {gpu.value(Field::kGpuUtil),      gpu.value(Field::kSmActive),
                       gpu.value(Field::kTensorActive), gpu.value(Field::kDramActive),
                       gpu.value(Field::kPcieTxMibps),  gpu.value(Field::kPcieRxMibps)};
    return NVML_SUCCESS;
  });
}

// nvml.h: a sample "for a MIG GPU Instance": `device` is the parent GPU, `gpuInstanceId` the
// instance's id. Instance queries need the MIG monitor capability (nvmlDeviceGetGpuInstanceById).
nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpu_instance_id,
                                 nvmlGpmSample_t sample) {
  return WithDevice(device, [&](Machine& machine, const DeviceRef& ref) -> nvmlReturn_t {
    nvmlGpmSample_st* taken = FindSample(machine, sample);
    if (taken == nullptr || ref.is_mig()) return NVML_ERROR_INVALID_ARGUMENT;
    if (!HasGpm(ref) || !ref.gpu->mig_enabled) return NVML_ERROR_NOT_SUPPORTED;
    if (const nvmlReturn_t denied = machine.NeedMigMonitor(); denied != NVML_SUCCESS) return denied;
    const GpuState& gpu = *ref.gpu;
    const auto instance =
        std::find_if(gpu.gpu_instances.begin(), gpu.gpu_instances.end(),
                     [&](const auto& live) { return live->id == gpu_instance_id; });
    if (instance == gpu.gpu_instances.end()) return NVML_ERROR_NOT_FOUND;
    const double share = static_cast<double>((*instance)->profile->slices) /
                         std::max(1u, gpu.spec.mig->memory_slots);
    taken->gpu = &gpu;
    taken->gpu_instance = gpu_instance_id;
    taken->taken_ms = machine.now_ms();
    taken->readings = {gpu.value(Field::kGpuUtil),
                       gpu.value(Field::kSmActive),
                       gpu.value(Field::kTensorActive),
                       gpu.value(Field::kDramActive),
                       gpu.value(Field::kPcieTxMibps) * share,
                       gpu.value(Field::kPcieRxMibps) * share};
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* get) {
  return Driver::Get().Run([&](Machine& machine) -> nvmlReturn_t {
    if (get == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (get->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (get->numMetrics > kGpmMetricsCapacity) return NVML_ERROR_INVALID_ARGUMENT;
    const nvmlGpmSample_st* first = FindSample(machine, get->sample1);
    const nvmlGpmSample_st* second = FindSample(machine, get->sample2);
    // Two samples of one GPU (or one GPU instance), the first taken before the second.
    if (first == nullptr || second == nullptr || first->gpu == nullptr ||
        first->gpu != second->gpu || first->gpu_instance != second->gpu_instance ||
        first->taken_ms > second->taken_ms || first == second) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    for (unsigned int i = 0; i < get->numMetrics; ++i) {
      nvmlGpmMetric_t& metric = get->metrics[i];
      metric.metricInfo = {};
      int reading = -1;
      switch (metric.metricId) {
        case NVML_GPM_METRIC_GRAPHICS_UTIL:
          reading = 0;
          break;
        case NVML_GPM_METRIC_SM_UTIL:
          reading = 1;
          break;
        case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
          reading = 2;
          break;
        case NVML_GPM_METRIC_DRAM_BW_UTIL:
          reading = 3;
          break;
        case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
          reading = 4;
          break;
        case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
          reading = 5;
          break;
        default:
          break;
      }
      if (reading < 0) {
        metric.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        metric.value = 0;
        continue;
      }
      metric.nvmlReturn = NVML_SUCCESS;
      metric.value = second->readings[static_cast<size_t>(reading)];
    }
    return NVML_SUCCESS;
  });
}

}  // extern "C"
