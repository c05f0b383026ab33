#ifndef GPUOP_HW_CUDA_CUDA_VALIDATOR_H_
#define GPUOP_HW_CUDA_CUDA_VALIDATOR_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gpuop::hw {

struct CudaValidationOptions {
  // libcuda to load; the soname by default, a full path for a containerised driver root.
  std::string library_path = "libcuda.so.1";
  // Which GPU: a PCI bus id ("0000:17:00.0") when set, otherwise the CUDA ordinal.
  std::string pci_bus_id;
  int ordinal = 0;
  // Elements per vector.
  int elements = 1 << 20;
};

struct CudaValidationResult {
  std::string device_name;
  int ordinal = 0;
  int driver_version = 0;  // 12080 for CUDA 12.8
  int elements = 0;
  absl::Duration elapsed;  // load, copy, run, copy back
};

// Proves that a GPU can run CUDA work: loads libcuda with dlopen (no toolkit needed), creates a
// context, JIT-compiles a vector-add kernel from PTX, runs it on `elements` floats, copies the
// result back and checks every element, then frees everything it allocated, also on failure.
//
// NotFound when libcuda is missing (no driver); FailedPrecondition naming the CUDA function and
// its error otherwise ("cuCtxCreate_v2(GPU 0): CUDA_ERROR_SYSTEM_NOT_READY"); DataLoss when a
// result is wrong, naming the first wrong element.
[[nodiscard]] absl::StatusOr<CudaValidationResult> ValidateCuda(
    const CudaValidationOptions& options = {});

// The PTX of the validation kernel `vector_add(const float* a, const float* b, float* c, u32 n)`.
const char* VectorAddPtx();

}  // namespace gpuop::hw

#endif  // GPUOP_HW_CUDA_CUDA_VALIDATOR_H_
