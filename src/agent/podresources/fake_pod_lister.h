#ifndef GPUOP_AGENT_PODRESOURCES_FAKE_POD_LISTER_H_
#define GPUOP_AGENT_PODRESOURCES_FAKE_POD_LISTER_H_

#include <atomic>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "agent/podresources/pod_resources.h"

namespace gpuop::agent::podresources {

// A PodLister answering what the test says: the kubelet played by a test. Thread-safe.
class FakePodLister final : public PodLister {
 public:
  absl::StatusOr<std::vector<PodDevice>> List(absl::Duration /*timeout*/) override {
    calls_.fetch_add(1);
    absl::MutexLock lock(&mu_);
    return answer_;
  }
  // Every later List() returns `answer` (devices, or the kubelet's failure).
  void Set(absl::StatusOr<std::vector<PodDevice>> answer) {
    absl::MutexLock lock(&mu_);
    answer_ = std::move(answer);
  }
  int calls() const { return calls_.load(); }

 private:
  absl::Mutex mu_;
  absl::StatusOr<std::vector<PodDevice>> answer_ ABSL_GUARDED_BY(mu_) = std::vector<PodDevice>{};
  std::atomic<int> calls_{0};
};

}  // namespace gpuop::agent::podresources

#endif  // GPUOP_AGENT_PODRESOURCES_FAKE_POD_LISTER_H_
