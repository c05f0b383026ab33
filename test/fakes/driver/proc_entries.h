#ifndef GPUOP_TEST_FAKES_DRIVER_PROC_ENTRIES_H_
#define GPUOP_TEST_FAKES_DRIVER_PROC_ENTRIES_H_

// The NVIDIA kernel module's MIG capability files under /proc/driver, SIMULATED: what tells a
// container runtime (and gpuop's CDI component) which /dev/nvidia-caps/nvidia-cap<N> node guards
// the MIG config and monitor capabilities and each GPU and compute instance.
//
// A process cannot add files to procfs, so the simulated driver writes them into a directory
// (`--proc-driver DIR`, or GPUOP_SIMULATED_PROC_DRIVER) that the node mounts over /proc/driver
// (the node tier's sandbox does: test/cluster/node_sandbox_main.cc). Written, relative to DIR:
//
//   nvidia-caps/mig-minors                       every possible capability and its minor:
//       config 1
//       monitor 2
//       gpu<M>/gi<G>/access <3 + 135 M + 9 G>        G = 0..14, for each GPU minor M
//       gpu<M>/gi<G>/ci<C>/access <that + 1 + C>     C = 0..7
//   nvidia/capabilities/mig/config               DeviceFileMinor: 1, DeviceFileMode: 256
//   nvidia/capabilities/mig/monitor              DeviceFileMinor: 2, DeviceFileMode: 292
//
// (the layout of the real files: ../nvml/mig_cap_minors.h). The per-instance access files the real
// driver adds while an instance exists are not written: consumers fall back to mig-minors, as
// NVIDIA's toolkit does.

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace gpuop::fakedriver {

// The content of mig-minors for GPUs with these minor numbers.
std::string MigMinors(const std::vector<unsigned int>& gpu_minors);

// Writes the files above under `dir` (created), each atomically. Errors name the file.
absl::Status WriteProcEntries(const std::string& dir, const std::vector<unsigned int>& gpu_minors);

// Removes what WriteProcEntries wrote (the directories when left empty); missing files are fine.
absl::Status RemoveProcEntries(const std::string& dir);

}  // namespace gpuop::fakedriver

#endif  // GPUOP_TEST_FAKES_DRIVER_PROC_ENTRIES_H_
