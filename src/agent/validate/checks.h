#ifndef GPUOP_AGENT_VALIDATE_CHECKS_H_
#define GPUOP_AGENT_VALIDATE_CHECKS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hw/accelerator.h"
#include "hw/cuda/cuda_validator.h"
#include "kube/client/client.h"

namespace gpuop::agent {

// One step of the validation: its name ("driver", "cuda", "device-plugin") and the check, which
// returns what it proved ("driver 570.86.15, 8 GPUs") or why it failed.
struct ValidationCheck {
  std::string name;
  std::function<absl::StatusOr<std::string>()> run;
};

// The driver works: every accelerator's library answers, reports a driver version and at least
// one GPU in total.
ValidationCheck DriverCheck(std::vector<hw::Accelerator*> accelerators);

// Runs the vector add on one MIG device ("MIG-<uuid>") in a process of its own and says what
// ran: CUDA enumerates a MIG device only through CUDA_VISIBLE_DEVICES set before cuInit, and at
// most one MIG device per process (NVIDIA's MIG user guide, "CUDA device enumeration").
using MigCudaRunner = std::function<absl::StatusOr<std::string>(const std::string& mig_uuid)>;

// Every NVIDIA GPU runs the vector-add kernel through the CUDA driver (hw/cuda): a whole GPU in
// this process, addressed by its PCI bus id; a MIG-enabled GPU on each of its MIG devices,
// through `mig_runner` (FailedPrecondition without one). A MIG-enabled GPU without MIG devices
// has nothing CUDA can run on and is skipped. Passes with "not applicable" when the node has no
// NVIDIA GPUs.
ValidationCheck CudaCheck(std::vector<hw::Accelerator*> accelerators,
                          hw::CudaValidationOptions options, MigCudaRunner mig_runner = nullptr);

// The kubelet advertises the GPUs: for each vendor, the Node's allocatable resources in its
// domain (nvidia.com/, amd.com/) add up to at least the devices the GPUs yield (a MIG GPU
// without instances yields none). `allocatable` reads the Node's status.allocatable.
using AllocatableReader = std::function<absl::StatusOr<std::map<std::string, std::string>>()>;
ValidationCheck DevicePluginCheck(std::vector<hw::Accelerator*> accelerators,
                                  AllocatableReader allocatable);

// Reads the Node's allocatable resources from the API server.
AllocatableReader NodeAllocatable(kube::Client& client, std::string node_name);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_VALIDATE_CHECKS_H_
