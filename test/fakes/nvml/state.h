#ifndef GPUOP_TEST_FAKES_NVML_STATE_H_
#define GPUOP_TEST_FAKES_NVML_STATE_H_

// The live state of a fake machine and the objects behind NVML's opaque handles. NVML declares
// nvmlDevice_t and friends as pointers to incomplete structs; the fake completes those structs,
// so a handle is the address of the object it names. Handles are only dereferenced after a
// lookup in the HandleRegistry, so a stale or foreign handle is an error, not a crash.
// Nothing here is thread-safe: the Driver's mutex guards all of it.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "hw/nvml/nvml_abi.h"
#include "test/fakes/nvml/scenario.h"

namespace gpuop::fakenvml {
struct GpuState;
}  // namespace gpuop::fakenvml

struct nvmlDevice_st {
  gpuop::fakenvml::GpuState* gpu = nullptr;
  nvmlComputeInstance_st* compute = nullptr;  // set on a MIG device handle
};

// A GPM sample: the GPU's counters when nvmlGpmSampleGet took it, or one GPU instance's when
// nvmlGpmMigSampleGet did (the fake keeps the readings and the scenario time).
struct nvmlGpmSample_st {
  const gpuop::fakenvml::GpuState* gpu = nullptr;  // null until taken
  unsigned int gpu_instance = kNvmlNoInstance;     // the GPU instance's id; none: the whole GPU
  int64_t taken_ms = 0;
  std::array<double, 6> readings{};  // graphics, SM, tensor, DRAM (%), PCIe TX, RX (MiB/s)
};

struct nvmlComputeInstance_st {
  nvmlGpuInstance_st* gpu_instance = nullptr;
  unsigned int id = 0;
  unsigned int slices = 0;
  unsigned int start = 0;
  std::string uuid;      // "MIG-..."
  nvmlDevice_st device;  // the MIG device this compute instance is
};

struct nvmlGpuInstance_st {
  gpuop::fakenvml::GpuState* gpu = nullptr;
  unsigned int id = 0;
  const gpuop::fakenvml::GiProfile* profile = nullptr;
  unsigned int start = 0;
  std::vector<std::unique_ptr<nvmlComputeInstance_st>> computes;  // sorted by id
};

namespace gpuop::fakenvml {

struct GpuState {
  int index = 0;
  GpuSpec spec;
  nvmlDevice_st handle;
  FieldValues values{};
  unsigned int power_limit_mw = 0;
  int compute_mode = 0;  // NVML_COMPUTEMODE_DEFAULT until set
  double energy_mj = 0;
  bool lost = false;
  bool mig_enabled = false;  // the current MIG mode: what everything MIG depends on follows
  bool mig_pending = false;  // the mode after the next reset; mig_enabled when none is pending
  std::vector<std::unique_ptr<nvmlGpuInstance_st>> gpu_instances;  // sorted by id
  std::vector<ProcessSpec> processes;
  CallErrors call_errors;  // live: the scenario's, then the control file's fail/unfail

  double value(Field field) const { return values[static_cast<int>(field)]; }
  double& value(Field field) { return values[static_cast<int>(field)]; }
};

// Every handle the machine has handed out and not yet destroyed. (Standard containers: absl's
// hash tables need an archive member Debian does not build position-independent, and the library
// links absl statically; see CMakeLists.txt.)
struct HandleRegistry {
  std::unordered_set<const nvmlDevice_st*> devices;
  std::unordered_set<const nvmlGpuInstance_st*> gpu_instances;
  std::unordered_set<const nvmlComputeInstance_st*> compute_instances;
  // Destroyed instances, kept until the machine goes so that their addresses are not handed out
  // again: a stale handle must stay INVALID_ARGUMENT, not name a new instance (one created in the
  // same call that adopts another process's destroy-and-create, say).
  std::vector<std::unique_ptr<nvmlGpuInstance_st>> retired_gpu_instances;
  std::vector<std::unique_ptr<nvmlComputeInstance_st>> retired_compute_instances;
  std::vector<std::unique_ptr<nvmlGpmSample_st>> gpm_samples;  // allocated, not yet freed
};

// What a device handle names: a whole GPU, or one MIG device on it.
struct DeviceRef {
  GpuState* gpu = nullptr;
  nvmlComputeInstance_st* compute = nullptr;
  bool is_mig() const { return compute != nullptr; }
};

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_STATE_H_
