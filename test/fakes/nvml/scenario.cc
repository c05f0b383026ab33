#include "test/fakes/nvml/scenario.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace gpuop::fakenvml {
namespace {

constexpr double kCounterMax = 9007199254740992.0;  // 2^53: exact in a double

// In Field order; FieldTableIsInOrder() checks it.
constexpr FieldInfo kFields[] = {
    {Field::kTemperature, "temperature_c", -50, 200},
    {Field::kMemoryTemperature, "memory_temperature_c", -50, 200},
    {Field::kPower, "power_w", 0, 10000},
    {Field::kGpuUtil, "gpu_util", 0, 100},
    {Field::kMemoryUtil, "memory_util", 0, 100},
    {Field::kEncoderUtil, "encoder_util", 0, 100},
    {Field::kDecoderUtil, "decoder_util", 0, 100},
    {Field::kGraphicsClock, "graphics_clock_mhz", 0, 100000},
    {Field::kSmClock, "sm_clock_mhz", 0, 100000},
    {Field::kMemoryClock, "memory_clock_mhz", 0, 100000},
    {Field::kVideoClock, "video_clock_mhz", 0, 100000},
    {Field::kMemoryUsed, "memory_used_mib", 0, 1 << 30},
    {Field::kPcieReplay, "pcie_replay_count", 0, 4294967295.0},
    {Field::kClockEventReasons, "clock_event_reasons", 0, kCounterMax},
    {Field::kEccCorrectedVolatile, "ecc_corrected_volatile", 0, kCounterMax},
    {Field::kEccCorrectedAggregate, "ecc_corrected_aggregate", 0, kCounterMax},
    {Field::kEccUncorrectedVolatile, "ecc_uncorrected_volatile", 0, kCounterMax},
    {Field::kEccUncorrectedAggregate, "ecc_uncorrected_aggregate", 0, kCounterMax},
    {Field::kRetiredPagesSingleBit, "retired_pages_sbe", 0, 4096},
    {Field::kRetiredPagesDoubleBit, "retired_pages_dbe", 0, 4096},
    {Field::kRetiredPagesPending, "retired_pages_pending", 0, 1},
    {Field::kRemappedRowsCorrected, "remapped_rows_corrected", 0, 65535},
    {Field::kRemappedRowsUncorrected, "remapped_rows_uncorrected", 0, 65535},
    {Field::kRemappedRowsPending, "remapped_rows_pending", 0, 1},
    {Field::kRemappedRowsFailure, "remapped_rows_failure", 0, 1},
    // NONE 0, GPU_RESET 1, NODE_REBOOT 2, DRAIN_P2P 3, DRAIN_AND_RESET 4 (nvml.h).
    {Field::kRecoveryAction, "recovery_action", 0, 4},
    // A limit the GPU enforces besides the management limit (out-of-band capping by the BMC, a
    // power-brake): nvml.h's enforced limit is the lower of the two. 0 is none.
    {Field::kPowerCap, "power_cap_w", 0, 10000},
    {Field::kSmActive, "sm_active", 0, 100},
    {Field::kTensorActive, "tensor_active", 0, 100},
    {Field::kDramActive, "dram_active", 0, 100},
    {Field::kPcieTxMibps, "pcie_tx_mibps", 0, 1 << 20},
    {Field::kPcieRxMibps, "pcie_rx_mibps", 0, 1 << 20},
    {Field::kNvlinkRawTxKib, "nvlink_raw_tx_kib", 0, kCounterMax},
    {Field::kNvlinkRawRxKib, "nvlink_raw_rx_kib", 0, kCounterMax},
};
static_assert(std::size(kFields) == kFieldCount, "one FieldInfo per Field");

constexpr bool FieldTableIsInOrder() {
  for (int i = 0; i < kFieldCount; ++i) {
    if (static_cast<int>(kFields[i].field) != i) return false;
  }
  return true;
}
static_assert(FieldTableIsInOrder(), "kFields must be in Field order");

}  // namespace

const FieldInfo* FindField(absl::string_view name) {
  for (const FieldInfo& info : kFields) {
    if (name == info.name) return &info;
  }
  return nullptr;
}

const FieldInfo& GetFieldInfo(Field field) { return kFields[static_cast<int>(field)]; }

std::string FieldNames() {
  return absl::StrJoin(kFields, ", ",
                       [](std::string* out, const FieldInfo& info) { out->append(info.name); });
}

FieldValues DefaultFieldValues() {
  FieldValues values{};
  values[static_cast<int>(Field::kTemperature)] = 30;
  values[static_cast<int>(Field::kMemoryTemperature)] = 32;
  values[static_cast<int>(Field::kPower)] = 30;
  // Clocks below zero report the GPU's maximum clock.
  values[static_cast<int>(Field::kGraphicsClock)] = -1;
  values[static_cast<int>(Field::kSmClock)] = -1;
  values[static_cast<int>(Field::kMemoryClock)] = -1;
  values[static_cast<int>(Field::kVideoClock)] = -1;
  values[static_cast<int>(Field::kMemoryUsed)] = -1;
  return values;
}

absl::StatusOr<int64_t> ParseDurationMs(absl::string_view text) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  double scale = 1000;
  if (absl::ConsumeSuffix(&body, "ms")) {
    scale = 1;
  } else if (absl::ConsumeSuffix(&body, "s")) {
    scale = 1000;
  } else if (absl::ConsumeSuffix(&body, "m")) {
    scale = 60 * 1000;
  } else if (absl::ConsumeSuffix(&body, "h")) {
    scale = 3600 * 1000;
  }
  double value = 0;
  if (body.empty() || !absl::SimpleAtod(body, &value) || !std::isfinite(value) || value < 0 ||
      value * scale > 1e15) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a duration such as 250ms, 2s, 1.5m or 1h, got \"", text, "\""));
  }
  return static_cast<int64_t>(std::llround(value * scale));
}

Scenario VisibleSubset(const Scenario& scenario, const std::vector<bool>& visible) {
  Scenario out = scenario;
  out.gpus.clear();
  std::vector<int> renumbered(scenario.gpus.size(), -1);
  for (size_t i = 0; i < scenario.gpus.size(); ++i) {
    if (i < visible.size() && visible[i]) {
      renumbered[i] = static_cast<int>(out.gpus.size());
      out.gpus.push_back(scenario.gpus[i]);
    }
  }
  auto is_visible = [&](int index) {
    return index >= 0 && static_cast<size_t>(index) < renumbered.size() && renumbered[index] >= 0;
  };
  for (GpuSpec& gpu : out.gpus) {
    for (LinkSpec& link : gpu.links) {
      if (link.kind != LinkSpec::Kind::kGpu) continue;
      if (is_visible(link.target)) {
        link.target = renumbered[link.target];
        continue;
      }
      const GpuSpec& peer = scenario.gpus[link.target];
      link.kind = LinkSpec::Kind::kHiddenGpu;
      link.peer_pci = peer.pci;
      link.peer_device_id = peer.pci_device_id;
      link.peer_subsystem_id = peer.pci_subsystem_id;
    }
  }
  out.topology.clear();
  for (TopologyOverride entry : scenario.topology) {
    if (!is_visible(entry.first) || !is_visible(entry.second)) continue;
    entry.first = renumbered[entry.first];
    entry.second = renumbered[entry.second];
    out.topology.push_back(entry);
  }
  out.timeline.clear();
  for (TimedAction timed : scenario.timeline) {
    if (timed.action.gpu >= 0) {
      if (!is_visible(timed.action.gpu)) continue;
      timed.action.gpu = renumbered[timed.action.gpu];
    }
    out.timeline.push_back(timed);
  }
  return out;
}

absl::StatusOr<Scenario> LoadScenarioFile(const std::string& path, absl::string_view node_seed) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("scenario ", path, ": cannot open the file"));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("scenario ", path, ": read failed"));
  absl::StatusOr<Scenario> scenario = ParseScenario(text.str(), path, node_seed);
  if (!scenario.ok()) {
    return absl::Status(scenario.status().code(),
                        absl::StrCat("scenario ", path, ": ", scenario.status().message()));
  }
  return scenario;
}

}  // namespace gpuop::fakenvml
