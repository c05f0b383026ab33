#include "hw/model_json.h"

#include "absl/time/time.h"

namespace gpuop::hw {
namespace {

using nlohmann::json;

template <typename T>
void Put(json& out, const char* key, const std::optional<T>& value) {
  if (value.has_value()) out[key] = *value;
}

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime(absl::RFC3339_full, t, absl::UTCTimeZone());
}

}  // namespace

json ToJson(const Gpu& gpu) {
  json out = {{"vendor", VendorName(gpu.vendor)},
              {"index", gpu.index},
              {"uuid", gpu.uuid},
              {"pciBusId", gpu.pci_bus_id},
              {"product", gpu.product},
              {"architecture", gpu.architecture},
              {"memoryBytes", gpu.memory_bytes},
              {"deviceNodes", gpu.device_nodes},
              {"migCapable", gpu.mig_capable}};
  if (gpu.compute_major > 0) {
    out["computeCapability"] =
        std::to_string(gpu.compute_major) + "." + std::to_string(gpu.compute_minor);
  }
  Put(out, "numaNode", gpu.numa_node);
  Put(out, "minorNumber", gpu.minor_number);
  if (!gpu.serial.empty()) out["serial"] = gpu.serial;
  if (gpu.mig_capable) {
    out["migEnabled"] = gpu.mig_enabled;
    if (gpu.mig_pending_change) out["migPendingChange"] = true;
    json profiles = json::array();
    for (const auto& p : gpu.mig_profiles) {
      profiles.push_back({{"name", p.name},
                          {"id", p.id},
                          {"sliceCount", p.slice_count},
                          {"instanceCount", p.instance_count},
                          {"memoryBytes", p.memory_bytes}});
    }
    out["migProfiles"] = profiles;
    json devices = json::array();
    for (const auto& m : gpu.mig_devices) {
      devices.push_back({{"uuid", m.uuid},
                         {"profile", m.profile},
                         {"gpuInstanceId", m.gpu_instance_id},
                         {"computeInstanceId", m.compute_instance_id},
                         {"placement", {{"start", m.placement_start}, {"size", m.placement_size}}},
                         {"memoryBytes", m.memory_bytes}});
    }
    out["migDevices"] = devices;
  }
  json links = json::array();
  for (const auto& l : gpu.links) {
    json link = {{"peer", l.peer_index}, {"kind", LinkKindName(l.kind)}};
    if (l.fabric_links > 0) link["fabricLinks"] = l.fabric_links;
    links.push_back(link);
  }
  out["links"] = links;
  return out;
}

json ToJson(const Inventory& inventory) {
  json gpus = json::array();
  for (const auto& g : inventory.gpus) gpus.push_back(ToJson(g));
  json out = {{"driverVersion", inventory.driver_version}, {"gpus", gpus}};
  if (!inventory.unavailable.empty()) {
    json unavailable = json::array();
    for (const UnavailableGpu& gpu : inventory.unavailable) {
      unavailable.push_back({{"index", gpu.index}, {"reason", gpu.reason}});
    }
    out["unavailable"] = std::move(unavailable);
  }
  if (inventory.cuda_driver_version > 0) {
    out["cudaDriverVersion"] = std::to_string(inventory.cuda_driver_version / 1000) + "." +
                               std::to_string(inventory.cuda_driver_version % 1000 / 10);
  }
  return out;
}

json ToJson(const GpuSample& s) {
  json out = {{"index", s.index}};
  if (s.lost) {
    out["lost"] = true;
    return out;
  }
  Put(out, "gpuUtilizationPercent", s.gpu_utilization_percent);
  Put(out, "memoryUtilizationPercent", s.memory_utilization_percent);
  Put(out, "encoderUtilizationPercent", s.encoder_utilization_percent);
  Put(out, "decoderUtilizationPercent", s.decoder_utilization_percent);
  Put(out, "memoryUsedBytes", s.memory_used_bytes);
  Put(out, "memoryFreeBytes", s.memory_free_bytes);
  Put(out, "memoryReservedBytes", s.memory_reserved_bytes);
  Put(out, "temperatureCelsius", s.temperature_celsius);
  Put(out, "memoryTemperatureCelsius", s.memory_temperature_celsius);
  Put(out, "slowdownTemperatureCelsius", s.slowdown_temperature_celsius);
  Put(out, "shutdownTemperatureCelsius", s.shutdown_temperature_celsius);
  Put(out, "powerWatts", s.power_watts);
  Put(out, "powerLimitWatts", s.power_limit_watts);
  Put(out, "enforcedPowerLimitWatts", s.enforced_power_limit_watts);
  Put(out, "powerLimitMinWatts", s.power_limit_min_watts);
  Put(out, "powerLimitMaxWatts", s.power_limit_max_watts);
  Put(out, "powerLimitDefaultWatts", s.power_limit_default_watts);
  Put(out, "energyJoules", s.energy_joules);
  Put(out, "smClockMhz", s.sm_clock_mhz);
  Put(out, "memoryClockMhz", s.memory_clock_mhz);
  Put(out, "eccVolatileCorrected", s.ecc_volatile_corrected);
  Put(out, "eccVolatileUncorrected", s.ecc_volatile_uncorrected);
  Put(out, "eccAggregateCorrected", s.ecc_aggregate_corrected);
  Put(out, "eccAggregateUncorrected", s.ecc_aggregate_uncorrected);
  Put(out, "retiredPagesSingleBit", s.retired_pages_single_bit);
  Put(out, "retiredPagesDoubleBit", s.retired_pages_double_bit);
  Put(out, "retiredPagesPending", s.retired_pages_pending);
  Put(out, "remappedRowsCorrected", s.remapped_rows_corrected);
  Put(out, "remappedRowsUncorrected", s.remapped_rows_uncorrected);
  Put(out, "remappedRowsPending", s.remapped_rows_pending);
  Put(out, "remappedRowsFailure", s.remapped_rows_failure);
  Put(out, "pcieReplayCount", s.pcie_replay_count);
  Put(out, "throttleReasons", s.throttle_reasons);
  json processes = json::array();
  for (const auto& p : s.processes) {
    json proc = {{"pid", p.pid}, {"usedMemoryBytes", p.used_memory_bytes}};
    Put(proc, "gpuInstanceId", p.gpu_instance_id);
    Put(proc, "computeInstanceId", p.compute_instance_id);
    processes.push_back(proc);
  }
  out["processes"] = processes;
  return out;
}

json ToJson(const Sample& sample) {
  json gpus = json::array();
  for (const auto& g : sample.gpus) gpus.push_back(ToJson(g));
  return {{"time", Rfc3339(sample.time)}, {"gpus", gpus}};
}

json ToJson(const HardwareEvent& e) {
  json out = {{"kind", HardwareEventKindName(e.kind)},
              {"gpu", e.gpu_index},
              {"uuid", e.gpu_uuid},
              {"time", Rfc3339(e.time)}};
  if (e.kind == HardwareEvent::Kind::kXid) out["xid"] = e.xid;
  Put(out, "gpuInstanceId", e.gpu_instance_id);
  Put(out, "computeInstanceId", e.compute_instance_id);
  return out;
}

}  // namespace gpuop::hw
