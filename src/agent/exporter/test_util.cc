#include "agent/exporter/test_util.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/process.h"

namespace gpuop::agent::exporter::testing {

FakeAccelerator::FakeAccelerator(hw::Inventory inventory, hw::Sample sample)
    : inventory_(std::move(inventory)), sample_(std::move(sample)) {}

absl::StatusOr<hw::Inventory> FakeAccelerator::Discover() {
  discovers_.fetch_add(1);
  absl::MutexLock lock(&mu_);
  return inventory_;
}

absl::StatusOr<hw::Sample> FakeAccelerator::TakeSample() {
  samples_.fetch_add(1);
  absl::MutexLock lock(&mu_);
  if (!sample_error_.ok()) return sample_error_;
  return sample_;
}

absl::StatusOr<std::vector<hw::HardwareEvent>> FakeAccelerator::WaitEvents(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(
      absl::Condition(
          +[](std::vector<hw::HardwareEvent>* e) { return !e->empty(); }, &events_),
      timeout);
  return std::exchange(events_, {});
}

void FakeAccelerator::SetSample(hw::Sample sample) {
  absl::MutexLock lock(&mu_);
  sample_ = std::move(sample);
}

void FakeAccelerator::FailSamples(absl::Status status) {
  absl::MutexLock lock(&mu_);
  sample_error_ = std::move(status);
}

void FakeAccelerator::PushEvent(hw::HardwareEvent event) {
  absl::MutexLock lock(&mu_);
  events_.push_back(std::move(event));
}

hw::Inventory SmallInventory() {
  constexpr uint64_t kMiB = 1024 * 1024;
  hw::Inventory inventory{.driver_version = "570.86.15", .cuda_driver_version = 12080};
  inventory.gpus.push_back(hw::Gpu{.vendor = hw::Vendor::kNvidia,
                                   .index = 0,
                                   .uuid = "GPU-0000",
                                   .pci_bus_id = "0000:17:00.0",
                                   .product = "Test \"GPU\" \\ 80GB",
                                   .memory_bytes = 81559 * kMiB});
  hw::Gpu a100{.vendor = hw::Vendor::kNvidia,
               .index = 1,
               .uuid = "GPU-1111",
               .pci_bus_id = "0000:b1:00.0",
               .product = "NVIDIA A100-SXM4-40GB",
               .memory_bytes = 40960 * kMiB,
               .mig_capable = true,
               .mig_enabled = true};
  a100.mig_profiles = {{.name = "1g.5gb", .id = 19, .slice_count = 1, .instance_count = 7},
                       {.name = "3g.20gb", .id = 9, .slice_count = 3, .instance_count = 2},
                       {.name = "7g.40gb", .id = 0, .slice_count = 7, .instance_count = 1}};
  a100.mig_devices = {
      {.uuid = "MIG-1111-a",
       .profile = "3g.20gb",
       .gpu_instance_id = 1,
       .compute_instance_id = 0,
       .memory_bytes = 19968 * kMiB},
      {.uuid = "MIG-1111-b",
       .profile = "3g.20gb",
       .gpu_instance_id = 1,
       .compute_instance_id = 1,
       .memory_bytes = 19968 * kMiB},
      {.uuid = "MIG-1111-c",
       .profile = "1g.5gb",
       .gpu_instance_id = 13,
       .compute_instance_id = 0,
       .memory_bytes = 4864 * kMiB},
  };
  inventory.gpus.push_back(std::move(a100));
  return inventory;
}

hw::Sample SmallSample() {
  constexpr uint64_t kMiB = 1024 * 1024;
  hw::Sample sample{.time = absl::FromUnixSeconds(1'700'000'000)};
  sample.gpus.push_back(hw::GpuSample{.index = 0,
                                      .gpu_utilization_percent = 87,
                                      .memory_utilization_percent = 40,
                                      .encoder_utilization_percent = 0,
                                      .decoder_utilization_percent = 3,
                                      .memory_used_bytes = 10240 * kMiB,
                                      .memory_free_bytes = 70819 * kMiB,
                                      .memory_reserved_bytes = 500 * kMiB + 123,
                                      .temperature_celsius = 61,
                                      .memory_temperature_celsius = 70,
                                      .power_watts = 512.25,
                                      .energy_joules = 123456.789,
                                      .sm_clock_mhz = 1980,
                                      .memory_clock_mhz = 2619,
                                      .remapped_rows_corrected = 2,
                                      .remapped_rows_uncorrected = 0,
                                      .remapped_rows_failure = false,
                                      .pcie_replay_count = 5,
                                      .activity = {.graphics_active = 0.92,
                                                   .sm_active = 0.61,
                                                   .tensor_active = 0.33,
                                                   .dram_active = 0.45,
                                                   .pcie_tx_bytes_per_second = 1.5e9,
                                                   .pcie_rx_bytes_per_second = 2.5e8},
                                      .nvlink_bytes_total = 123456789012});
  // The A100 reports no memory temperature, no energy counter, no GPM profiling and (in this
  // sample) no NVLink traffic: those series are left out, never 0.
  sample.gpus.push_back(hw::GpuSample{.index = 1,
                                      .gpu_utilization_percent = 0,
                                      .memory_used_bytes = 3000 * kMiB,
                                      .memory_free_bytes = 37960 * kMiB,
                                      .temperature_celsius = 35,
                                      .power_watts = 90,
                                      .sm_clock_mhz = 1410,
                                      .memory_clock_mhz = 1215,
                                      .processes = {{.pid = 10,
                                                     .used_memory_bytes = 2000 * kMiB,
                                                     .gpu_instance_id = 1,
                                                     .compute_instance_id = 0},
                                                    {.pid = 11,
                                                     .used_memory_bytes = 512 * kMiB,
                                                     .gpu_instance_id = 1,
                                                     .compute_instance_id = 1},
                                                    {.pid = 12,
                                                     .used_memory_bytes = 100 * kMiB,
                                                     .gpu_instance_id = 13,
                                                     .compute_instance_id = 0}}});
  return sample;
}

absl::StatusOr<std::vector<std::string>> PromtoolProblems(const std::string& text) {
  const std::filesystem::path promtool = "/usr/bin/promtool";
  if (!std::filesystem::exists(promtool)) {
    return absl::FailedPreconditionError("promtool is not installed");
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    absl::StrCat("gpuop-promtool-", getpid(), "-", gettid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "metrics.prom") << text;
  absl::StatusOr<common::Subprocess> child =
      common::Subprocess::Spawn({.argv = {"/bin/sh", "-c",
                                          absl::StrCat(promtool.string(), " check metrics < ",
                                                       (dir / "metrics.prom").string())},
                                 .output_path = dir / "output"});
  if (!child.ok()) return child.status();
  absl::StatusOr<int> status = child->Wait(absl::Seconds(60));
  if (!status.ok()) return status.status();
  std::stringstream output;
  output << std::ifstream(dir / "output").rdbuf();
  std::filesystem::remove_all(dir);
  // Exit 0: clean; 3: lint problems only; anything else: promtool could not read the text.
  if (!WIFEXITED(*status) || (WEXITSTATUS(*status) != 0 && WEXITSTATUS(*status) != 3)) {
    return std::vector<std::string>{
        absl::StrCat("promtool ", common::DescribeWaitStatus(*status), ": ", output.str())};
  }
  // What dcgm-exporter's own names and labels draw, and nothing else.
  static const std::regex kDcgmCompat(
      R"((DCGM_FI_(DEV|PROF)_[A-Z_]+ label names should be written in 'snake_case' not 'camelCase')|)"
      R"((DCGM_FI_DEV_(TOTAL_ENERGY_CONSUMPTION|PCIE_REPLAY_COUNTER|(UN)?CORRECTABLE_REMAPPED_ROWS|)"
      R"(NVLINK_BANDWIDTH_TOTAL))"
      R"( counter metrics should have "_total" suffix)|)"
      R"((DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'))");
  std::vector<std::string> problems;
  for (absl::string_view line : absl::StrSplit(output.str(), '\n', absl::SkipWhitespace())) {
    if (!std::regex_match(line.begin(), line.end(), kDcgmCompat)) problems.emplace_back(line);
  }
  return problems;
}

}  // namespace gpuop::agent::exporter::testing
