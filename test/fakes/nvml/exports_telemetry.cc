// Telemetry and power control of a whole GPU. MIG devices answer NOT_SUPPORTED, as on real
// hardware.

#include <algorithm>
#include <cmath>

#include <sys/time.h>

#include "test/fakes/nvml/exports.h"

using gpuop::fakenvml::Field;
using gpuop::fakenvml::GpuState;
using gpuop::fakenvml::Machine;
using gpuop::fakenvml::WithGpu;

namespace {

// The sampling period NVML reports with encoder and decoder utilisation, in microseconds.
constexpr unsigned int kSamplingPeriodUs = 1000000;

unsigned int Unsigned(double value) {
  return static_cast<unsigned int>(std::clamp(std::round(value), 0.0, 4294967295.0));
}

// `where`: the export that calls, whose name injected errors go by (call_errors.h).
nvmlReturn_t Percent(nvmlDevice_t device, Field field, unsigned int* utilization,
                     unsigned int* sampling_period_us,
                     std::source_location where = std::source_location::current()) {
  return WithGpu(
      device,
      [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
        if (utilization == nullptr || sampling_period_us == nullptr) {
          return NVML_ERROR_INVALID_ARGUMENT;
        }
        *utilization = Unsigned(gpu.value(field));
        *sampling_period_us = kSamplingPeriodUs;
        return NVML_SUCCESS;
      },
      where);
}

// Reads one of the power-management numbers, in milliwatts.
template <typename Read>
nvmlReturn_t PowerLimit(nvmlDevice_t device, unsigned int* milliwatts, Read read,
                        std::source_location where = std::source_location::current()) {
  return WithGpu(
      device,
      [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
        if (milliwatts == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        if (!gpu.spec.power) return NVML_ERROR_NOT_SUPPORTED;
        *milliwatts = read(gpu);
        return NVML_SUCCESS;
      },
      where);
}

bool IsClockType(int type) { return type >= NVML_CLOCK_GRAPHICS && type <= NVML_CLOCK_VIDEO; }

long long NowMicros() {
  timeval now{};
  gettimeofday(&now, nullptr);
  return static_cast<long long>(now.tv_sec) * 1000000 + now.tv_usec;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // nvml.h: "On MIG-enabled GPUs, querying device utilization rates is not currently
    // supported."
    if (gpu.mig_enabled) return NVML_ERROR_NOT_SUPPORTED;
    utilization->gpu = Unsigned(gpu.value(Field::kGpuUtil));
    utilization->memory = Unsigned(gpu.value(Field::kMemoryUtil));
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                             unsigned int* sampling_period_us) {
  return Percent(device, Field::kEncoderUtil, utilization, sampling_period_us);
}

nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                             unsigned int* sampling_period_us) {
  return Percent(device, Field::kDecoderUtil, utilization, sampling_period_us);
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor, unsigned int* temp) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (temp == nullptr || sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    *temp = Unsigned(gpu.value(Field::kTemperature));
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device, int threshold,
                                               unsigned int* temp) {
  constexpr int kLastThreshold = 7;  // NVML_TEMPERATURE_THRESHOLD_GPS_CURR
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (temp == nullptr || threshold < 0 || threshold > kLastThreshold) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (!gpu.spec.thermal || threshold > NVML_TEMPERATURE_THRESHOLD_GPU_MAX) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
    const auto& thermal = *gpu.spec.thermal;
    const unsigned int values[] = {thermal.shutdown_c, thermal.slowdown_c, thermal.memory_max_c,
                                   thermal.gpu_max_c};
    *temp = values[threshold];
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int count, nvmlFieldValue_t* values) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (count < 0 || (count > 0 && values == nullptr)) return NVML_ERROR_INVALID_ARGUMENT;
    const long long now = NowMicros();
    for (int i = 0; i < count; ++i) {
      nvmlFieldValue_t& value = values[i];
      value.timestamp = now;
      value.latencyUsec = 0;
      if (value.fieldId == NVML_FI_DEV_MEMORY_TEMP) {
        value.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        value.value.uiVal = Unsigned(gpu.value(Field::kMemoryTemperature));
        value.nvmlReturn = NVML_SUCCESS;
      } else if (value.fieldId == NVML_FI_DEV_GET_GPU_RECOVERY_ACTION) {
        value.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        value.value.uiVal = Unsigned(gpu.value(Field::kRecoveryAction));
        value.nvmlReturn = NVML_SUCCESS;
      } else if (value.fieldId >= NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX &&
                 value.fieldId <= NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_RX) {
        // The scenario's traffic is the links' sum, headers included; the payload is taken as
        // 15/16 of it. Per-link scopes are not modelled.
        const bool tx = value.fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX ||
                        value.fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX;
        const bool raw = value.fieldId >= NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX;
        if (gpu.spec.links.empty() || value.scopeId != kNvmlAllLinks) {
          value.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
          continue;
        }
        const double kib = gpu.value(tx ? Field::kNvlinkRawTxKib : Field::kNvlinkRawRxKib);
        value.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        value.value.ullVal = static_cast<unsigned long long>(raw ? kib : kib * 15 / 16);
        value.nvmlReturn = NVML_SUCCESS;
      } else {
        value.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      }
    }
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* milliwatts) {
  return WithGpu(device, [&](Machine& machine, GpuState& gpu) -> nvmlReturn_t {
    if (milliwatts == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *milliwatts = machine.PowerUsageMw(gpu);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                 unsigned long long* millijoules) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (millijoules == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (gpu.spec.architecture < NVML_DEVICE_ARCH_VOLTA) return NVML_ERROR_NOT_SUPPORTED;
    *millijoules = static_cast<unsigned long long>(gpu.energy_mj);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int* milliwatts) {
  return PowerLimit(device, milliwatts, [](const GpuState& gpu) { return gpu.power_limit_mw; });
}

// nvml.h: the limit the GPU enforces, which can be below the management limit (another cap).
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* milliwatts) {
  return PowerLimit(device, milliwatts, &Machine::EnforcedPowerLimitMw);
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                      unsigned int* milliwatts) {
  return PowerLimit(device, milliwatts,
                    [](const GpuState& gpu) { return gpu.spec.power->default_mw; });
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                          unsigned int* min_milliwatts,
                                                          unsigned int* max_milliwatts) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (min_milliwatts == nullptr || max_milliwatts == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (!gpu.spec.power) return NVML_ERROR_NOT_SUPPORTED;
    *min_milliwatts = gpu.spec.power->min_mw;
    *max_milliwatts = gpu.spec.power->max_mw;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t device, unsigned int milliwatts) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (!gpu.spec.power) return NVML_ERROR_NOT_SUPPORTED;
    if (milliwatts < gpu.spec.power->min_mw || milliwatts > gpu.spec.power->max_mw) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    gpu.power_limit_mw = milliwatts;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t* mode) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *mode = gpu.compute_mode;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, nvmlComputeMode_t mode) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    // EXCLUSIVE_THREAD is gone from current drivers.
    if (mode == NVML_COMPUTEMODE_EXCLUSIVE_THREAD) return NVML_ERROR_NOT_SUPPORTED;
    if (mode != NVML_COMPUTEMODE_DEFAULT && mode != NVML_COMPUTEMODE_PROHIBITED &&
        mode != NVML_COMPUTEMODE_EXCLUSIVE_PROCESS) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    gpu.compute_mode = mode;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int* mhz) {
  return WithGpu(device, [&](Machine& machine, GpuState& gpu) -> nvmlReturn_t {
    if (mhz == nullptr || !IsClockType(type)) return NVML_ERROR_INVALID_ARGUMENT;
    if (Machine::MaxClockMhz(gpu, type) == 0) return NVML_ERROR_NOT_SUPPORTED;
    *mhz = machine.ClockMhz(gpu, type);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, int type, unsigned int* mhz) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (mhz == nullptr || !IsClockType(type)) return NVML_ERROR_INVALID_ARGUMENT;
    if (Machine::MaxClockMhz(gpu, type) == 0) return NVML_ERROR_NOT_SUPPORTED;
    *mhz = Machine::MaxClockMhz(gpu, type);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long* reasons) {
  return WithGpu(device, [&](Machine& machine, GpuState& gpu) -> nvmlReturn_t {
    if (reasons == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *reasons = machine.ClockEventReasons(gpu);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (value == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *value = Unsigned(gpu.value(Field::kPcieReplay));
    return NVML_SUCCESS;
  });
}

}  // extern "C"
