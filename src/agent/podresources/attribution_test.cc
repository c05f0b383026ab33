// Device-to-pod attribution and energy shares, table-driven over the small node.
#include "agent/podresources/attribution.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "agent/exporter/test_util.h"

namespace gpuop::agent::podresources {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

PodDevice Device(std::string resource, std::string id, std::string pod,
                 std::string container = "c") {
  return PodDevice{.resource = std::move(resource),
                   .device_id = std::move(id),
                   .pod_namespace = "ns",
                   .pod = std::move(pod),
                   .container = std::move(container)};
}

Holder H(std::string pod, std::string container = "c") {
  return Holder{.pod_namespace = "ns", .pod = std::move(pod), .container = std::move(container)};
}

// Built step by step: GCC 12 misreads designated initializers of these maps as uninitialized.
GpuHolders Whole(std::vector<Holder> holders) {
  GpuHolders result;
  result.gpu = std::move(holders);
  return result;
}

GpuHolders Mig(std::map<unsigned int, std::vector<Holder>> instances) {
  GpuHolders result;
  result.instances = std::move(instances);
  return result;
}

TEST(ExporterAttributionTest, PhysicalDeviceIdStripsReplicaSuffixes) {
  EXPECT_EQ(PhysicalDeviceId("GPU-1::3"), "GPU-1");
  EXPECT_EQ(PhysicalDeviceId("MIG-2::12"), "MIG-2");
  EXPECT_EQ(PhysicalDeviceId("GPU-1"), "GPU-1");
  EXPECT_EQ(PhysicalDeviceId("GPU-1::"), "GPU-1::");
  EXPECT_EQ(PhysicalDeviceId("GPU-1::x"), "GPU-1::x");
  EXPECT_EQ(PhysicalDeviceId("0000:17:00.0"), "0000:17:00.0");
}

TEST(ExporterAttributionTest, WholeGpusReplicasAndMigDevices) {
  const hw::Inventory inventory = exporter::testing::SmallInventory();
  const Attribution a = Attribute(
      {&inventory},
      {Device("nvidia.com/gpu", "GPU-0000::0", "a"), Device("nvidia.com/gpu", "GPU-0000::1", "b"),
       // Two replicas in one container count once.
       Device("nvidia.com/gpu", "GPU-0000::2", "b"),
       Device("nvidia.com/mig-3g.20gb", "MIG-1111-a", "m1"),
       Device("nvidia.com/mig-3g.20gb", "MIG-1111-b", "m2", "other"),
       Device("nvidia.com/mig-1g.5gb", "MIG-1111-c", "m3"),
       // Not an accelerator resource, even if the ID looks like one.
       Device("example.com/nic", "GPU-0000", "x"), Device("nvidia.com/gpu", "GPU-9999", "stale")});
  ASSERT_EQ(a.by_gpu.size(), 2u);
  EXPECT_THAT(a.by_gpu.at("GPU-0000").gpu, ElementsAre(H("a"), H("b")));
  EXPECT_THAT(a.by_gpu.at("GPU-0000").instances, IsEmpty());
  EXPECT_THAT(a.by_gpu.at("GPU-1111").gpu, IsEmpty());
  EXPECT_THAT(a.by_gpu.at("GPU-1111").instances,
              ElementsAre(Pair(1u, ElementsAre(H("m1"), H("m2", "other"))),
                          Pair(13u, ElementsAre(H("m3")))));
  EXPECT_EQ(a.unknown_devices, 1);
  EXPECT_EQ(a.dropped_holders, 0);
}

PodDevice Claimed(std::string driver, std::string name, std::string pod) {
  PodDevice d = Device("", name, std::move(pod));
  d.dra = DraDevice{.driver = std::move(driver),
                    .pool = "node-a",
                    .device = std::move(name),
                    .claim_name = "claim",
                    .claim_namespace = "ns"};
  return d;
}

// NVIDIA's DRA driver names a GPU after its minor number and a MIG device after its parent's
// minor and its placement (two naming schemes across releases).
TEST(ExporterAttributionTest, DraDevicesMapByMinorNumberAndPlacement) {
  hw::Inventory inventory = exporter::testing::SmallInventory();
  inventory.gpus[0].minor_number = 4;
  inventory.gpus[1].minor_number = 7;
  inventory.gpus[1].mig_devices[0].placement_start = 0;
  inventory.gpus[1].mig_devices[1].placement_start = 0;
  inventory.gpus[1].mig_devices[2].placement_start = 6;
  const Attribution a = Attribute(
      {&inventory},
      {Claimed("gpu.nvidia.com", "gpu-4", "a"), Claimed("gpu.nvidia.com", "gpu-7-mig-19-6-1", "m"),
       Claimed("gpu.nvidia.com", "gpu-7-mig-3g20gb-9-0", "n"),
       // A placement with no MIG device: the GPU as a whole.
       Claimed("gpu.nvidia.com", "gpu-7-mig-3g20gb-9-4", "odd"),
       // Another driver's device, even with a GPU-like name; a stale GPU.
       Claimed("dra.net", "gpu-4", "nic"), Claimed("gpu.nvidia.com", "gpu-9", "stale"),
       Claimed("gpu.nvidia.com", "gpu-x", "junk")});
  ASSERT_EQ(a.by_gpu.size(), 2u);
  // The holders keep their claim, for dcgm-exporter's dra_* labels.
  auto claimed = [](std::string pod, std::string device) {
    Holder h = H(std::move(pod));
    h.dra = DraDevice{.driver = "gpu.nvidia.com",
                      .pool = "node-a",
                      .device = std::move(device),
                      .claim_name = "claim",
                      .claim_namespace = "ns"};
    return h;
  };
  EXPECT_THAT(a.by_gpu.at("GPU-0000").gpu, ElementsAre(claimed("a", "gpu-4")));
  EXPECT_THAT(a.by_gpu.at("GPU-1111").gpu, ElementsAre(claimed("odd", "gpu-7-mig-3g20gb-9-4")));
  EXPECT_THAT(a.by_gpu.at("GPU-1111").instances,
              ElementsAre(Pair(1u, ElementsAre(claimed("n", "gpu-7-mig-3g20gb-9-0"))),
                          Pair(13u, ElementsAre(claimed("m", "gpu-7-mig-19-6-1")))));
  EXPECT_EQ(a.unknown_devices, 2);
}

TEST(ExporterAttributionTest, HoldersPerDeviceAreCapped) {
  const hw::Inventory inventory = exporter::testing::SmallInventory();
  std::vector<PodDevice> devices;
  for (int i = 0; i < 10; ++i) {
    devices.push_back(
        Device("nvidia.com/gpu", absl::StrCat("GPU-0000::", i), absl::StrCat("p", i)));
  }
  const Attribution a = Attribute({&inventory}, devices, {.max_holders_per_device = 4});
  EXPECT_EQ(a.by_gpu.at("GPU-0000").gpu.size(), 4u);
  EXPECT_EQ(a.dropped_holders, 6);
}

TEST(ExporterAttributionTest, EnergySharesPerSharingMode) {
  const hw::Inventory inventory = exporter::testing::SmallInventory();
  const hw::Gpu& whole = inventory.gpus[0];
  const hw::Gpu& mig = inventory.gpus[1];
  struct Case {
    const char* name;
    const hw::Gpu* gpu;
    GpuHolders holders;
    std::vector<std::pair<Holder, double>> want;
  };
  std::vector<Case> cases;
  cases.push_back({"nobody", &whole, {}, {}});
  cases.push_back({"one pod", &whole, Whole({H("a")}), {{H("a"), 1.0}}});
  cases.push_back({"time-sliced evenly",
                   &whole,
                   Whole({H("a"), H("b"), H("c"), H("d")}),
                   {{H("a"), 0.25}, {H("b"), 0.25}, {H("c"), 0.25}, {H("d"), 0.25}}});
  cases.push_back({"MIG by slices",
                   &mig,
                   Mig({{1, {H("a")}}, {13, {H("b")}}}),
                   {{H("a"), 3.0 / 7}, {H("b"), 1.0 / 7}}});
  cases.push_back({"MIG instance shared by two",
                   &mig,
                   Mig({{1, {H("a"), H("b")}}}),
                   {{H("a"), 1.5 / 7}, {H("b"), 1.5 / 7}}});
  cases.push_back({"one container on two instances",
                   &mig,
                   Mig({{1, {H("a")}}, {13, {H("a")}}}),
                   {{H("a"), 4.0 / 7}}});
  for (const Case& c : cases) {
    const auto got = EnergyShares(*c.gpu, c.holders);
    ASSERT_EQ(got.size(), c.want.size()) << c.name;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].first, c.want[i].first) << c.name;
      EXPECT_DOUBLE_EQ(got[i].second, c.want[i].second) << c.name;
    }
  }
}

TEST(ExporterAttributionTest, MigWithUnknownProfilesSplitsEquallyPerInstance) {
  hw::Gpu gpu = exporter::testing::SmallInventory().gpus[1];
  gpu.mig_profiles.clear();
  const auto got = EnergyShares(gpu, Mig({{1, {H("a")}}}));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_DOUBLE_EQ(got[0].second, 0.5);  // two GPU instances
}

}  // namespace
}  // namespace gpuop::agent::podresources
