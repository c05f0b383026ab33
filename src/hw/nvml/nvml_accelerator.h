#ifndef GPUOP_HW_NVML_NVML_ACCELERATOR_H_
#define GPUOP_HW_NVML_NVML_ACCELERATOR_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "hw/accelerator.h"
#include "hw/nvml/nvml_library.h"

namespace gpuop::hw {

struct NvmlOptions {
  // The library to load: the soname by default; a full path for a containerised driver root
  // ("/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1") or the fake.
  std::string library_path = "libnvidia-ml.so.1";
  const common::Clock* clock = &common::Clock::Real();
  // Where the PCI devices' NUMA affinity is read: <sysfs_root>/bus/pci/devices/<bus id>/
  // numa_node, as NVIDIA's device plugin does (nvmlDeviceGetNumaNodeId answers only where a
  // GPU is a NUMA node of its own, so x86 nodes would have no topology).
  std::string sysfs_root = "/sys";
  // Resets the GPUs at these PCI bus ids ("0000:18:00.0"), as `nvidia-smi -r -i <ids>` does;
  // called while this process has NVML shut down. Unset: ResetGpus is Unimplemented.
  std::function<absl::Status(const std::vector<std::string>& pci_bus_ids)> reset_gpus;
  // Has the driver create the MIG instances' device nodes, as plain `nvidia-smi` in the driver's
  // root does (NvidiaSmi::CreateDeviceNodes). Unset: CreateMigDeviceNodes is Unimplemented.
  std::function<absl::Status()> create_mig_device_nodes;
};

// The NVIDIA backend: NVML through dlopen.
//
// Every NVML failure becomes a Status naming the function and the GPU. NOT_SUPPORTED and a
// missing optional entry point leave the field empty: a T4 has no MIG, an old driver has no
// row remapping, and neither is an error. A GPU that answers GPU_IS_LOST is reported lost in
// samples and events and never crashes anything.
//
// Thread-safe.
class NvmlAccelerator final : public Accelerator {
 public:
  // Loads and initialises NVML; see NvmlLibrary::Load for the errors.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<NvmlAccelerator>> Open(
      const NvmlOptions& options = {});

  Vendor vendor() const override { return Vendor::kNvidia; }
  [[nodiscard]] absl::StatusOr<Inventory> Discover() override;
  [[nodiscard]] absl::StatusOr<Sample> TakeSample() override;
  [[nodiscard]] absl::StatusOr<std::vector<HardwareEvent>> WaitEvents(
      absl::Duration timeout) override;
  [[nodiscard]] absl::Status SetPowerLimit(int gpu_index, double watts) override;
  [[nodiscard]] absl::Status SetComputeMode(int gpu_index, ComputeMode mode) override;
  [[nodiscard]] absl::StatusOr<ComputeMode> GetComputeMode(int gpu_index) override;
  [[nodiscard]] absl::StatusOr<bool> SetMigMode(int gpu_index, bool enabled) override;
  [[nodiscard]] absl::StatusOr<MigDevice> CreateMigDevice(int gpu_index,
                                                          const std::string& profile) override;
  [[nodiscard]] absl::Status DestroyMigDevice(int gpu_index, unsigned int gpu_instance_id) override;
  // Shuts NVML down (freeing the event set, which is registered again at the next WaitEvents),
  // runs NvmlOptions::reset_gpus for the GPUs' bus ids and initialises NVML again. No other
  // call may run meanwhile: the MIG manager, its only caller, serialises its hardware work.
  [[nodiscard]] absl::Status ResetGpus(const std::vector<int>& gpu_indexes) override;
  // Runs NvmlOptions::create_mig_device_nodes.
  [[nodiscard]] absl::Status CreateMigDeviceNodes() override;

  // NVML calls made so far (for the benchmark and for tests that count work).
  int64_t calls() const;

  ~NvmlAccelerator() override;

 private:
  NvmlAccelerator(std::unique_ptr<NvmlLibrary> library, const NvmlOptions& options)
      : lib_(std::move(library)),
        clock_(*options.clock),
        sysfs_root_(options.sysfs_root),
        reset_gpus_(options.reset_gpus),
        create_mig_device_nodes_(options.create_mig_device_nodes) {}

  // Wraps an NVML call: counts it and turns the code into a Status naming call and GPU.
  template <typename Fn, typename... Args>
  absl::Status Call(Fn fn, const char* name, int gpu, Args... args) const;
  // The same for optional fields: nullopt for NOT_SUPPORTED / missing entry point / any error
  // except GPU_IS_LOST, which sets `*lost`.
  template <typename T, typename Fn, typename... Args>
  std::optional<T> Optional(Fn fn, bool* lost, Args... args) const;

  absl::StatusOr<nvmlDevice_t> Handle(int gpu_index) const;
  absl::StatusOr<Gpu> DescribeGpu(int index, nvmlDevice_t device) const;
  void DescribeMig(nvmlDevice_t device, Gpu& gpu) const;
  // nvmlDeviceGetGpuFabricInfo, when the GPU finished registering with a fabric.
  std::optional<GpuFabric> DescribeFabric(nvmlDevice_t device) const;
  void DescribeTopology(const std::vector<nvmlDevice_t>& devices, std::vector<Gpu>& gpus) const;
  GpuSample SampleGpu(int index, nvmlDevice_t device) const;
  // The GPM activity since the GPU's previous sample, and each MIG GPU instance's since its
  // previous one (none at the first, or without GPM).
  void SampleGpm(int index, nvmlDevice_t device, GpuSample& s) const ABSL_LOCKS_EXCLUDED(gpm_mu_);
  // Takes a sample with `take` into a new buffer that replaces `last`; the activity between the
  // two, or nullopt (no earlier sample, or NVML refused).
  std::optional<Activity> NextGpmInterval(
      nvmlGpmSample_t& last, const std::function<nvmlReturn_t(nvmlGpmSample_t)>& take) const;
  // The ids of the GPU instances of a GPU in MIG mode (none otherwise).
  std::set<unsigned int> GpuInstanceIds(nvmlDevice_t device) const;
  // Frees the GPM samples kept between samples (before NVML shuts down).
  void FreeGpmSamples();
  absl::StatusOr<nvmlEventSet_t> EventSet() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<MigProfile> MigProfiles(nvmlDevice_t device) const;
  absl::StatusOr<unsigned int> ProfileIdByName(nvmlDevice_t device, int gpu_index,
                                               const std::string& profile) const;

  std::unique_ptr<NvmlLibrary> lib_;
  const common::Clock& clock_;
  const std::string sysfs_root_;
  const std::function<absl::Status(const std::vector<std::string>&)> reset_gpus_;
  const std::function<absl::Status()> create_mig_device_nodes_;
  mutable std::atomic<int64_t> calls_{0};
  absl::Mutex mu_;
  nvmlEventSet_t event_set_ ABSL_GUARDED_BY(mu_) = nullptr;
  // The GPUs registered with the event set: the handle, index and UUID of each, so that an event
  // is attributed even when its GPU no longer answers (a lost GPU fails every query).
  struct EventDevice {
    nvmlDevice_t device = nullptr;
    int index = 0;
    std::string uuid;
  };
  std::vector<EventDevice> event_devices_ ABSL_GUARDED_BY(mu_);
  // GPUs whose registration failed, not yet reported by WaitEvents (kUnwatched).
  std::vector<HardwareEvent> unwatched_ ABSL_GUARDED_BY(mu_);
  // Each GPU as last described, by index: a GPU that falls off the bus is still in the machine,
  // so Discover keeps listing it (its samples say lost) instead of dropping it.
  // Per GPU: whether it has GPM, and its last GPM sample (the start of the next interval).
  struct GpmState {
    bool checked = false;
    bool supported = false;
    nvmlGpmSample_t last = nullptr;
    std::map<unsigned int, nvmlGpmSample_t> instances;  // by GPU instance id
  };
  mutable absl::Mutex gpm_mu_;
  mutable std::map<int, GpmState> gpm_ ABSL_GUARDED_BY(gpm_mu_);
  absl::Mutex described_mu_;
  std::map<int, Gpu> described_ ABSL_GUARDED_BY(described_mu_);
};

template <typename Fn, typename... Args>
absl::Status NvmlAccelerator::Call(Fn fn, const char* name, int gpu, Args... args) const {
  if (fn == nullptr) {
    return absl::UnimplementedError(absl::StrCat(name, ": not in ", lib_->path()));
  }
  calls_.fetch_add(1, std::memory_order_relaxed);
  return lib_->Check(fn(args...), name, gpu < 0 ? "" : absl::StrCat("GPU ", gpu));
}

template <typename T, typename Fn, typename... Args>
std::optional<T> NvmlAccelerator::Optional(Fn fn, bool* lost, Args... args) const {
  if (fn == nullptr || (lost != nullptr && *lost)) return std::nullopt;
  calls_.fetch_add(1, std::memory_order_relaxed);
  T value{};
  const nvmlReturn_t rc = fn(args..., &value);
  if (rc == NVML_ERROR_GPU_IS_LOST && lost != nullptr) *lost = true;
  if (rc != NVML_SUCCESS) return std::nullopt;
  return value;
}

// GPU feature discovery's family name for a CUDA compute capability, by major version: 1
// tesla, 2 fermi, 3 kepler, 5 maxwell, 6 pascal, 7 volta (minor < 5) or turing, 8 ampere
// (minor < 9) or ada-lovelace, 9 hopper, 10 and 12 blackwell, 13 rubin; "" for any other
// (GFD's "undefined").
std::string NvidiaFamily(int compute_major, int compute_minor);

// NVML's bus id ("00000000:17:00.0") in sysfs form ("0000:17:00.0").
std::string NormalizePciBusId(const std::string& nvml_bus_id);

}  // namespace gpuop::hw

#endif  // GPUOP_HW_NVML_NVML_ACCELERATOR_H_
