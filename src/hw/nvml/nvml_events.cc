// NvmlAccelerator::WaitEvents: XID, ECC and GPU-lost events through an NVML event set.
#include <cstring>
#include <utility>

#include "common/status_macros.h"
#include "hw/nvml/nvml_accelerator.h"

namespace gpuop::hw {
namespace {

constexpr unsigned long long kWantedEvents =
    nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError |
    nvmlEventTypeSingleBitEccError | nvmlEventTypeGpuUnavailableError;

}  // namespace

absl::StatusOr<nvmlEventSet_t> NvmlAccelerator::EventSet() {
  if (event_set_ != nullptr) return event_set_;
  const NvmlFunctions& f = lib_->fn();
  if (f.nvmlEventSetCreate == nullptr || f.nvmlDeviceRegisterEvents == nullptr ||
      f.nvmlEventSetWait_v2 == nullptr) {
    return absl::UnimplementedError(absl::StrCat("NVML events: not in ", lib_->path()));
  }
  unsigned int count = 0;
  GPUOP_RETURN_IF_ERROR(Call(f.nvmlDeviceGetCount_v2, "nvmlDeviceGetCount_v2", -1, &count));
  nvmlEventSet_t set = nullptr;
  GPUOP_RETURN_IF_ERROR(Call(f.nvmlEventSetCreate, "nvmlEventSetCreate", -1, &set));
  // Each GPU on its own: one without a handle, or whose registration fails, is left out (its
  // events are missed, and discovery reports it) rather than leaving the others unwatched.
  std::vector<EventDevice> devices;
  for (unsigned int i = 0; i < count; ++i) {
    const int index = static_cast<int>(i);
    absl::StatusOr<nvmlDevice_t> device = Handle(index);
    if (!device.ok()) continue;
    // Only what the device supports; old devices support none of it, which is not an error.
    unsigned long long supported = 0;
    if (f.nvmlDeviceGetSupportedEventTypes != nullptr &&
        f.nvmlDeviceGetSupportedEventTypes(*device, &supported) != NVML_SUCCESS) {
      continue;
    }
    const unsigned long long types = kWantedEvents & supported;
    if (types == 0) continue;
    EventDevice registered{.device = *device, .index = index};
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {0};
    if (f.nvmlDeviceGetUUID(*device, uuid, sizeof(uuid)) == NVML_SUCCESS) {
      registered.uuid = std::string(uuid, strnlen(uuid, sizeof(uuid)));
    }
    calls_.fetch_add(1, std::memory_order_relaxed);
    const nvmlReturn_t rc = f.nvmlDeviceRegisterEvents(*device, types, set);
    if (rc == NVML_ERROR_NOT_SUPPORTED) continue;  // too old for events: not a failure
    if (rc != NVML_SUCCESS) {
      // NVIDIA's device plugin marks such a GPU unhealthy: its XIDs would go unseen.
      unwatched_.push_back(
          {.kind = HardwareEvent::Kind::kUnwatched,
           .gpu_index = index,
           .gpu_uuid = registered.uuid,
           .time = clock_.Now(),
           .reason = absl::StrCat("nvmlDeviceRegisterEvents: ", lib_->ErrorString(rc))});
      continue;
    }
    devices.push_back(std::move(registered));
  }
  event_set_ = set;
  event_devices_ = std::move(devices);
  return event_set_;
}

absl::StatusOr<std::vector<HardwareEvent>> NvmlAccelerator::WaitEvents(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  GPUOP_ASSIGN_OR_RETURN(nvmlEventSet_t set, EventSet());
  const NvmlFunctions& f = lib_->fn();
  std::vector<HardwareEvent> events = std::exchange(unwatched_, {});
  if (!events.empty()) return events;
  unsigned int wait_ms =
      static_cast<unsigned int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(timeout)));
  // Block for the first event, then take whatever else is already queued.
  while (true) {
    nvmlEventData_t data{};
    calls_.fetch_add(1, std::memory_order_relaxed);
    const nvmlReturn_t rc = f.nvmlEventSetWait_v2(set, &data, wait_ms);
    if (rc == NVML_ERROR_TIMEOUT) break;
    if (rc != NVML_SUCCESS) {
      if (!events.empty()) break;
      return lib_->Check(rc, "nvmlEventSetWait_v2", "event set");
    }
    // Attributed by the handle registered; an event of no GPU gpuop knows stays unattributed
    // (index -1, no UUID), never charged to GPU 0.
    HardwareEvent event{.gpu_index = -1, .time = clock_.Now()};
    for (const EventDevice& registered : event_devices_) {
      if (registered.device != data.device) continue;
      event.gpu_index = registered.index;
      event.gpu_uuid = registered.uuid;
    }
    if (event.gpu_uuid.empty() && data.device != nullptr) {
      char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {0};
      if (f.nvmlDeviceGetUUID(data.device, uuid, sizeof(uuid)) == NVML_SUCCESS) {
        event.gpu_uuid = std::string(uuid, strnlen(uuid, sizeof(uuid)));
      }
    }
    if (data.eventType & nvmlEventTypeXidCriticalError) {
      event.kind = HardwareEvent::Kind::kXid;
      event.xid = data.eventData;
    } else if (data.eventType & nvmlEventTypeDoubleBitEccError) {
      event.kind = HardwareEvent::Kind::kDoubleBitEcc;
    } else if (data.eventType & nvmlEventTypeSingleBitEccError) {
      event.kind = HardwareEvent::Kind::kSingleBitEcc;
    } else if (data.eventType & nvmlEventTypeGpuUnavailableError) {
      event.kind = HardwareEvent::Kind::kGpuLost;
    } else {
      continue;
    }
    if (data.gpuInstanceId != kNvmlNoInstance) event.gpu_instance_id = data.gpuInstanceId;
    if (data.computeInstanceId != kNvmlNoInstance) {
      event.compute_instance_id = data.computeInstanceId;
    }
    events.push_back(std::move(event));
    wait_ms = 0;
  }
  return events;
}

}  // namespace gpuop::hw
