// Pod attribution end to end: gpuop's device plugin serves a fake NVML machine to the fake
// kubelet, pods are admitted through it, and the collector reads PodResources over real gRPC.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/exporter/collector.h"
#include "agent/exporter/fake_node.h"
#include "agent/exporter/test_util.h"

namespace gpuop::agent::exporter {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

// The lines of `text` that start with `prefix`.
std::vector<std::string> Lines(const std::string& text, absl::string_view prefix) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, prefix)) out.emplace_back(line);
  }
  return out;
}

class ExporterPodsTest : public ::testing::Test {
 protected:
  void Start(testing::FakeNode::Options options) {
    auto node = testing::FakeNode::Start(options);
    ASSERT_TRUE(node.ok()) << node.status();
    node_ = *std::move(node);
    lister_ = podresources::NewKubeletPodLister(node_->pod_resources_socket());
    collector_ = std::make_unique<Collector>(CollectorOptions{
        .accelerators = {&node_->exporter_nvml()}, .pods = lister_.get(), .node_name = "node-1"});
    auto inventory = node_->exporter_nvml().Discover();
    ASSERT_TRUE(inventory.ok());
    inventory_ = *inventory;
  }

  std::string Collect() {
    collector_->CollectOnce();
    return *collector_->Exposition();
  }

  // The dcgm label prefix of GPU `index`.
  std::string GpuLabels(int index) {
    return absl::StrCat("{gpu=\"", index, "\",UUID=\"", inventory_.gpus[index].uuid, "\"");
  }

  std::unique_ptr<testing::FakeNode> node_;
  std::unique_ptr<podresources::PodLister> lister_;
  std::unique_ptr<Collector> collector_;
  hw::Inventory inventory_;
};

TEST_F(ExporterPodsTest, WholeGpusCarryTheirPodsLabels) {
  Start({.scenario = "h100-8x-nvswitch"});
  auto ids = node_->Allocate("ml", "train", "nvidia.com/gpu", 2);
  ASSERT_TRUE(ids.ok()) << ids.status();
  const std::string text = Collect();
  int held = 0;
  for (int i = 0; i < 8; ++i) {
    const std::vector<std::string> temp = Lines(text, "DCGM_FI_DEV_GPU_TEMP" + GpuLabels(i));
    ASSERT_THAT(temp, SizeIs(1)) << i;
    const bool holds = std::find(ids->begin(), ids->end(), inventory_.gpus[i].uuid) != ids->end();
    held += holds;
    if (holds) {
      EXPECT_THAT(temp[0], HasSubstr(",container=\"main\",namespace=\"ml\",pod=\"train\"}"));
    } else {
      EXPECT_THAT(temp[0], Not(HasSubstr("pod=")));
    }
  }
  EXPECT_EQ(held, 2);
  EXPECT_THAT(text, HasSubstr("gpuop_exporter_pod_resources_errors_total 0\n"));
}

TEST_F(ExporterPodsTest, MigDevicesCarryTheirPodsOnInstanceSeries) {
  Start({.scenario = "a100-8x-mig",
         .plugin_config = "flags:\n  migStrategy: mixed\n",
         .resource = "nvidia.com/mig-3g.20gb",
         .devices = 2});
  auto ids = node_->Allocate("ml", "infer", "nvidia.com/mig-3g.20gb");
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_THAT(*ids, SizeIs(1));
  const hw::MigDevice* mig = nullptr;
  const hw::Gpu* parent = nullptr;
  for (const hw::Gpu& gpu : inventory_.gpus) {
    for (const hw::MigDevice& m : gpu.mig_devices) {
      if (m.uuid == (*ids)[0]) {
        mig = &m;
        parent = &gpu;
      }
    }
  }
  ASSERT_NE(mig, nullptr);
  const std::string text = Collect();
  const std::string instance =
      absl::StrCat("GPU_I_PROFILE=\"3g.20gb\",GPU_I_ID=\"", mig->gpu_instance_id, "\"");
  const std::vector<std::string> used =
      Lines(text, "DCGM_FI_DEV_FB_USED" + GpuLabels(parent->index));
  // The GPU-level series, one per GPU instance (two 3g.20gb on GPU 1).
  ASSERT_THAT(used, SizeIs(3)) << text;
  EXPECT_THAT(used[0], Not(HasSubstr("pod=")));
  int with_pod = 0;
  for (const std::string& line : used) {
    if (line.find(instance) == std::string::npos) continue;
    EXPECT_THAT(line, HasSubstr(",container=\"main\",namespace=\"ml\",pod=\"infer\"}"));
    ++with_pod;
  }
  EXPECT_EQ(with_pod, 1);
  // GPU-level series of a MIG GPU stay without pod labels.
  EXPECT_THAT(Lines(text, "DCGM_FI_DEV_GPU_TEMP" + GpuLabels(parent->index))[0],
              Not(HasSubstr("pod=")));
}

// Time-sliced replicas: one series per GPU (with one holder's pod labels, as dcgm-exporter
// without --kubernetes-virtual-gpus), so sums over pods count each GPU once; energy is split.
TEST_F(ExporterPodsTest, TimeSlicedReplicasGiveOneSeriesPerGpuAndSplitEnergy) {
  Start({.scenario = "h100-8x-nvswitch",
         .plugin_config = "sharing:\n  timeSlicing:\n    resources:\n"
                          "    - name: nvidia.com/gpu\n      replicas: 2\n",
         .devices = 16});
  for (int i = 0; i < 16; ++i) {
    auto ids = node_->Allocate("ml", absl::StrCat("pod-", i), "nvidia.com/gpu");
    ASSERT_TRUE(ids.ok()) << ids.status();
    ASSERT_THAT((*ids)[0], HasSubstr("::"));
  }
  Collect();
  absl::SleepFor(absl::Milliseconds(300));  // the fake GPUs use energy in real time
  const std::string text = Collect();
  const std::vector<std::string> temps = Lines(text, "DCGM_FI_DEV_GPU_TEMP{");
  EXPECT_THAT(temps, SizeIs(8));
  for (int i = 0; i < 8; ++i) {
    const std::vector<std::string> gpu = Lines(text, "DCGM_FI_DEV_GPU_TEMP" + GpuLabels(i));
    ASSERT_THAT(gpu, SizeIs(1)) << i;
    EXPECT_THAT(gpu[0], HasSubstr("pod=\"pod-")) << i;
  }
  // Every pod is charged, and pods sum to the GPUs' energy (every GPU is fully held).
  const std::vector<std::string> pods = Lines(text, "gpuop_pod_gpu_energy_joules_total{");
  ASSERT_THAT(pods, SizeIs(16));
  double pod_sum = 0, gpu_sum = 0;
  for (const std::string& line : pods) pod_sum += std::stod(line.substr(line.rfind(' ') + 1));
  for (const std::string& line : Lines(text, "gpuop_gpu_energy_joules_total{")) {
    gpu_sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  EXPECT_GT(gpu_sum, 0);
  EXPECT_NEAR(pod_sum, gpu_sum, gpu_sum * 1e-9);
  // A pod that leaves takes its series with it.
  ASSERT_TRUE(node_->kubelet().ReleasePod("ml", "pod-3").ok());
  EXPECT_THAT(Collect(), Not(HasSubstr("pod=\"pod-3\"")));
}

TEST_F(ExporterPodsTest, KubeletRestartKeepsLabelsAndRecovers) {
  Start({.scenario = "h100-8x-nvswitch"});
  ASSERT_TRUE(node_->Allocate("ml", "train", "nvidia.com/gpu").ok());
  EXPECT_THAT(Collect(), HasSubstr("pod=\"train\""));
  node_->kubelet().Stop();
  const std::string during = Collect();
  EXPECT_THAT(during, HasSubstr("pod=\"train\""));
  EXPECT_THAT(during, HasSubstr("gpuop_exporter_pod_resources_errors_total 1\n"));
  ASSERT_TRUE(node_->kubelet().Start().ok());
  // The channel reconnects by itself (backoff at most 5 s).
  bool answered = false;
  for (int i = 0; i < 200 && !answered; ++i) {
    answered = lister_->List(absl::Seconds(1)).ok();
    if (!answered) absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_TRUE(answered);
  const std::string after = Collect();
  EXPECT_THAT(after, HasSubstr("pod=\"train\""));
  EXPECT_THAT(after, HasSubstr("gpuop_exporter_pod_resources_errors_total 1\n"));
}

}  // namespace
}  // namespace gpuop::agent::exporter
