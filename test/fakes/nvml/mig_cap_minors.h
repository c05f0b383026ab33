#ifndef GPUOP_TEST_FAKES_NVML_MIG_CAP_MINORS_H_
#define GPUOP_TEST_FAKES_NVML_MIG_CAP_MINORS_H_

// The minor numbers of the NVIDIA driver's MIG capabilities, as its
// /proc/driver/nvidia-caps/mig-minors lists them: config 1, monitor 2, then per GPU minor M
// fifteen GPU instances of eight compute instances each,
//   gpu<M>/gi<G>/access        3 + 135 M + 9 G
//   gpu<M>/gi<G>/ci<C>/access  3 + 135 M + 9 G + 1 + C
// The device node of capability minor N is /dev/nvidia-caps/nvidia-cap<N>. Shared by the fake
// NVML (which creates the nodes of existing instances, as the real user-space driver does) and the
// simulated driver (which publishes the proc files).

namespace gpuop::fakenvml {

inline constexpr unsigned int kMigGpuInstancesPerGpu = 15;
inline constexpr unsigned int kMigComputeInstancesPerGi = 8;
inline constexpr unsigned int kMigConfigMinor = 1;
inline constexpr unsigned int kMigMonitorMinor = 2;

// gpu<gpu_minor>/gi<gi>/access when `ci` < 0, else .../ci<ci>/access.
inline unsigned int MigCapabilityMinor(unsigned int gpu_minor, unsigned int gi, int ci = -1) {
  const unsigned int access = 3 +
                              gpu_minor * kMigGpuInstancesPerGpu * (1 + kMigComputeInstancesPerGi) +
                              gi * (1 + kMigComputeInstancesPerGi);
  return ci < 0 ? access : access + 1 + static_cast<unsigned int>(ci);
}

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_MIG_CAP_MINORS_H_
