#ifndef GPUOP_TEST_FAKES_NVML_MIG_H_
#define GPUOP_TEST_FAKES_NVML_MIG_H_

// MIG partitioning of one fake GPU: GPU instances placed on the memory-slot axis, compute
// instances inside them, the MIG devices they form. Rules (README.md): a GPU instance takes one of
// its profile's placements; placements may not overlap; a profile allows at most `instances` GPU
// instances and all of them together at most the GPU's compute slices; without a placement the
// highest free one is used. GPU-instance ids follow the driver's placement tree (7g -> 0, the two
// halves -> 1 and 2, quarters -> 3..6, eighths -> 7..14). Compute instances of s slices start at
// multiples of s rounded up to a power of two; ids count from 0.

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "hw/nvml/nvml_abi.h"
#include "test/fakes/nvml/node_state.h"
#include "test/fakes/nvml/state.h"

namespace gpuop::fakenvml {

const GiProfile* FindGiProfileByIndex(const GpuState& gpu, unsigned int index);
const GiProfile* FindGiProfileById(const GpuState& gpu, unsigned int id);

// NVML_COMPUTE_INSTANCE_PROFILE_* index (which is also the profile id) <-> slice count.
std::optional<unsigned int> ComputeSlicesForProfile(unsigned int profile);
std::optional<unsigned int> ComputeProfileForSlices(unsigned int slices);

// The most MIG devices the GPU can hold (nvmlDeviceGetMaxMigDeviceCount).
unsigned int MaxMigDevices(const GpuState& gpu);

// How many more GPU instances of `profile` fit now.
unsigned int GiRemainingCapacity(const GpuState& gpu, const GiProfile& profile);
// NOT_SUPPORTED when MIG is off, INVALID_ARGUMENT for a start that is not a placement of the
// profile, INSUFFICIENT_RESOURCES when it does not fit.
nvmlReturn_t CreateGpuInstance(GpuState& gpu, const GiProfile& profile,
                               std::optional<unsigned int> start, HandleRegistry& handles,
                               nvmlGpuInstance_st** out);
// IN_USE while it has compute instances.
nvmlReturn_t DestroyGpuInstance(nvmlGpuInstance_st& instance, HandleRegistry& handles);

// Compute-instance placements (starts) of `slices` inside a GPU instance.
std::vector<unsigned int> ComputePlacements(const nvmlGpuInstance_st& instance,
                                            unsigned int slices);
unsigned int CiRemainingCapacity(const nvmlGpuInstance_st& instance, unsigned int slices);
nvmlReturn_t CreateComputeInstance(nvmlGpuInstance_st& instance, unsigned int slices,
                                   HandleRegistry& handles, nvmlComputeInstance_st** out);
// IN_USE while a process runs on it.
nvmlReturn_t DestroyComputeInstance(nvmlComputeInstance_st& compute, HandleRegistry& handles);

// "MIG 1g.5gb" for a compute instance filling its GPU instance, else "MIG 1c.3g.20gb".
std::string ComputeProfileName(const nvmlGpuInstance_st& instance, unsigned int slices);
unsigned int ComputeMultiprocessors(const nvmlGpuInstance_st& instance, unsigned int slices);

// The GPU's MIG devices in handle-index order: by GPU-instance id, then compute-instance id.
std::vector<nvmlComputeInstance_st*> MigDevices(const GpuState& gpu);

// Creates the scenario's initial instances; errors name gpus[i].mig_instances[j].
absl::Status CreateInitialInstances(GpuState& gpu, HandleRegistry& handles);

// Destroys every GPU and compute instance of the GPU, processes or not (a GPU reset); their
// handles, and those of the MIG devices, become invalid.
void DestroyAllInstances(GpuState& gpu, HandleRegistry& handles);

// The GPU's MIG mode and instances as the node state file keeps them (node_state.h).
GpuMigRecord MigRecordOf(const GpuState& gpu);

// Makes the GPU's MIG mode and instances those of `record` (what another process left in the node
// state file): instances the record lacks are destroyed (their handles become invalid), those
// it adds are created with its ids and placements, and those in both keep their handles.
// InvalidArgument, changing nothing, when the record does not fit the GPU's MIG table.
absl::Status AdoptMigRecord(GpuState& gpu, const GpuMigRecord& record, HandleRegistry& handles);

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_MIG_H_
