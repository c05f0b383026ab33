#ifndef GPUOP_HW_NVML_NVML_FUNCTIONS_H_
#define GPUOP_HW_NVML_NVML_FUNCTIONS_H_

// Every NVML entry point gpuop resolves, as an X-macro: X(symbol, (parameter list)). All return
// nvmlReturn_t. The backend builds its dlsym table from this list, and the fake library checks at
// compile time that each of its exports has exactly this signature, so the two cannot drift.
// nvmlErrorString (which returns const char*) is handled separately.

#include "hw/nvml/nvml_abi.h"

// Without these the library is unusable.
#define GPUOP_NVML_REQUIRED_FUNCTIONS(X)                                       \
  X(nvmlInit_v2, (void))                                                       \
  X(nvmlShutdown, (void))                                                      \
  X(nvmlSystemGetDriverVersion, (char* version, unsigned int length))          \
  X(nvmlDeviceGetCount_v2, (unsigned int* count))                              \
  X(nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t* device)) \
  X(nvmlDeviceGetUUID, (nvmlDevice_t device, char* uuid, unsigned int length)) \
  X(nvmlDeviceGetName, (nvmlDevice_t device, char* name, unsigned int length)) \
  X(nvmlDeviceGetPciInfo_v3, (nvmlDevice_t device, nvmlPciInfo_t * pci))

// Older drivers or other products may lack these; a missing one disables what needs it.
#define GPUOP_NVML_OPTIONAL_FUNCTIONS(X)                                                           \
  X(nvmlSystemGetNVMLVersion, (char* version, unsigned int length))                                \
  X(nvmlSystemGetCudaDriverVersion, (int* version))                                                \
  X(nvmlDeviceGetHandleByUUID, (const char* uuid, nvmlDevice_t* device))                           \
  X(nvmlDeviceGetIndex, (nvmlDevice_t device, unsigned int* index))                                \
  X(nvmlDeviceGetMinorNumber, (nvmlDevice_t device, unsigned int* minor))                          \
  X(nvmlDeviceGetArchitecture, (nvmlDevice_t device, nvmlDeviceArchitecture_t * arch))             \
  X(nvmlDeviceGetCudaComputeCapability, (nvmlDevice_t device, int* major, int* minor))             \
  X(nvmlDeviceGetSerial, (nvmlDevice_t device, char* serial, unsigned int length))                 \
  X(nvmlDeviceGetNumaNodeId, (nvmlDevice_t device, unsigned int* node))                            \
  X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t * memory))                         \
  X(nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t device, nvmlMemory_v2_t * memory))                   \
  X(nvmlDeviceGetUtilizationRates, (nvmlDevice_t device, nvmlUtilization_t * utilization))         \
  X(nvmlDeviceGetEncoderUtilization,                                                               \
    (nvmlDevice_t device, unsigned int* utilization, unsigned int* sampling_period_us))            \
  X(nvmlDeviceGetDecoderUtilization,                                                               \
    (nvmlDevice_t device, unsigned int* utilization, unsigned int* sampling_period_us))            \
  X(nvmlDeviceGetTemperature, (nvmlDevice_t device, int sensor, unsigned int* temp))               \
  X(nvmlDeviceGetTemperatureThreshold, (nvmlDevice_t device, int threshold, unsigned int* temp))   \
  X(nvmlDeviceGetFieldValues, (nvmlDevice_t device, int count, nvmlFieldValue_t* values))          \
  X(nvmlDeviceGetPowerUsage, (nvmlDevice_t device, unsigned int* milliwatts))                      \
  X(nvmlDeviceGetTotalEnergyConsumption, (nvmlDevice_t device, unsigned long long* millijoules))   \
  X(nvmlDeviceGetPowerManagementLimit, (nvmlDevice_t device, unsigned int* milliwatts))            \
  X(nvmlDeviceGetPowerManagementLimitConstraints,                                                  \
    (nvmlDevice_t device, unsigned int* min_milliwatts, unsigned int* max_milliwatts))             \
  X(nvmlDeviceGetPowerManagementDefaultLimit, (nvmlDevice_t device, unsigned int* milliwatts))     \
  X(nvmlDeviceGetEnforcedPowerLimit, (nvmlDevice_t device, unsigned int* milliwatts))              \
  X(nvmlDeviceSetPowerManagementLimit, (nvmlDevice_t device, unsigned int milliwatts))             \
  X(nvmlDeviceGetComputeMode, (nvmlDevice_t device, nvmlComputeMode_t * mode))                     \
  X(nvmlDeviceSetComputeMode, (nvmlDevice_t device, nvmlComputeMode_t mode))                       \
  X(nvmlDeviceGetClockInfo, (nvmlDevice_t device, int type, unsigned int* mhz))                    \
  X(nvmlDeviceGetMaxClockInfo, (nvmlDevice_t device, int type, unsigned int* mhz))                 \
  X(nvmlDeviceGetCurrentClocksEventReasons, (nvmlDevice_t device, unsigned long long* reasons))    \
  X(nvmlDeviceGetPcieReplayCounter, (nvmlDevice_t device, unsigned int* value))                    \
  X(nvmlDeviceGetEccMode,                                                                          \
    (nvmlDevice_t device, nvmlEnableState_t * current, nvmlEnableState_t * pending))               \
  X(nvmlDeviceGetTotalEccErrors,                                                                   \
    (nvmlDevice_t device, int error_type, int counter_type, unsigned long long* count))            \
  X(nvmlDeviceGetRetiredPages,                                                                     \
    (nvmlDevice_t device, int cause, unsigned int* page_count, unsigned long long* addresses))     \
  X(nvmlDeviceGetRetiredPagesPendingStatus, (nvmlDevice_t device, nvmlEnableState_t * pending))    \
  X(nvmlDeviceGetRemappedRows,                                                                     \
    (nvmlDevice_t device, unsigned int* corrected, unsigned int* uncorrected,                      \
     unsigned int* pending, unsigned int* failure))                                                \
  X(nvmlDeviceGetComputeRunningProcesses_v3,                                                       \
    (nvmlDevice_t device, unsigned int* count, nvmlProcessInfo_t* infos))                          \
  X(nvmlDeviceGetMigMode, (nvmlDevice_t device, unsigned int* current, unsigned int* pending))     \
  X(nvmlDeviceSetMigMode, (nvmlDevice_t device, unsigned int mode, nvmlReturn_t* activation))      \
  X(nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t device, unsigned int* count))                    \
  X(nvmlDeviceGetMigDeviceHandleByIndex,                                                           \
    (nvmlDevice_t device, unsigned int index, nvmlDevice_t* mig_device))                           \
  X(nvmlDeviceGetDeviceHandleFromMigDeviceHandle,                                                  \
    (nvmlDevice_t mig_device, nvmlDevice_t * device))                                              \
  X(nvmlDeviceIsMigDeviceHandle, (nvmlDevice_t device, unsigned int* is_mig))                      \
  X(nvmlDeviceGetGpuInstanceId, (nvmlDevice_t device, unsigned int* id))                           \
  X(nvmlDeviceGetComputeInstanceId, (nvmlDevice_t device, unsigned int* id))                       \
  X(nvmlDeviceGetAttributes_v2, (nvmlDevice_t device, nvmlDeviceAttributes_t * attributes))        \
  X(nvmlDeviceGetGpuInstanceProfileInfoV,                                                          \
    (nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_v2_t* info))            \
  X(nvmlDeviceGetGpuInstancePossiblePlacements_v2,                                                 \
    (nvmlDevice_t device, unsigned int profile_id, nvmlGpuInstancePlacement_t* placements,         \
     unsigned int* count))                                                                         \
  X(nvmlDeviceGetGpuInstanceRemainingCapacity,                                                     \
    (nvmlDevice_t device, unsigned int profile_id, unsigned int* count))                           \
  X(nvmlDeviceCreateGpuInstance,                                                                   \
    (nvmlDevice_t device, unsigned int profile_id, nvmlGpuInstance_t* instance))                   \
  X(nvmlDeviceCreateGpuInstanceWithPlacement,                                                      \
    (nvmlDevice_t device, unsigned int profile_id, const nvmlGpuInstancePlacement_t* placement,    \
     nvmlGpuInstance_t* instance))                                                                 \
  X(nvmlGpuInstanceDestroy, (nvmlGpuInstance_t instance))                                          \
  X(nvmlDeviceGetGpuInstances, (nvmlDevice_t device, unsigned int profile_id,                      \
                                nvmlGpuInstance_t* instances, unsigned int* count))                \
  X(nvmlDeviceGetGpuInstanceById,                                                                  \
    (nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t* instance))                           \
  X(nvmlGpuInstanceGetInfo, (nvmlGpuInstance_t instance, nvmlGpuInstanceInfo_t * info))            \
  X(nvmlGpuInstanceGetComputeInstanceProfileInfoV,                                                 \
    (nvmlGpuInstance_t instance, unsigned int profile, unsigned int engine_profile,                \
     nvmlComputeInstanceProfileInfo_v2_t* info))                                                   \
  X(nvmlGpuInstanceGetComputeInstanceRemainingCapacity,                                            \
    (nvmlGpuInstance_t instance, unsigned int profile_id, unsigned int* count))                    \
  X(nvmlGpuInstanceCreateComputeInstance,                                                          \
    (nvmlGpuInstance_t instance, unsigned int profile_id, nvmlComputeInstance_t* compute))         \
  X(nvmlComputeInstanceDestroy, (nvmlComputeInstance_t compute))                                   \
  X(nvmlGpuInstanceGetComputeInstances, (nvmlGpuInstance_t instance, unsigned int profile_id,      \
                                         nvmlComputeInstance_t* computes, unsigned int* count))    \
  X(nvmlComputeInstanceGetInfo_v2,                                                                 \
    (nvmlComputeInstance_t compute, nvmlComputeInstanceInfo_t * info))                             \
  X(nvmlEventSetCreate, (nvmlEventSet_t * set))                                                    \
  X(nvmlDeviceGetSupportedEventTypes, (nvmlDevice_t device, unsigned long long* types))            \
  X(nvmlDeviceRegisterEvents, (nvmlDevice_t device, unsigned long long types, nvmlEventSet_t set)) \
  X(nvmlEventSetWait_v2, (nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeout_ms))    \
  X(nvmlEventSetFree, (nvmlEventSet_t set))                                                        \
  X(nvmlDeviceGetGpuFabricInfo, (nvmlDevice_t device, nvmlGpuFabricInfo_t * info))                 \
  X(nvmlDeviceGetNvLinkState, (nvmlDevice_t device, unsigned int link, nvmlEnableState_t* active)) \
  X(nvmlDeviceGetNvLinkRemotePciInfo_v2,                                                           \
    (nvmlDevice_t device, unsigned int link, nvmlPciInfo_t* pci))                                  \
  X(nvmlDeviceGetTopologyCommonAncestor, (nvmlDevice_t first, nvmlDevice_t second, int* level))    \
  X(nvmlGpmQueryDeviceSupport, (nvmlDevice_t device, nvmlGpmSupport_t * support))                  \
  X(nvmlGpmSampleAlloc, (nvmlGpmSample_t * sample))                                                \
  X(nvmlGpmSampleFree, (nvmlGpmSample_t sample))                                                   \
  X(nvmlGpmSampleGet, (nvmlDevice_t device, nvmlGpmSample_t sample))                               \
  X(nvmlGpmMigSampleGet,                                                                           \
    (nvmlDevice_t device, unsigned int gpu_instance_id, nvmlGpmSample_t sample))                   \
  X(nvmlGpmMetricsGet, (nvmlGpmMetricsGet_t * metrics))

// nvmlErrorString: const char* nvmlErrorString(nvmlReturn_t result);
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t);

#endif  // GPUOP_HW_NVML_NVML_FUNCTIONS_H_
