#ifndef GPUOP_TEST_FAKES_NVML_CALL_ERRORS_H_
#define GPUOP_TEST_FAKES_NVML_CALL_ERRORS_H_

// Errors a GPU answers from chosen calls, as real GPUs do: nvml.h lists NO_PERMISSION and
// UNKNOWN among the returns of nearly every device query (a GPU whose device node the process
// may not open answers NO_PERMISSION from nvmlDeviceGetHandleByIndex_v2; a wedged GPU answers
// UNKNOWN), and NOT_SUPPORTED where a board lacks a feature. A scenario sets them per GPU
// (`errors: {nvmlDeviceGetPowerUsage: NO_PERMISSION, "*": UNKNOWN}`) and the control file
// changes them (`fail <gpu> <call|*> <error>`, `unfail <gpu>`).

#include <map>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hw/nvml/nvml_abi.h"

namespace gpuop::fakenvml {

// Call name ("nvmlDeviceGetPowerUsage", or "*" for every call on the GPU) -> the error it answers.
using CallErrors = std::map<std::string, nvmlReturn_t, std::less<>>;

// "NO_PERMISSION", "UNKNOWN", "NOT_SUPPORTED" or "TIMEOUT" (the NVML_ERROR_ suffix);
// InvalidArgument naming the text and the choices otherwise.
absl::StatusOr<nvmlReturn_t> ParseInjectedError(absl::string_view name);

// `errors` of a GPU entry at `path`: a map of call name (nvml...) or "*" to an error name.
absl::StatusOr<CallErrors> ReadCallErrors(const YAML::Node& node, absl::string_view path);

// The error `call` answers under `errors` (its own entry, else "*"), or NVML_SUCCESS.
nvmlReturn_t InjectedError(const CallErrors& errors, std::string_view call);

// The function's name in a compiler's pretty function name ("nvmlReturn_t
// nvmlDeviceGetPowerUsage(nvmlDevice_t, unsigned int*)" -> "nvmlDeviceGetPowerUsage").
std::string_view CallName(std::string_view pretty_function);

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_CALL_ERRORS_H_
