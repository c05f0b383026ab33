// Memory health (ECC, page retirement, row remapping) and topology (NVLink, PCIe).

#include <algorithm>

#include "test/fakes/nvml/exports.h"

using gpuop::fakenvml::DeviceRef;
using gpuop::fakenvml::Field;
using gpuop::fakenvml::GpuState;
using gpuop::fakenvml::LinkSpec;
using gpuop::fakenvml::Machine;
using gpuop::fakenvml::WithGpu;

namespace {

// Ampere and later remap rows instead of retiring pages.
bool RetiresPages(const GpuState& gpu) {
  return gpu.spec.ecc_supported && gpu.spec.architecture < NVML_DEVICE_ARCH_AMPERE;
}

bool RemapsRows(const GpuState& gpu) {
  return gpu.spec.ecc_supported && gpu.spec.architecture >= NVML_DEVICE_ARCH_AMPERE;
}

// The link, or the reason there is none: NOT_SUPPORTED without NVLink, INVALID_ARGUMENT past the
// last link.
nvmlReturn_t FindLink(const GpuState& gpu, unsigned int link, const LinkSpec** out) {
  if (gpu.spec.links.empty()) return NVML_ERROR_NOT_SUPPORTED;
  if (link >= gpu.spec.links.size()) return NVML_ERROR_INVALID_ARGUMENT;
  *out = &gpu.spec.links[link];
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t* current,
                                  nvmlEnableState_t* pending) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (current == nullptr || pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!gpu.spec.ecc_supported) return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = gpu.spec.ecc_enabled ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int error_type, int counter_type,
                                         unsigned long long* count) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    const bool valid_error = error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED ||
                             error_type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED;
    const bool valid_counter =
        counter_type == NVML_VOLATILE_ECC || counter_type == NVML_AGGREGATE_ECC;
    if (count == nullptr || !valid_error || !valid_counter) return NVML_ERROR_INVALID_ARGUMENT;
    if (!gpu.spec.ecc_enabled) return NVML_ERROR_NOT_SUPPORTED;
    const bool corrected = error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED;
    const bool volatile_count = counter_type == NVML_VOLATILE_ECC;
    const Field field =
        corrected
            ? (volatile_count ? Field::kEccCorrectedVolatile : Field::kEccCorrectedAggregate)
            : (volatile_count ? Field::kEccUncorrectedVolatile : Field::kEccUncorrectedAggregate);
    *count = static_cast<unsigned long long>(gpu.value(field));
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, int cause, unsigned int* page_count,
                                       unsigned long long* addresses) {
  return WithGpu(device, [&](Machine& machine, GpuState& gpu) -> nvmlReturn_t {
    const bool valid_cause = cause == NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS ||
                             cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR;
    if (page_count == nullptr || !valid_cause) return NVML_ERROR_INVALID_ARGUMENT;
    if (!RetiresPages(gpu)) return NVML_ERROR_NOT_SUPPORTED;
    const std::vector<unsigned long long> pages =
        machine.RetiredPages(gpu, cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR);
    const auto needed = static_cast<unsigned int>(pages.size());
    if (*page_count < needed) {
      *page_count = needed;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (needed > 0 && addresses == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    std::copy(pages.begin(), pages.end(), addresses);
    *page_count = needed;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                    nvmlEnableState_t* pending) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!RetiresPages(gpu)) return NVML_ERROR_NOT_SUPPORTED;
    *pending =
        gpu.value(Field::kRetiredPagesPending) != 0 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrected,
                                       unsigned int* uncorrected, unsigned int* pending,
                                       unsigned int* failure) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (corrected == nullptr || uncorrected == nullptr || pending == nullptr ||
        failure == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    // nvml.h: on MIG-enabled GPUs with active instances, querying the number of remapped rows
    // is not supported.
    if (!RemapsRows(gpu) || (gpu.mig_enabled && !gpu.gpu_instances.empty())) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
    *corrected = static_cast<unsigned int>(gpu.value(Field::kRemappedRowsCorrected));
    *uncorrected = static_cast<unsigned int>(gpu.value(Field::kRemappedRowsUncorrected));
    *pending = gpu.value(Field::kRemappedRowsPending) != 0 ? 1 : 0;
    *failure = gpu.value(Field::kRemappedRowsFailure) != 0 ? 1 : 0;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* active) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (active == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const LinkSpec* spec = nullptr;
    if (const nvmlReturn_t result = FindLink(gpu, link, &spec); result != NVML_SUCCESS) {
      return result;
    }
    *active = spec->active ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                 nvmlPciInfo_t* pci) {
  return WithGpu(device, [&](Machine& machine, GpuState& gpu) -> nvmlReturn_t {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const LinkSpec* spec = nullptr;
    if (const nvmlReturn_t result = FindLink(gpu, link, &spec); result != NVML_SUCCESS) {
      return result;
    }
    if (!spec->active) return NVML_ERROR_NOT_SUPPORTED;
    *pci = machine.LinkRemotePciInfo(*spec);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t first, nvmlDevice_t second,
                                                 int* level) {
  return WithGpu(first, [&](Machine& machine, GpuState& gpu) -> nvmlReturn_t {
    DeviceRef other;
    if (const nvmlReturn_t result = machine.Resolve(second, &other); result != NVML_SUCCESS) {
      return result;
    }
    if (other.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    if (level == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *level = machine.CommonAncestor(gpu, *other.gpu);
    return NVML_SUCCESS;
  });
}

}  // extern "C"
