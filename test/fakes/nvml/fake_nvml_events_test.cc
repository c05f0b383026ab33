// Scripted telemetry, scheduled and control-file events, event sets and waiting.

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "test/fakes/nvml/fake_nvml_test_util.h"

namespace gpuop::fakenvml {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr unsigned long long kAllEvents =
    nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError | nvmlEventTypeSingleBitEccError;

// The faults.yaml machine with a frozen clock that only the control file moves.
class FakeNvmlEvents : public FakeNvmlTest {
 protected:
  void SetUp() override {
    FakeNvmlTest::SetUp();
    UseControlFile();
    ASSERT_EQ(Start(TestData("faults.yaml")), NVML_SUCCESS);
    ASSERT_EQ(nvml.nvmlEventSetCreate(&set_), NVML_SUCCESS);
  }

  void Register(unsigned int gpu, unsigned long long types) {
    ASSERT_EQ(nvml.nvmlDeviceRegisterEvents(Gpu(gpu), types, set_), NVML_SUCCESS);
  }

  unsigned int Temperature(unsigned int gpu) {
    unsigned int value = 0;
    EXPECT_EQ(nvml.nvmlDeviceGetTemperature(Gpu(gpu), NVML_TEMPERATURE_GPU, &value), NVML_SUCCESS);
    return value;
  }

  // The next event, which must come without waiting.
  nvmlEventData_t Next() {
    nvmlEventData_t data{};
    EXPECT_EQ(nvml.nvmlEventSetWait_v2(set_, &data, 0), NVML_SUCCESS);
    return data;
  }

  void ExpectNoEvent() {
    nvmlEventData_t data{};
    EXPECT_EQ(nvml.nvmlEventSetWait_v2(set_, &data, 0), NVML_ERROR_TIMEOUT)
        << "unexpected event type " << data.eventType << " data " << data.eventData;
  }

  nvmlEventSet_t set_ = nullptr;
};

TEST_F(FakeNvmlEvents, WaitTimesOutWhenNothingHappens) {
  Register(0, nvmlEventTypeXidCriticalError);
  nvmlEventData_t data{};
  const auto start = steady_clock::now();
  EXPECT_EQ(nvml.nvmlEventSetWait_v2(set_, &data, 30), NVML_ERROR_TIMEOUT);
  EXPECT_GE(steady_clock::now() - start, milliseconds(30));
  EXPECT_EQ(nvml.nvmlEventSetWait_v2(set_, nullptr, 0), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(FakeNvmlEvents, ScriptedTelemetryFollowsTheScenarioClock) {
  EXPECT_EQ(Temperature(0), 40u);
  Control("advance 1s");
  EXPECT_EQ(Temperature(0), 50u);
  Control("advance 2s");
  EXPECT_EQ(Temperature(0), 70u);
  Control("advance 1s");
  EXPECT_EQ(Temperature(0), 70u) << "the series ended";
  nvmlUtilization_t utilization{};
  ASSERT_EQ(nvml.nvmlDeviceGetUtilizationRates(Gpu(0), &utilization), NVML_SUCCESS);
  EXPECT_EQ(utilization.gpu, 5u);
  Control("advance 6s");
  ASSERT_EQ(nvml.nvmlDeviceGetUtilizationRates(Gpu(0), &utilization), NVML_SUCCESS);
  EXPECT_EQ(utilization.gpu, 90u);
  // 28 W for 10 s, then 65 W.
  unsigned long long energy = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetTotalEnergyConsumption(Gpu(0), &energy), NVML_SUCCESS);
  EXPECT_EQ(energy, 280000u);
  Control("advance 2s");
  ASSERT_EQ(nvml.nvmlDeviceGetTotalEnergyConsumption(Gpu(0), &energy), NVML_SUCCESS);
  EXPECT_EQ(energy, 280000u + 130000u);
}

TEST_F(FakeNvmlEvents, ScheduledXidAndDoubleBitError) {
  Register(0, kAllEvents);
  Control("advance 2s");
  nvmlEventData_t data = Next();
  EXPECT_EQ(data.device, Gpu(0));
  EXPECT_EQ(data.eventType, nvmlEventTypeXidCriticalError);
  EXPECT_EQ(data.eventData, 13u);
  EXPECT_EQ(data.gpuInstanceId, 0xFFFFFFFFu);
  EXPECT_EQ(data.computeInstanceId, 0xFFFFFFFFu);
  ExpectNoEvent();

  Control("advance 1s");
  data = Next();
  EXPECT_EQ(data.eventType, nvmlEventTypeDoubleBitEccError);
  data = Next();
  EXPECT_EQ(data.eventType, nvmlEventTypeXidCriticalError);
  EXPECT_EQ(data.eventData, 48u) << "the driver reports a DBE as XID 48 too";
  ExpectNoEvent();
  unsigned long long count = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetTotalEccErrors(Gpu(0), NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                             NVML_VOLATILE_ECC, &count),
            NVML_SUCCESS);
  EXPECT_EQ(count, 1u);
  ASSERT_EQ(nvml.nvmlDeviceGetTotalEccErrors(Gpu(0), NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                             NVML_AGGREGATE_ECC, &count),
            NVML_SUCCESS);
  EXPECT_EQ(count, 1u);
  // Turing retires the page.
  unsigned int pages = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetRetiredPages(Gpu(0), NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
                                           &pages, nullptr),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(pages, 1u);
  nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
  ASSERT_EQ(nvml.nvmlDeviceGetRetiredPagesPendingStatus(Gpu(0), &pending), NVML_SUCCESS);
  EXPECT_EQ(pending, NVML_FEATURE_ENABLED);
}

TEST_F(FakeNvmlEvents, LostGpuAnswersGpuIsLostUntilRecovered) {
  Register(1, nvmlEventTypeXidCriticalError);
  nvmlDevice_t rtx = Gpu(1);
  Control("advance 4s");
  const nvmlEventData_t data = Next();
  EXPECT_EQ(data.device, rtx);
  EXPECT_EQ(data.eventData, 79u) << "fallen off the bus";
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  unsigned int value = 0;
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(nvml.nvmlDeviceGetName(rtx, name, sizeof(name)), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(rtx, NVML_TEMPERATURE_GPU, &value),
            NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(1, &device), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvml.nvmlDeviceRegisterEvents(rtx, nvmlEventTypeXidCriticalError, set_),
            NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(Temperature(0), 70u) << "the other GPUs carry on";
  Control("advance 2s");
  EXPECT_EQ(nvml.nvmlDeviceGetName(rtx, name, sizeof(name)), NVML_SUCCESS);
  ExpectNoEvent();
}

TEST_F(FakeNvmlEvents, ControlFileInjectsFaults) {
  Register(2, kAllEvents);
  Control("xid 2 31");
  EXPECT_EQ(Next().eventData, 31u);
  Control("xid 2 43 2 0");
  const nvmlEventData_t data = Next();
  EXPECT_EQ(data.gpuInstanceId, 2u);
  EXPECT_EQ(data.computeInstanceId, 0u);
  Control("ecc-sbe 2");
  EXPECT_EQ(Next().eventType, nvmlEventTypeSingleBitEccError);
  Control("ecc-dbe 2");
  EXPECT_EQ(Next().eventType, nvmlEventTypeDoubleBitEccError);
  EXPECT_EQ(Next().eventData, 48u);
  // Ampere remaps the row, which a MIG-enabled GPU with instances does not report (nvml.h);
  // FakeNvmlMigEnabled.RemappedRowsFollowMigInstances reads it on GPUs that do.
  unsigned int rows[4] = {};
  EXPECT_EQ(nvml.nvmlDeviceGetRemappedRows(Gpu(2), &rows[0], &rows[1], &rows[2], &rows[3]),
            NVML_ERROR_NOT_SUPPORTED);
  unsigned long long count = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetTotalEccErrors(Gpu(2), NVML_MEMORY_ERROR_TYPE_CORRECTED,
                                             NVML_VOLATILE_ECC, &count),
            NVML_SUCCESS);
  EXPECT_EQ(count, 1u);

  Control("lost 2");
  EXPECT_EQ(Next().eventData, 79u);
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(2, &device), NVML_ERROR_GPU_IS_LOST);
  Control("recover 2");
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(2, &device), NVML_SUCCESS);

  ::testing::internal::CaptureStderr();
  Control("explode 2");
  Control("set 2 warp_speed 9");
  EXPECT_EQ(Temperature(0), 40u);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, ::testing::HasSubstr("unknown command \"explode\""));
  EXPECT_THAT(log, ::testing::HasSubstr("warp_speed"));
}

TEST_F(FakeNvmlEvents, ProcessesComeAndGo) {
  auto processes = [&](unsigned int gpu) {
    unsigned int count = 0;
    const nvmlReturn_t result =
        nvml.nvmlDeviceGetComputeRunningProcesses_v3(Gpu(gpu), &count, nullptr);
    EXPECT_TRUE(result == NVML_SUCCESS || result == NVML_ERROR_INSUFFICIENT_SIZE);
    return count;
  };
  EXPECT_EQ(processes(0), 3u);
  Control("advance 5s");
  EXPECT_EQ(processes(0), 4u);
  nvmlMemory_v2_t memory{};
  memory.version = nvmlMemory_v2;
  ASSERT_EQ(nvml.nvmlDeviceGetMemoryInfo_v2(Gpu(0), &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.used, (1024ULL + 2048 + 512 + 8192) << 20);
  Control("advance 3s");
  EXPECT_EQ(processes(0), 3u);

  Control("process 1 4242 1000");
  Control("process 1 4242 1500");  // the same pid: an update
  EXPECT_EQ(processes(1), 1u);
  Control("process 2 4243 100 2 0");
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(nvml.nvmlDeviceGetMigDeviceHandleByIndex(Gpu(2), 0, &mig), NVML_SUCCESS);
  nvmlProcessInfo_t infos[4] = {};
  unsigned int count = 4;
  ASSERT_EQ(nvml.nvmlDeviceGetComputeRunningProcesses_v3(mig, &count, infos), NVML_SUCCESS);
  EXPECT_EQ(count, 2u) << "the MIG device sees the processes in its instance";
  nvmlComputeInstance_t compute = nullptr;
  nvmlGpuInstance_t instance = nullptr;
  ASSERT_EQ(nvml.nvmlDeviceGetGpuInstanceById(Gpu(2), 2, &instance), NVML_SUCCESS);
  unsigned int found = 0;
  ASSERT_EQ(nvml.nvmlGpuInstanceGetComputeInstances(instance, 2, &compute, &found), NVML_SUCCESS);
  ASSERT_EQ(found, 1u);
  EXPECT_EQ(nvml.nvmlComputeInstanceDestroy(compute), NVML_ERROR_IN_USE);
  Control("process-exit 1 4242");
  EXPECT_EQ(processes(1), 0u);
}

TEST_F(FakeNvmlEvents, OnlyRegisteredDevicesAndTypesAreDelivered) {
  Register(0, nvmlEventTypeXidCriticalError);
  Control("ecc-sbe 0");
  Control("xid 2 13");
  ExpectNoEvent();
  // The consumer card has no ECC events to register for.
  unsigned long long supported = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetSupportedEventTypes(Gpu(1), &supported), NVML_SUCCESS);
  EXPECT_EQ(supported & nvmlEventTypeDoubleBitEccError, 0u);
  EXPECT_EQ(nvml.nvmlDeviceRegisterEvents(Gpu(1), nvmlEventTypeDoubleBitEccError, set_),
            NVML_ERROR_NOT_SUPPORTED);
  // Events before registration are not replayed.
  Control("xid 1 62");
  Register(1, nvmlEventTypeXidCriticalError);
  ExpectNoEvent();
  Control("xid 1 63");
  EXPECT_EQ(Next().eventData, 63u);
}

// nvml.h: after XID 79 the GPU has fallen off the bus: queries answer GPU_IS_LOST and the
// handle lookups fail, until a reset (the control file's `recover`) or a restart; the driver
// also signals nvmlEventTypeGpuUnavailableError.
TEST_F(FakeNvmlEvents, Xid79TakesTheGpuOffTheBusUntilItIsReset) {
  Register(2, nvmlEventTypeXidCriticalError | nvmlEventTypeGpuUnavailableError);
  nvmlDevice_t gpu = Gpu(2);  // a handle taken before the loss: lookups fail after it
  Control("xid 2 79");
  const nvmlEventData_t xid = Next();
  EXPECT_EQ(xid.eventType, nvmlEventTypeXidCriticalError);
  EXPECT_EQ(xid.eventData, 79u);
  EXPECT_EQ(Next().eventType, nvmlEventTypeGpuUnavailableError);
  unsigned int temperature = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(gpu, NVML_TEMPERATURE_GPU, &temperature),
            NVML_ERROR_GPU_IS_LOST);
  nvmlDevice_t handle = nullptr;
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(2, &handle), NVML_ERROR_GPU_IS_LOST);
  Control("recover 2");
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(2, &handle), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(gpu, NVML_TEMPERATURE_GPU, &temperature), NVML_SUCCESS);
}

// nvml.h's NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: the driver's recovery action, settable here.
TEST_F(FakeNvmlEvents, TheRecoveryActionFieldFollowsTheControlFile) {
  nvmlFieldValue_t field{};
  field.fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION;
  ASSERT_EQ(nvml.nvmlDeviceGetFieldValues(Gpu(0), 1, &field), NVML_SUCCESS);
  EXPECT_EQ(field.nvmlReturn, NVML_SUCCESS);
  EXPECT_EQ(field.value.uiVal, 0u) << "NONE";
  Control("set 0 recovery_action 2");
  ASSERT_EQ(nvml.nvmlDeviceGetFieldValues(Gpu(0), 1, &field), NVML_SUCCESS);
  EXPECT_EQ(field.value.uiVal, 2u) << "NODE_REBOOT";
}

TEST_F(FakeNvmlEvents, ScheduledXidCanNameAMigInstance) {
  Register(2, nvmlEventTypeXidCriticalError);
  Control("advance 7s");
  const nvmlEventData_t data = Next();
  EXPECT_EQ(data.eventData, 94u);
  EXPECT_EQ(data.gpuInstanceId, 2u);
  EXPECT_EQ(data.computeInstanceId, 0u);
}

TEST_F(FakeNvmlEvents, ReachingTheShutdownTemperatureLosesTheGpu) {
  Register(1, nvmlEventTypeXidCriticalError);
  Control("set 1 temperature_c 89");
  ExpectNoEvent();
  Control("set 1 temperature_c 91");
  EXPECT_EQ(Next().eventData, 79u);
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  EXPECT_EQ(nvml.nvmlDeviceGetName(Gpu(0), name, sizeof(name)), NVML_SUCCESS);
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(1, &device), NVML_ERROR_GPU_IS_LOST);
}

TEST_F(FakeNvmlEvents, WaitWakesWhenTheControlFileGrows) {
  Register(0, nvmlEventTypeXidCriticalError);
  auto waiter = std::async(std::launch::async, [&] {
    nvmlEventData_t data{};
    const nvmlReturn_t result = nvml.nvmlEventSetWait_v2(set_, &data, 20000);
    return std::make_pair(result, data.eventData);
  });
  std::this_thread::sleep_for(milliseconds(5));
  Control("xid 0 45");
  ASSERT_EQ(waiter.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const auto [result, xid] = waiter.get();
  EXPECT_EQ(result, NVML_SUCCESS);
  EXPECT_EQ(xid, 45u);
}

TEST_F(FakeNvmlEvents, FreeingASetOrShuttingDownReleasesWaiters) {
  auto waiter = std::async(std::launch::async, [&] {
    nvmlEventData_t data{};
    return nvml.nvmlEventSetWait_v2(set_, &data, 20000);
  });
  std::this_thread::sleep_for(milliseconds(5));
  ASSERT_EQ(nvml.nvmlEventSetFree(set_), NVML_SUCCESS);
  ASSERT_EQ(waiter.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(waiter.get(), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlEventSetFree(set_), NVML_ERROR_INVALID_ARGUMENT);

  ASSERT_EQ(nvml.nvmlEventSetCreate(&set_), NVML_SUCCESS);
  waiter = std::async(std::launch::async, [&] {
    nvmlEventData_t data{};
    return nvml.nvmlEventSetWait_v2(set_, &data, 20000);
  });
  std::this_thread::sleep_for(milliseconds(5));
  ASSERT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);
  ASSERT_EQ(waiter.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(waiter.get(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(FakeNvmlEvents, ConcurrentCallersAndWaiters) {
  constexpr int kEvents = 20;
  nvmlEventSet_t second = nullptr;
  ASSERT_EQ(nvml.nvmlEventSetCreate(&second), NVML_SUCCESS);
  Register(0, nvmlEventTypeXidCriticalError);
  ASSERT_EQ(nvml.nvmlDeviceRegisterEvents(Gpu(0), nvmlEventTypeXidCriticalError, second),
            NVML_SUCCESS);
  auto collect = [&](nvmlEventSet_t set) {
    int received = 0;
    const auto deadline = steady_clock::now() + std::chrono::seconds(20);
    while (received < kEvents && steady_clock::now() < deadline) {
      nvmlEventData_t data{};
      if (nvml.nvmlEventSetWait_v2(set, &data, 100) == NVML_SUCCESS) ++received;
    }
    return received;
  };
  auto first_waiter = std::async(std::launch::async, collect, set_);
  auto second_waiter = std::async(std::launch::async, collect, second);
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&] {
      nvmlDevice_t gpu = Gpu(0);
      while (!stop) {
        unsigned int temperature = 0;
        nvmlMemory_t memory{};
        EXPECT_EQ(nvml.nvmlDeviceGetTemperature(gpu, NVML_TEMPERATURE_GPU, &temperature),
                  NVML_SUCCESS);
        EXPECT_EQ(nvml.nvmlDeviceGetMemoryInfo(gpu, &memory), NVML_SUCCESS);
      }
    });
  }
  for (int i = 0; i < kEvents; ++i) Control("xid 0 " + std::to_string(100 + i));
  EXPECT_EQ(first_waiter.get(), kEvents);
  EXPECT_EQ(second_waiter.get(), kEvents);
  stop = true;
  for (std::thread& reader : readers) reader.join();
}

using FakeNvmlClock = FakeNvmlTest;

TEST_F(FakeNvmlClock, TimeScaleRunsTheTimelineFaster) {
  // A scenario second lasts a real millisecond; the XID due at 2 s arrives within the wait.
  setenv("GPUOP_FAKE_NVML_TIME_SCALE", "1000", 1);
  ASSERT_EQ(Start(TestData("faults.yaml")), NVML_SUCCESS);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(nvml.nvmlEventSetCreate(&set), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceRegisterEvents(Gpu(0), nvmlEventTypeXidCriticalError, set),
            NVML_SUCCESS);
  nvmlEventData_t data{};
  ASSERT_EQ(nvml.nvmlEventSetWait_v2(set, &data, 10000), NVML_SUCCESS);
  EXPECT_EQ(data.eventData, 13u);
  ASSERT_EQ(nvml.nvmlEventSetFree(set), NVML_SUCCESS);
}

TEST_F(FakeNvmlClock, BadTimeScaleIsNotLoaded) {
  ForgetPrintedFailures();
  setenv("GPUOP_FAKE_NVML_TIME_SCALE", "fast", 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Start("no-gpus"), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              ::testing::HasSubstr("GPUOP_FAKE_NVML_TIME_SCALE"));
}

class FakeNvmlMigEnabled : public FakeNvmlTest {};

TEST_F(FakeNvmlMigEnabled, RemappedRowsFollowMigInstances) {
  // a100-8x-mig: GPU 0 has MIG on with instances, GPU 3 MIG on and empty, GPU 4 MIG off.
  UseControlFile();
  ASSERT_EQ(Start("a100-8x-mig"), NVML_SUCCESS);
  unsigned int corrected = 9;
  unsigned int uncorrected = 9;
  unsigned int pending = 9;
  unsigned int failure = 9;
  EXPECT_EQ(nvml.nvmlDeviceGetRemappedRows(Gpu(0), &corrected, &uncorrected, &pending, &failure),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetRemappedRows(Gpu(3), &corrected, &uncorrected, &pending, &failure),
            NVML_SUCCESS);
  Control("ecc-dbe 4");
  ASSERT_EQ(nvml.nvmlDeviceGetRemappedRows(Gpu(4), &corrected, &uncorrected, &pending, &failure),
            NVML_SUCCESS);
  EXPECT_EQ(corrected, 0u);
  EXPECT_EQ(uncorrected, 1u);
  EXPECT_EQ(pending, 1u);
  EXPECT_EQ(failure, 0u);
  // Utilization is not reported on MIG-enabled GPUs at all.
  nvmlUtilization_t utilization{};
  EXPECT_EQ(nvml.nvmlDeviceGetUtilizationRates(Gpu(3), &utilization), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetUtilizationRates(Gpu(4), &utilization), NVML_SUCCESS);
}

}  // namespace
}  // namespace gpuop::fakenvml
