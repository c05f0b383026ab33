#ifndef GPUOP_AGENT_EXPORTER_TEST_UTIL_H_
#define GPUOP_AGENT_EXPORTER_TEST_UTIL_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "agent/podresources/pod_resources.h"
#include "hw/accelerator.h"

// Test doubles and helpers shared by the exporter's tests.
namespace gpuop::agent::exporter::testing {

// An accelerator with a fixed inventory whose samples, failures and events the test sets.
// Counts the calls made to it. Thread-safe.
class FakeAccelerator final : public hw::Accelerator {
 public:
  FakeAccelerator(hw::Inventory inventory, hw::Sample sample);

  hw::Vendor vendor() const override { return hw::Vendor::kNvidia; }
  absl::StatusOr<hw::Inventory> Discover() override;
  absl::StatusOr<hw::Sample> TakeSample() override;
  // Returns queued events at once, otherwise waits up to `timeout` (real time) for one.
  absl::StatusOr<std::vector<hw::HardwareEvent>> WaitEvents(absl::Duration timeout) override;
  absl::Status SetPowerLimit(int, double) override { return absl::UnimplementedError("fake"); }
  absl::StatusOr<bool> SetMigMode(int, bool) override { return absl::UnimplementedError("fake"); }
  absl::StatusOr<hw::MigDevice> CreateMigDevice(int, const std::string&) override {
    return absl::UnimplementedError("fake");
  }
  absl::Status DestroyMigDevice(int, unsigned int) override {
    return absl::UnimplementedError("fake");
  }

  void SetSample(hw::Sample sample);
  // Every TakeSample fails with `status` until it is OK again.
  void FailSamples(absl::Status status);
  void PushEvent(hw::HardwareEvent event);

  int samples() const { return samples_.load(); }
  int discovers() const { return discovers_.load(); }

 private:
  mutable absl::Mutex mu_;
  hw::Inventory inventory_ ABSL_GUARDED_BY(mu_);
  hw::Sample sample_ ABSL_GUARDED_BY(mu_);
  absl::Status sample_error_ ABSL_GUARDED_BY(mu_);
  std::vector<hw::HardwareEvent> events_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> samples_{0};
  std::atomic<int> discovers_{0};
};

// A node with two GPUs that exercises every rendering path: GPU 0 ("GPU-0000") a whole GPU whose
// model name needs escaping; GPU 1 ("GPU-1111") an A100 in MIG mode with GPU instance 1
// (3g.20gb) split into two compute instances "MIG-1111-a" and "MIG-1111-b", and GPU instance
// 13 (1g.5gb) with one, "MIG-1111-c". Driver "570.86.15".
hw::Inventory SmallInventory();
// Telemetry for SmallInventory(), with processes in both MIG instances.
hw::Sample SmallSample();

// Runs `promtool check metrics` on `text`. Returns the problems it reports other than those
// dcgm-exporter's own names and labels draw (its counters lack "_total" and one is named
// *_COUNTER; its modelName label is camelCase), and a line for a text promtool cannot parse: an
// empty list means clean. FailedPrecondition when promtool is not installed.
absl::StatusOr<std::vector<std::string>> PromtoolProblems(const std::string& text);

}  // namespace gpuop::agent::exporter::testing

#endif  // GPUOP_AGENT_EXPORTER_TEST_UTIL_H_
