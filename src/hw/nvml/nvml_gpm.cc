// NvmlAccelerator's GPU performance monitoring (GPM, Hopper and newer): each GPU's activity, and
// each MIG GPU instance's, over the interval since the previous sample.
#include <algorithm>
#include <set>
#include <utility>

#include "hw/nvml/nvml_accelerator.h"

namespace gpuop::hw {

std::optional<Activity> NvmlAccelerator::NextGpmInterval(
    nvmlGpmSample_t& last, const std::function<nvmlReturn_t(nvmlGpmSample_t)>& take) const {
  const NvmlFunctions& f = lib_->fn();
  nvmlGpmSample_t now = nullptr;
  calls_.fetch_add(2, std::memory_order_relaxed);
  if (f.nvmlGpmSampleAlloc(&now) != NVML_SUCCESS) return std::nullopt;
  if (take(now) != NVML_SUCCESS) {
    f.nvmlGpmSampleFree(now);
    return std::nullopt;
  }
  nvmlGpmSample_t before = std::exchange(last, now);
  if (before == nullptr) return std::nullopt;  // the first sample: no interval yet
  nvmlGpmMetricsGet_t get{
      .version = NVML_GPM_METRICS_GET_VERSION, .sample1 = before, .sample2 = now};
  const unsigned int ids[] = {NVML_GPM_METRIC_GRAPHICS_UTIL,   NVML_GPM_METRIC_SM_UTIL,
                              NVML_GPM_METRIC_ANY_TENSOR_UTIL, NVML_GPM_METRIC_DRAM_BW_UTIL,
                              NVML_GPM_METRIC_PCIE_TX_PER_SEC, NVML_GPM_METRIC_PCIE_RX_PER_SEC};
  for (unsigned int id : ids) get.metrics[get.numMetrics++].metricId = id;
  calls_.fetch_add(2, std::memory_order_relaxed);
  const nvmlReturn_t rc = f.nvmlGpmMetricsGet(&get);
  f.nvmlGpmSampleFree(before);
  if (rc != NVML_SUCCESS) return std::nullopt;
  auto value = [&](int i) -> std::optional<double> {
    if (get.metrics[i].nvmlReturn != NVML_SUCCESS) return std::nullopt;
    return get.metrics[i].value;
  };
  auto ratio = [&](int i) -> std::optional<double> {
    std::optional<double> percent = value(i);
    if (!percent.has_value()) return std::nullopt;
    return std::clamp(*percent / 100.0, 0.0, 1.0);
  };
  auto bytes = [&](int i) -> std::optional<double> {
    std::optional<double> mib = value(i);
    if (!mib.has_value()) return std::nullopt;
    return *mib * 1024 * 1024;
  };
  return Activity{.graphics_active = ratio(0),
                  .sm_active = ratio(1),
                  .tensor_active = ratio(2),
                  .dram_active = ratio(3),
                  .pcie_tx_bytes_per_second = bytes(4),
                  .pcie_rx_bytes_per_second = bytes(5)};
}

std::set<unsigned int> NvmlAccelerator::GpuInstanceIds(nvmlDevice_t device) const {
  const NvmlFunctions& f = lib_->fn();
  std::set<unsigned int> ids;
  if (f.nvmlDeviceGetMigMode == nullptr || f.nvmlDeviceGetMaxMigDeviceCount == nullptr ||
      f.nvmlDeviceGetMigDeviceHandleByIndex == nullptr || f.nvmlDeviceGetGpuInstanceId == nullptr) {
    return ids;
  }
  unsigned int current = 0, pending = 0, max = 0;
  calls_.fetch_add(2, std::memory_order_relaxed);
  if (f.nvmlDeviceGetMigMode(device, &current, &pending) != NVML_SUCCESS ||
      current != NVML_DEVICE_MIG_ENABLE ||
      f.nvmlDeviceGetMaxMigDeviceCount(device, &max) != NVML_SUCCESS) {
    return ids;
  }
  for (unsigned int i = 0; i < max; ++i) {
    nvmlDevice_t mig = nullptr;
    calls_.fetch_add(1, std::memory_order_relaxed);
    if (f.nvmlDeviceGetMigDeviceHandleByIndex(device, i, &mig) != NVML_SUCCESS) continue;
    if (auto id = Optional<unsigned int>(f.nvmlDeviceGetGpuInstanceId, nullptr, mig))
      ids.insert(*id);
  }
  return ids;
}

void NvmlAccelerator::SampleGpm(int index, nvmlDevice_t device, GpuSample& s) const {
  const NvmlFunctions& f = lib_->fn();
  if (f.nvmlGpmQueryDeviceSupport == nullptr || f.nvmlGpmSampleAlloc == nullptr ||
      f.nvmlGpmSampleFree == nullptr || f.nvmlGpmSampleGet == nullptr ||
      f.nvmlGpmMetricsGet == nullptr) {
    return;  // a driver older than GPM
  }
  absl::MutexLock lock(&gpm_mu_);
  GpmState& state = gpm_[index];
  if (!state.checked) {
    nvmlGpmSupport_t support{.version = NVML_GPM_SUPPORT_VERSION};
    calls_.fetch_add(1, std::memory_order_relaxed);
    state.supported = f.nvmlGpmQueryDeviceSupport(device, &support) == NVML_SUCCESS &&
                      support.isSupportedDevice != 0;
    state.checked = true;
  }
  if (!state.supported) return;
  if (std::optional<Activity> activity = NextGpmInterval(
          state.last, [&](nvmlGpmSample_t sample) { return f.nvmlGpmSampleGet(device, sample); })) {
    s.activity = *activity;
  }

  // Each MIG GPU instance through its parent (as dcgm-exporter publishes MIG GPUs: per instance).
  if (f.nvmlGpmMigSampleGet == nullptr) return;
  const std::set<unsigned int> ids = GpuInstanceIds(device);
  for (auto it = state.instances.begin(); it != state.instances.end();) {
    if (ids.contains(it->first)) {
      ++it;
      continue;
    }
    f.nvmlGpmSampleFree(it->second);  // the instance is gone
    it = state.instances.erase(it);
  }
  for (unsigned int id : ids) {
    std::optional<Activity> activity = NextGpmInterval(
        state.instances[id],
        [&](nvmlGpmSample_t sample) { return f.nvmlGpmMigSampleGet(device, id, sample); });
    if (activity.has_value()) s.instance_activity[id] = *activity;
  }
}

void NvmlAccelerator::FreeGpmSamples() {
  absl::MutexLock lock(&gpm_mu_);
  const NvmlFunctions& f = lib_->fn();
  for (auto& [index, state] : gpm_) {
    if (f.nvmlGpmSampleFree == nullptr) break;
    if (state.last != nullptr) f.nvmlGpmSampleFree(state.last);
    for (auto& [id, sample] : state.instances) {
      if (sample != nullptr) f.nvmlGpmSampleFree(sample);
    }
  }
  gpm_.clear();
}

}  // namespace gpuop::hw
