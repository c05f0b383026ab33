// Cost of the NVIDIA backend against the fake libnvidia-ml.so.1 (8 × H100 preset): one full
// telemetry sample (NVML calls and microseconds, p50/p99 over many samples), one inventory, and
// the process's resident memory before and after loading and initialising the library.
// Usage: hw_sample_bench [--library PATH] [--scenario NAME] [--samples N]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "hw/nvml/nvml_accelerator.h"

namespace {

// VmRSS of this process in KiB.
long ResidentKiB() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const size_t i = static_cast<size_t>(p * static_cast<double>(values.size() - 1));
  return values[i];
}

}  // namespace

int main(int argc, char** argv) {
  std::string library = GPUOP_FAKE_NVML_LIBRARY;
  std::string scenario = "h100-8x-nvswitch";
  int samples = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--library") == 0) library = argv[i + 1];
    if (std::strcmp(argv[i], "--scenario") == 0) scenario = argv[i + 1];
    if (std::strcmp(argv[i], "--samples") == 0) samples = std::atoi(argv[i + 1]);
  }
  setenv("GPUOP_FAKE_NVML_SCENARIO", scenario.c_str(), 0);

  const long rss_before = ResidentKiB();
  auto nvml = gpuop::hw::NvmlAccelerator::Open({.library_path = library});
  if (!nvml.ok()) {
    std::fprintf(stderr, "%s\n", nvml.status().ToString().c_str());
    return 1;
  }
  const long rss_loaded = ResidentKiB();
  const int64_t calls_before_inventory = (*nvml)->calls();
  const absl::Time t0 = absl::Now();
  auto inventory = (*nvml)->Discover();
  const double inventory_us = absl::ToDoubleMicroseconds(absl::Now() - t0);
  if (!inventory.ok()) {
    std::fprintf(stderr, "%s\n", inventory.status().ToString().c_str());
    return 1;
  }
  const int64_t inventory_calls = (*nvml)->calls() - calls_before_inventory;

  std::vector<double> micros;
  micros.reserve(static_cast<size_t>(samples));
  const int64_t calls_before = (*nvml)->calls();
  for (int i = 0; i < samples; ++i) {
    const absl::Time start = absl::Now();
    auto sample = (*nvml)->TakeSample();
    micros.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
    if (!sample.ok()) {
      std::fprintf(stderr, "%s\n", sample.status().ToString().c_str());
      return 1;
    }
  }
  const double calls_per_sample = static_cast<double>((*nvml)->calls() - calls_before) / samples;
  const long rss_after = ResidentKiB();

  std::printf("library %s, scenario %s, %zu GPUs\n", library.c_str(), scenario.c_str(),
              inventory->gpus.size());
  std::printf("inventory: %lld NVML calls, %.0f us\n", static_cast<long long>(inventory_calls),
              inventory_us);
  std::printf(
      "telemetry sample (all GPUs): %.0f NVML calls, p50 %.1f us, p99 %.1f us (%d samples)\n",
      calls_per_sample, Percentile(micros, 0.5), Percentile(micros, 0.99), samples);
  std::printf(
      "resident memory: %ld KiB before loading, %ld KiB after loading NVML, %ld KiB "
      "after sampling\n",
      rss_before, rss_loaded, rss_after);
  return 0;
}
