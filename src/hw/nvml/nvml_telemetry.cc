// NvmlAccelerator::TakeSample: one pass over every GPU's counters.
#include <algorithm>
#include <utility>

#include "common/status_macros.h"
#include "hw/nvml/nvml_accelerator.h"

namespace gpuop::hw {

GpuSample NvmlAccelerator::SampleGpu(int index, nvmlDevice_t device) const {
  const NvmlFunctions& f = lib_->fn();
  GpuSample s{.index = index};
  bool lost = false;
  bool* l = &lost;

  if (auto u = Optional<nvmlUtilization_t>(f.nvmlDeviceGetUtilizationRates, l, device)) {
    s.gpu_utilization_percent = u->gpu;
    s.memory_utilization_percent = u->memory;
  }
  unsigned int period = 0;
  auto util_with_period = [&](auto fn) -> std::optional<unsigned int> {
    if (fn == nullptr || lost) return std::nullopt;
    calls_.fetch_add(1, std::memory_order_relaxed);
    unsigned int value = 0;
    const nvmlReturn_t rc = fn(device, &value, &period);
    if (rc == NVML_ERROR_GPU_IS_LOST) lost = true;
    return rc == NVML_SUCCESS ? std::optional<unsigned int>(value) : std::nullopt;
  };
  s.encoder_utilization_percent = util_with_period(f.nvmlDeviceGetEncoderUtilization);
  s.decoder_utilization_percent = util_with_period(f.nvmlDeviceGetDecoderUtilization);

  // Memory: v2 separates driver-reserved memory (what nvidia-smi shows); v1 is the fallback.
  nvmlMemory_v2_t mem2{};
  mem2.version = nvmlMemory_v2;
  bool have_memory = false;
  if (f.nvmlDeviceGetMemoryInfo_v2 != nullptr && !lost) {
    calls_.fetch_add(1, std::memory_order_relaxed);
    const nvmlReturn_t rc = f.nvmlDeviceGetMemoryInfo_v2(device, &mem2);
    if (rc == NVML_ERROR_GPU_IS_LOST) lost = true;
    if (rc == NVML_SUCCESS) {
      s.memory_used_bytes = mem2.used;
      s.memory_free_bytes = mem2.free;
      s.memory_reserved_bytes = mem2.reserved;
      have_memory = true;
    }
  }
  if (!have_memory) {
    if (auto m = Optional<nvmlMemory_t>(f.nvmlDeviceGetMemoryInfo, l, device)) {
      s.memory_used_bytes = m->used;
      s.memory_free_bytes = m->free;
    }
  }

  if (auto t =
          Optional<unsigned int>(f.nvmlDeviceGetTemperature, l, device, NVML_TEMPERATURE_GPU)) {
    s.temperature_celsius = static_cast<int>(*t);
  }
  if (auto t = Optional<unsigned int>(f.nvmlDeviceGetTemperatureThreshold, l, device,
                                      NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)) {
    s.slowdown_temperature_celsius = static_cast<int>(*t);
  }
  if (auto t = Optional<unsigned int>(f.nvmlDeviceGetTemperatureThreshold, l, device,
                                      NVML_TEMPERATURE_THRESHOLD_SHUTDOWN)) {
    s.shutdown_temperature_celsius = static_cast<int>(*t);
  }
  if (f.nvmlDeviceGetFieldValues != nullptr && !lost) {
    // One call for the fields: the memory temperature, the driver's recovery action and the
    // NVLink traffic (raw, summed over the links).
    nvmlFieldValue_t fields[4]{};
    fields[0].fieldId = NVML_FI_DEV_MEMORY_TEMP;
    fields[1].fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION;
    fields[2].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX;
    fields[2].scopeId = kNvmlAllLinks;
    fields[3].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_RX;
    fields[3].scopeId = kNvmlAllLinks;
    calls_.fetch_add(1, std::memory_order_relaxed);
    const nvmlReturn_t rc = f.nvmlDeviceGetFieldValues(device, 4, fields);
    if (rc == NVML_ERROR_GPU_IS_LOST) lost = true;
    auto integer = [](const nvmlFieldValue_t& field) -> std::optional<long long> {
      if (field.nvmlReturn != NVML_SUCCESS) return std::nullopt;
      switch (field.valueType) {
        case NVML_VALUE_TYPE_UNSIGNED_INT:
          return field.value.uiVal;
        case NVML_VALUE_TYPE_SIGNED_INT:
          return field.value.siVal;
        case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
          return static_cast<long long>(field.value.ullVal);
        default:
          return std::nullopt;
      }
    };
    if (rc == NVML_SUCCESS) {
      if (auto t = integer(fields[0])) s.memory_temperature_celsius = static_cast<int>(*t);
      if (auto a = integer(fields[1]); a.has_value() && *a >= 0) {
        s.recovery_action = static_cast<unsigned int>(*a);
      }
      const std::optional<long long> tx = integer(fields[2]);
      const std::optional<long long> rx = integer(fields[3]);
      if (tx.has_value() && rx.has_value() && *tx >= 0 && *rx >= 0) {
        s.nvlink_bytes_total = static_cast<uint64_t>(*tx + *rx) * 1024;  // KiB
      }
    }
  }
  if (!lost) SampleGpm(index, device, s);

  auto watts = [](unsigned int milliwatts) { return milliwatts / 1000.0; };
  if (auto p = Optional<unsigned int>(f.nvmlDeviceGetPowerUsage, l, device)) {
    s.power_watts = watts(*p);
  }
  if (auto p = Optional<unsigned int>(f.nvmlDeviceGetPowerManagementLimit, l, device)) {
    s.power_limit_watts = watts(*p);
  }
  if (auto p = Optional<unsigned int>(f.nvmlDeviceGetEnforcedPowerLimit, l, device)) {
    s.enforced_power_limit_watts = watts(*p);
  }
  if (f.nvmlDeviceGetPowerManagementLimitConstraints != nullptr && !lost) {
    unsigned int lo = 0, hi = 0;
    calls_.fetch_add(1, std::memory_order_relaxed);
    const nvmlReturn_t rc = f.nvmlDeviceGetPowerManagementLimitConstraints(device, &lo, &hi);
    if (rc == NVML_ERROR_GPU_IS_LOST) lost = true;
    if (rc == NVML_SUCCESS) {
      s.power_limit_min_watts = watts(lo);
      s.power_limit_max_watts = watts(hi);
    }
  }
  if (auto p = Optional<unsigned int>(f.nvmlDeviceGetPowerManagementDefaultLimit, l, device)) {
    s.power_limit_default_watts = watts(*p);
  }
  if (auto e = Optional<unsigned long long>(f.nvmlDeviceGetTotalEnergyConsumption, l, device)) {
    s.energy_joules = static_cast<double>(*e) / 1000.0;
  }
  if (auto c = Optional<unsigned int>(f.nvmlDeviceGetClockInfo, l, device, NVML_CLOCK_SM)) {
    s.sm_clock_mhz = *c;
  }
  if (auto c = Optional<unsigned int>(f.nvmlDeviceGetClockInfo, l, device, NVML_CLOCK_MEM)) {
    s.memory_clock_mhz = *c;
  }
  if (auto r = Optional<unsigned long long>(f.nvmlDeviceGetCurrentClocksEventReasons, l, device)) {
    s.throttle_reasons = *r;
  }
  if (auto r = Optional<unsigned int>(f.nvmlDeviceGetPcieReplayCounter, l, device)) {
    s.pcie_replay_count = *r;
  }

  // ECC counters only mean something with ECC on.
  nvmlEnableState_t ecc = NVML_FEATURE_DISABLED, ecc_pending = NVML_FEATURE_DISABLED;
  bool ecc_on = false;
  if (f.nvmlDeviceGetEccMode != nullptr && !lost) {
    calls_.fetch_add(1, std::memory_order_relaxed);
    const nvmlReturn_t rc = f.nvmlDeviceGetEccMode(device, &ecc, &ecc_pending);
    if (rc == NVML_ERROR_GPU_IS_LOST) lost = true;
    ecc_on = rc == NVML_SUCCESS && ecc == NVML_FEATURE_ENABLED;
  }
  if (ecc_on) {
    auto count = [&](int type, int counter) {
      return Optional<unsigned long long>(f.nvmlDeviceGetTotalEccErrors, l, device, type, counter);
    };
    s.ecc_volatile_corrected = count(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC);
    s.ecc_volatile_uncorrected = count(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC);
    s.ecc_aggregate_corrected = count(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC);
    s.ecc_aggregate_uncorrected = count(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC);
    auto retired = [&](int cause) -> std::optional<unsigned int> {
      if (f.nvmlDeviceGetRetiredPages == nullptr || lost) return std::nullopt;
      calls_.fetch_add(1, std::memory_order_relaxed);
      unsigned int pages = 0;  // Count only: a zero-length buffer asks for the number.
      const nvmlReturn_t rc = f.nvmlDeviceGetRetiredPages(device, cause, &pages, nullptr);
      if (rc == NVML_ERROR_GPU_IS_LOST) lost = true;
      return rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE
                 ? std::optional<unsigned int>(pages)
                 : std::nullopt;
    };
    s.retired_pages_single_bit = retired(NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS);
    s.retired_pages_double_bit = retired(NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR);
    if (auto p = Optional<nvmlEnableState_t>(f.nvmlDeviceGetRetiredPagesPendingStatus, l, device)) {
      s.retired_pages_pending = *p == NVML_FEATURE_ENABLED;
    }
  }
  if (f.nvmlDeviceGetRemappedRows != nullptr && !lost) {
    unsigned int corrected = 0, uncorrected = 0, pending = 0, failure = 0;
    calls_.fetch_add(1, std::memory_order_relaxed);
    const nvmlReturn_t rc =
        f.nvmlDeviceGetRemappedRows(device, &corrected, &uncorrected, &pending, &failure);
    if (rc == NVML_ERROR_GPU_IS_LOST) lost = true;
    if (rc == NVML_SUCCESS) {
      s.remapped_rows_corrected = corrected;
      s.remapped_rows_uncorrected = uncorrected;
      s.remapped_rows_pending = pending != 0;
      s.remapped_rows_failure = failure != 0;
    }
  }

  // Processes: ask for the count, then fetch; the list may grow in between, so retry once.
  if (f.nvmlDeviceGetComputeRunningProcesses_v3 != nullptr && !lost) {
    std::vector<nvmlProcessInfo_t> infos(8);
    for (int attempt = 0; attempt < 3; ++attempt) {
      unsigned int n = static_cast<unsigned int>(infos.size());
      calls_.fetch_add(1, std::memory_order_relaxed);
      const nvmlReturn_t rc = f.nvmlDeviceGetComputeRunningProcesses_v3(device, &n, infos.data());
      if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
        infos.resize(n + 4);
        continue;
      }
      if (rc == NVML_ERROR_GPU_IS_LOST) lost = true;
      if (rc != NVML_SUCCESS) break;
      for (unsigned int i = 0; i < n; ++i) {
        ProcessUsage p{.pid = infos[i].pid, .used_memory_bytes = infos[i].usedGpuMemory};
        if (infos[i].gpuInstanceId != kNvmlNoInstance) p.gpu_instance_id = infos[i].gpuInstanceId;
        if (infos[i].computeInstanceId != kNvmlNoInstance) {
          p.compute_instance_id = infos[i].computeInstanceId;
        }
        s.processes.push_back(p);
      }
      break;
    }
  }
  if (lost) return GpuSample{.index = index, .lost = true};
  return s;
}

absl::StatusOr<Sample> NvmlAccelerator::TakeSample() {
  Sample sample{.time = clock_.Now()};
  unsigned int count = 0;
  GPUOP_RETURN_IF_ERROR(
      Call(lib_->fn().nvmlDeviceGetCount_v2, "nvmlDeviceGetCount_v2", -1, &count));
  for (unsigned int i = 0; i < count; ++i) {
    absl::StatusOr<nvmlDevice_t> device = Handle(static_cast<int>(i));
    if (!device.ok()) {
      // A GPU that fell off the bus may no longer hand out a handle.
      if (device.status().code() == absl::StatusCode::kUnavailable) {
        sample.gpus.push_back(GpuSample{.index = static_cast<int>(i), .lost = true});
      }
      // Any other error (NO_PERMISSION for a GPU this process may not open): that GPU has no
      // sample, the others do; discovery lists it as unavailable.
      continue;
    }
    sample.gpus.push_back(SampleGpu(static_cast<int>(i), *device));
  }
  return sample;
}

}  // namespace gpuop::hw
