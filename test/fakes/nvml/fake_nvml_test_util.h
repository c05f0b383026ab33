#ifndef GPUOP_TEST_FAKES_NVML_FAKE_NVML_TEST_UTIL_H_
#define GPUOP_TEST_FAKES_NVML_FAKE_NVML_TEST_UTIL_H_

// What the fake NVML library's tests share: the library loaded with dlopen by its path and every
// entry point resolved with dlsym (as the NVML backend does), and a fixture that points the
// library at a scenario and shuts it down fully afterwards.

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hw/nvml/nvml_abi.h"
#include "hw/nvml/nvml_functions.h"

namespace gpuop::fakenvml {

// The library's entry points.
struct Nvml {
#define GPUOP_FAKE_NVML_FIELD(name, params) nvmlReturn_t(*name) params = nullptr;
  GPUOP_NVML_REQUIRED_FUNCTIONS(GPUOP_FAKE_NVML_FIELD)
  GPUOP_NVML_OPTIONAL_FUNCTIONS(GPUOP_FAKE_NVML_FIELD)
#undef GPUOP_FAKE_NVML_FIELD
  nvmlErrorString_fn nvmlErrorString = nullptr;
  // Unversioned names older consumers use.
  nvmlReturn_t (*nvmlInit)() = nullptr;
  nvmlReturn_t (*nvmlDeviceGetCount)(unsigned int*) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetHandleByIndex)(unsigned int, nvmlDevice_t*) = nullptr;
};

// The fake loaded from its build path (never unloaded), every symbol resolved. Symbols that are
// missing stay null; NvmlMissingSymbols() lists them.
const Nvml& LoadNvml();
std::string NvmlMissingSymbols();
// The path the fake was loaded from, and its dlopen handle (for entry points Nvml leaves out).
const char* NvmlLibraryPath();
void* NvmlLibrary();

class FakeNvmlTest : public ::testing::Test {
 protected:
  // Clears every GPUOP_FAKE_NVML_* variable and makes a private temporary directory.
  void SetUp() override;
  // Shuts the library down fully, so that the next test starts from a fresh machine.
  void TearDown() override;

  // Points GPUOP_FAKE_NVML_SCENARIO at `scenario` (a preset name or a path) and initialises.
  nvmlReturn_t Start(const std::string& scenario);
  // Freezes the scenario clock (GPUOP_FAKE_NVML_TIME_SCALE=0) and sets up a control file; call
  // before Start.
  void UseControlFile();
  // Appends one line to the control file.
  void Control(const std::string& line);
  // The library prints each reason for a failed init once, until an init succeeds; a test that
  // checks the message calls this first (before setting any variable) so that it is printed.
  void ForgetPrintedFailures();
  // Writes `contents` to a file in the test's directory and returns its path.
  std::string WriteFile(const std::string& name, const std::string& contents);
  // The handle of GPU `index`; fails the test when there is none.
  nvmlDevice_t Gpu(unsigned int index);

  const Nvml& nvml = LoadNvml();
  std::string dir_;
  std::string control_;
};

// "testdata/<name>" of the fake's sources.
std::string TestData(const std::string& name);

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_FAKE_NVML_TEST_UTIL_H_
