// AmdAccelerator telemetry (TakeSample) and control (SetPowerLimit) over amdgpu's sysfs and
// hwmon attributes, in the kernel's units: millidegrees Celsius, microwatts, microjoules, hertz.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "hw/amd/amd_accelerator.h"
#include "hw/pci/sysfs.h"

namespace gpuop::hw {
namespace {

// hwmon channels are numbered from 1; amdgpu uses 1-3 (edge, junction, mem).
constexpr int kMaxTempChannels = 8;

int Celsius(int64_t millidegrees) {
  return static_cast<int>(std::lround(static_cast<double>(millidegrees) / 1000.0));
}

std::optional<unsigned int> Percent(std::optional<uint64_t> value) {
  if (!value) return std::nullopt;
  return static_cast<unsigned int>(std::min<uint64_t>(*value, 100));
}

std::optional<unsigned int> Mhz(std::optional<uint64_t> hertz) {
  if (!hertz) return std::nullopt;
  return static_cast<unsigned int>(*hertz / 1000000);
}

// The temperature channel amdgpu labels `label` ("edge", "junction", "mem"), or 0. Without
// labels the driver's fixed numbering applies.
int TempChannel(const std::string& hwmon, const std::string& label) {
  bool any_label = false;
  for (int n = 1; n <= kMaxTempChannels; ++n) {
    auto text = sysfs::ReadOptionalString(sysfs::Join(hwmon, absl::StrCat("temp", n, "_label")));
    if (!text) continue;
    any_label = true;
    if (*text == label) return n;
  }
  if (any_label) return 0;
  if (label == "edge") return 1;
  if (label == "junction") return 2;
  if (label == "mem") return 3;
  return 0;
}

std::optional<int64_t> Temp(const std::string& hwmon, int channel, const char* suffix) {
  if (channel == 0) return std::nullopt;
  return sysfs::ReadOptionalInt(sysfs::Join(hwmon, absl::StrCat("temp", channel, "_", suffix)));
}

// ras/umc_err_count: "ue: <n>\nce: <n>\n".
void ReadUmcErrors(const std::string& path, GpuSample& sample) {
  auto text = sysfs::ReadOptionalString(path);
  if (!text) return;
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, ':');
    auto count = sysfs::ParseUint(kv.second);
    if (!count) continue;
    const absl::string_view key = absl::StripAsciiWhitespace(kv.first);
    if (key == "ue") sample.ecc_volatile_uncorrected = *count;
    if (key == "ce") sample.ecc_volatile_corrected = *count;
  }
}

std::string Watts(std::optional<uint64_t> microwatts) {
  return microwatts ? absl::StrFormat("%g W", static_cast<double>(*microwatts) / 1e6) : "?";
}

}  // namespace

absl::StatusOr<std::string> AmdAccelerator::HwmonDir(const std::string& address) const {
  const std::string dir = sysfs::Join(DeviceDir(address), "hwmon");
  absl::StatusOr<std::vector<std::string>> names = sysfs::ListDir(dir);
  if (!names.ok()) return names.status();
  for (const std::string& name : *names) {
    if (absl::StartsWith(name, "hwmon")) return sysfs::Join(dir, name);
  }
  return absl::NotFoundError(absl::StrCat("no hwmon device in ", dir));
}

GpuSample AmdAccelerator::SampleGpu(int index, const std::string& address) const {
  GpuSample s{.index = index};
  const std::string dir = DeviceDir(address);
  auto uint_at = [](const std::string& base, const std::string& file) {
    return sysfs::ReadOptionalUint(sysfs::Join(base, file));
  };
  s.gpu_utilization_percent = Percent(uint_at(dir, "gpu_busy_percent"));
  s.memory_utilization_percent = Percent(uint_at(dir, "mem_busy_percent"));
  const std::optional<uint64_t> total = uint_at(dir, "mem_info_vram_total");
  s.memory_used_bytes = uint_at(dir, "mem_info_vram_used");
  if (total && s.memory_used_bytes && *total >= *s.memory_used_bytes) {
    s.memory_free_bytes = *total - *s.memory_used_bytes;
  }
  if (auto replays = uint_at(dir, "pcie_replay_count")) {
    s.pcie_replay_count = static_cast<unsigned int>(
        std::min<uint64_t>(*replays, std::numeric_limits<unsigned int>::max()));
  }
  ReadUmcErrors(sysfs::Join(dir, "ras/umc_err_count"), s);

  if (absl::StatusOr<std::string> hwmon = HwmonDir(address); hwmon.ok()) {
    // The edge sensor where there is one; MI300 has only junction (hotspot) and memory.
    int channel = TempChannel(*hwmon, "edge");
    if (!Temp(*hwmon, channel, "input")) channel = TempChannel(*hwmon, "junction");
    if (auto t = Temp(*hwmon, channel, "input")) s.temperature_celsius = Celsius(*t);
    if (auto t = Temp(*hwmon, channel, "crit")) s.slowdown_temperature_celsius = Celsius(*t);
    if (auto t = Temp(*hwmon, channel, "emergency")) s.shutdown_temperature_celsius = Celsius(*t);
    if (auto t = Temp(*hwmon, TempChannel(*hwmon, "mem"), "input")) {
      s.memory_temperature_celsius = Celsius(*t);
    }
    auto watts = [&](const char* file) -> std::optional<double> {
      auto microwatts = uint_at(*hwmon, file);
      if (!microwatts) return std::nullopt;
      return static_cast<double>(*microwatts) / 1e6;
    };
    s.power_watts = watts("power1_average");
    if (!s.power_watts) s.power_watts = watts("power1_input");
    s.power_limit_watts = watts("power1_cap");
    s.power_limit_min_watts = watts("power1_cap_min");
    s.power_limit_max_watts = watts("power1_cap_max");
    s.power_limit_default_watts = watts("power1_cap_default");
    if (auto microjoules = uint_at(*hwmon, "energy1_input")) {
      s.energy_joules = static_cast<double>(*microjoules) / 1e6;
    }
    s.sm_clock_mhz = Mhz(uint_at(*hwmon, "freq1_input"));
    s.memory_clock_mhz = Mhz(uint_at(*hwmon, "freq2_input"));
  }
  // Gone while we read: what was read is not to be trusted.
  if (!Bound(address)) return GpuSample{.index = index, .lost = true};
  return s;
}

absl::StatusOr<Sample> AmdAccelerator::TakeSample() {
  GPUOP_ASSIGN_OR_RETURN(std::vector<std::string> addresses, KnownAddresses());
  Sample sample{.time = options_.clock->Now()};
  for (size_t i = 0; i < addresses.size(); ++i) {
    const int index = static_cast<int>(i);
    sample.gpus.push_back(Bound(addresses[i]) ? SampleGpu(index, addresses[i])
                                              : GpuSample{.index = index, .lost = true});
  }
  return sample;
}

absl::StatusOr<std::string> AmdAccelerator::AddressFor(const char* operation, int gpu_index) {
  GPUOP_ASSIGN_OR_RETURN(std::vector<std::string> addresses, KnownAddresses());
  if (gpu_index < 0 || static_cast<size_t>(gpu_index) >= addresses.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        operation, "(GPU ", gpu_index, "): no such AMD GPU; the node has ", addresses.size()));
  }
  const std::string& address = addresses[static_cast<size_t>(gpu_index)];
  if (!Bound(address)) {
    return absl::UnavailableError(absl::StrCat(operation, "(GPU ", gpu_index, ", ", address,
                                               "): the GPU is lost (no longer bound to amdgpu)"));
  }
  return address;
}

absl::Status AmdAccelerator::SetPowerLimit(int gpu_index, double watts) {
  GPUOP_ASSIGN_OR_RETURN(std::string address, AddressFor("SetPowerLimit", gpu_index));
  const std::string context = absl::StrCat("SetPowerLimit(GPU ", gpu_index, ", ", address, ")");
  const double rounded = std::isfinite(watts) ? std::round(watts) : 0;
  if (rounded < 1 || rounded > std::numeric_limits<uint32_t>::max() / 1e6) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %g W is not a power limit", context, watts));
  }
  absl::StatusOr<std::string> hwmon = HwmonDir(address);
  const std::string cap = hwmon.ok() ? sysfs::Join(*hwmon, "power1_cap") : "";
  if (cap.empty() || !sysfs::Exists(cap)) {
    return absl::UnimplementedError(
        absl::StrCat(context, ": power capping is not available (no hwmon power1_cap under ",
                     DeviceDir(address), "/hwmon)"));
  }
  const uint64_t microwatts = static_cast<uint64_t>(rounded) * 1000000;
  const auto min = sysfs::ReadOptionalUint(sysfs::Join(*hwmon, "power1_cap_min"));
  const auto max = sysfs::ReadOptionalUint(sysfs::Join(*hwmon, "power1_cap_max"));
  if ((min && microwatts < *min) || (max && microwatts > *max)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %g W is outside the GPU's power cap range [%s, %s]", context, watts,
                        Watts(min), Watts(max)));
  }
  absl::Status written = sysfs::WriteString(cap, absl::StrCat(microwatts, "\n"));
  if (!written.ok()) {
    return absl::Status(written.code(), absl::StrCat(context, ": ", written.message()));
  }
  return absl::OkStatus();
}

}  // namespace gpuop::hw
