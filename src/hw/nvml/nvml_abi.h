#ifndef GPUOP_HW_NVML_NVML_ABI_H_
#define GPUOP_HW_NVML_NVML_ABI_H_

// The subset of the NVML C ABI (libnvidia-ml.so.1, API version 13) that gpuop uses, declared
// here rather than taken from nvml.h so that nothing links against NVML: the backend resolves
// every symbol with dlsym, and the fake library in test/fakes/nvml exports the same symbols.
// Layouts are LP64 and must match the real library byte for byte.

#include <cstddef>
#include <cstdint>

extern "C" {

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlGpuInstance_st* nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st* nvmlComputeInstance_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;
typedef int nvmlEnableState_t;
typedef unsigned int nvmlDeviceArchitecture_t;
// nvml.h's nvmlComputeMode_t is an enum (int-sized).
typedef int nvmlComputeMode_t;

// Return codes.
enum : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_UNKNOWN = 999,
};

// Buffer sizes.
enum : unsigned int {
  NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96,
  NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96,
  NVML_DEVICE_SERIAL_BUFFER_SIZE = 30,
  NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80,
  NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE = 80,
  NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32,
  NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16,
};

// Versioned structs carry sizeof(struct) | (version << 24) in their first member.
constexpr unsigned int NvmlStructVersion(std::size_t size, unsigned int version) {
  return static_cast<unsigned int>(size) | (version << 24);
}

typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;
constexpr unsigned int nvmlMemory_v2 = NvmlStructVersion(sizeof(nvmlMemory_v2_t), 2);

typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

typedef struct {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;     // device id << 16 | vendor id
  unsigned int pciSubSystemId;  // subsystem device << 16 | subsystem vendor
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

typedef struct {
  unsigned int start;
  unsigned int size;
} nvmlGpuInstancePlacement_t;

typedef struct {
  unsigned int version;
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
  char name[96];
} nvmlGpuInstanceProfileInfo_v2_t;
constexpr unsigned int nvmlGpuInstanceProfileInfo_v2 =
    NvmlStructVersion(sizeof(nvmlGpuInstanceProfileInfo_v2_t), 2);

typedef struct {
  nvmlDevice_t device;
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct {
  unsigned int start;
  unsigned int size;
} nvmlComputeInstancePlacement_t;

typedef struct {
  unsigned int version;
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  char name[96];
} nvmlComputeInstanceProfileInfo_v2_t;
constexpr unsigned int nvmlComputeInstanceProfileInfo_v2 =
    NvmlStructVersion(sizeof(nvmlComputeInstanceProfileInfo_v2_t), 2);

typedef struct {
  nvmlDevice_t device;
  nvmlGpuInstance_t gpuInstance;
  unsigned int id;
  unsigned int profileId;
  nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

// nvmlDeviceGetAttributes_v2: what one MIG device owns of its GPU.
typedef struct {
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  unsigned int gpuInstanceSliceCount;
  unsigned int computeInstanceSliceCount;
  unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

// nvmlDeviceGetGpuFabricInfo: the GPU's place in a multi-node NVLink fabric (GB200 NVL72 and
// the like). `status` is the registration's own result; the ids mean something only once
// `state` is NVML_GPU_FABRIC_STATE_COMPLETED.
enum : unsigned int { NVML_GPU_FABRIC_UUID_LEN = 16 };
typedef unsigned char nvmlGpuFabricState_t;
enum : unsigned char {
  NVML_GPU_FABRIC_STATE_NOT_SUPPORTED = 0,
  NVML_GPU_FABRIC_STATE_NOT_STARTED = 1,
  NVML_GPU_FABRIC_STATE_IN_PROGRESS = 2,
  NVML_GPU_FABRIC_STATE_COMPLETED = 3,
};
typedef struct {
  unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
  nvmlReturn_t status;
  unsigned int cliqueId;
  nvmlGpuFabricState_t state;
} nvmlGpuFabricInfo_t;
// nvmlDeviceGetGpuFabricInfoV: the same with the fabric's health. Version 2 ends after
// healthMask (36 bytes), version 3 adds healthSummary (40 bytes); the caller sets `version`.
typedef struct {
  unsigned int version;
  unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
  nvmlReturn_t status;
  unsigned int cliqueId;
  nvmlGpuFabricState_t state;
  unsigned int healthMask;  // NVML_GPU_FABRIC_HEALTH_MASK_* bit fields
  unsigned char healthSummary;
} nvmlGpuFabricInfo_v3_t;
typedef nvmlGpuFabricInfo_v3_t nvmlGpuFabricInfoV_t;
constexpr unsigned int nvmlGpuFabricInfo_v2 =
    NvmlStructVersion(offsetof(nvmlGpuFabricInfo_v3_t, healthSummary), 2);
constexpr unsigned int nvmlGpuFabricInfo_v3 = NvmlStructVersion(sizeof(nvmlGpuFabricInfo_v3_t), 3);
enum : unsigned char {
  NVML_GPU_FABRIC_HEALTH_SUMMARY_NOT_SUPPORTED = 0,
  NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY = 1,
  NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY = 2,
  NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY = 3,
};

typedef union {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  signed int siVal;
} nvmlValue_t;

typedef struct {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;  // nvmlValueType_t
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;

enum : int {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
};

// Field ids for nvmlDeviceGetFieldValues.
enum : unsigned int {
  NVML_FI_DEV_MEMORY_TEMP = 82,
  // The action the driver says the GPU needs (nvmlDeviceGpuRecoveryAction_t: NONE 0, GPU_RESET
  // 1, NODE_REBOOT 2, DRAIN_P2P 3, DRAIN_AND_RESET 4); XID 154 announces a change of it.
  NVML_FI_DEV_GET_GPU_RECOVERY_ACTION = 230,
  // NVLink traffic since the driver loaded, in KiB, payload (DATA) or with the protocol
  // headers (RAW); scopeId is a link, or UINT_MAX for the sum over all links.
  NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138,
  NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139,
  NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX = 140,
  NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_RX = 141,
};
constexpr unsigned int kNvmlAllLinks = 0xFFFFFFFFu;

// GPU performance monitoring (GPM, Hopper and newer): a metric is computed from two samples of
// the GPU's counters taken some time apart.
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;

enum : unsigned int {
  NVML_GPM_METRIC_GRAPHICS_UTIL = 1,     // % of time a compute/graphics context was active
  NVML_GPM_METRIC_SM_UTIL = 2,           // % of SMs busy
  NVML_GPM_METRIC_SM_OCCUPANCY = 3,      // % of warps active of the theoretical maximum
  NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,   // % of time the SMs ran any tensor operation
  NVML_GPM_METRIC_DRAM_BW_UTIL = 10,     // % of the theoretical DRAM bandwidth used
  NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20,  // PCIe traffic from the GPU, MiB/s
  NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,  // PCIe traffic to the GPU, MiB/s
};

typedef struct {
  char* shortName;
  char* longName;
  char* unit;
} nvmlGpmMetricInfo_t;

typedef struct {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  nvmlGpmMetricInfo_t metricInfo;
} nvmlGpmMetric_t;

// nvml.h sizes metrics[] with NVML_GPM_METRIC_MAX, which grows between releases; the library
// reads and writes only numMetrics entries, so a shorter array is compatible as long as
// numMetrics fits it.
constexpr unsigned int kGpmMetricsCapacity = 16;
constexpr unsigned int NVML_GPM_METRICS_GET_VERSION = 1;
typedef struct {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[kGpmMetricsCapacity];
} nvmlGpmMetricsGet_t;

constexpr unsigned int NVML_GPM_SUPPORT_VERSION = 1;
typedef struct {
  unsigned int version;
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

// Enum values.
enum : int { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };
enum : int { NVML_TEMPERATURE_GPU = 0 };
enum : int {
  NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
  NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
  NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2,
  NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3,
};
enum : int { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };
enum : int { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum : int { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
enum : int {
  NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
};
enum : int {
  NVML_TOPOLOGY_INTERNAL = 0,
  NVML_TOPOLOGY_SINGLE = 10,
  NVML_TOPOLOGY_MULTIPLE = 20,
  NVML_TOPOLOGY_HOSTBRIDGE = 30,
  NVML_TOPOLOGY_NODE = 40,
  NVML_TOPOLOGY_SYSTEM = 50,
};
enum : int { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };
enum : unsigned int {
  NVML_DEVICE_ARCH_KEPLER = 2,
  NVML_DEVICE_ARCH_MAXWELL = 3,
  NVML_DEVICE_ARCH_PASCAL = 4,
  NVML_DEVICE_ARCH_VOLTA = 5,
  NVML_DEVICE_ARCH_TURING = 6,
  NVML_DEVICE_ARCH_AMPERE = 7,
  NVML_DEVICE_ARCH_ADA = 8,
  NVML_DEVICE_ARCH_HOPPER = 9,
  NVML_DEVICE_ARCH_BLACKWELL = 10,
  NVML_DEVICE_ARCH_RUBIN = 13,
  NVML_DEVICE_ARCH_UNKNOWN = 0xFFFFFFFFu,
};
enum : int { NVML_DEVICE_MIG_DISABLE = 0, NVML_DEVICE_MIG_ENABLE = 1 };
enum : int {
  NVML_COMPUTEMODE_DEFAULT = 0,
  NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,  // deprecated
  NVML_COMPUTEMODE_PROHIBITED = 2,
  NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
};
enum : unsigned int {
  NVML_GPU_INSTANCE_PROFILE_1_SLICE = 0,
  NVML_GPU_INSTANCE_PROFILE_2_SLICE = 1,
  NVML_GPU_INSTANCE_PROFILE_3_SLICE = 2,
  NVML_GPU_INSTANCE_PROFILE_4_SLICE = 3,
  NVML_GPU_INSTANCE_PROFILE_7_SLICE = 4,
  NVML_GPU_INSTANCE_PROFILE_8_SLICE = 5,
  NVML_GPU_INSTANCE_PROFILE_6_SLICE = 6,
  NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 = 7,
  NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 = 8,
  NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 = 9,
  NVML_GPU_INSTANCE_PROFILE_COUNT = 0x12,
};
enum : unsigned int {
  NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE = 0,
  NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE = 4,
  NVML_COMPUTE_INSTANCE_PROFILE_COUNT = 9,
};
enum : unsigned int { NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = 0 };

// Event type bits.
constexpr unsigned long long nvmlEventTypeSingleBitEccError = 0x1ULL;
constexpr unsigned long long nvmlEventTypeDoubleBitEccError = 0x2ULL;
constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x8ULL;
constexpr unsigned long long nvmlEventTypeGpuUnavailableError = 0x4000ULL;

// Sentinel for "not a MIG instance" in process and event records.
constexpr unsigned int kNvmlNoInstance = 0xFFFFFFFFu;

static_assert(sizeof(nvmlMemory_t) == 24);
static_assert(sizeof(nvmlMemory_v2_t) == 40);
static_assert(sizeof(nvmlPciInfo_t) == 68);
static_assert(sizeof(nvmlProcessInfo_t) == 24);
static_assert(sizeof(nvmlEventData_t) == 32);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152);
static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24);
static_assert(sizeof(nvmlComputeInstanceProfileInfo_v2_t) == 136);
static_assert(sizeof(nvmlComputeInstanceInfo_t) == 32);
static_assert(sizeof(nvmlFieldValue_t) == 40);
static_assert(sizeof(nvmlDeviceAttributes_t) == 40);
static_assert(sizeof(nvmlGpuFabricInfo_t) == 28);
static_assert(sizeof(nvmlGpmMetric_t) == 40);
static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24);
static_assert(nvmlMemory_v2 == 0x02000028u);
static_assert(nvmlGpuInstanceProfileInfo_v2 == 0x02000098u);
static_assert(nvmlComputeInstanceProfileInfo_v2 == 0x02000088u);
static_assert(nvmlGpuFabricInfo_v2 == 0x02000024u);
static_assert(nvmlGpuFabricInfo_v3 == 0x03000028u);

}  // extern "C"

#endif  // GPUOP_HW_NVML_NVML_ABI_H_
