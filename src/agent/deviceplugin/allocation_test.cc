#include "agent/deviceplugin/allocation.h"

#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace gpuop::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// Two 4-GPU NVLink islands; GPUs 0-3 and 4-7 otherwise on different sockets; within an island
// pairs (0,1), (2,3), ... share a PCIe switch.
std::vector<hw::Gpu> TwoIslands() {
  std::vector<hw::Gpu> gpus;
  for (int i = 0; i < 8; ++i) {
    hw::Gpu g{.vendor = hw::Vendor::kNvidia, .index = i, .uuid = absl::StrCat("GPU-", i)};
    for (int j = 0; j < 8; ++j) {
      if (i == j) continue;
      hw::Link link{.peer_index = j};
      if (i / 4 == j / 4) {
        link.kind = hw::LinkKind::kGpuFabric;
        link.fabric_links = 4;
      } else {
        link.kind = hw::LinkKind::kCrossSocket;
      }
      g.links.push_back(link);
    }
    gpus.push_back(g);
  }
  return gpus;
}

std::vector<PluginDevice> Whole(const std::vector<hw::Gpu>& gpus) {
  std::vector<PluginDevice> out;
  for (const auto& g : gpus) {
    out.push_back({.id = g.uuid, .physical_id = g.uuid, .gpu_index = g.index});
  }
  return out;
}

std::set<int> GpusOf(const std::vector<std::string>& ids) {
  std::set<int> gpus;
  for (const auto& id : ids) gpus.insert(id[4] - '0');
  return gpus;
}

TEST(PreferredAllocationTest, FourGpusLandOnOneNvlinkIsland) {
  const auto gpus = TwoIslands();
  const Topology topology(gpus);
  const auto devices = Whole(gpus);
  // GPU 0 and 5 are taken: islands have 3 and 3 free, so 4 cannot fit one island; with GPU 5
  // free too, the second island fits.
  std::vector<std::string> ids = PreferredAllocation(
      devices, topology, {"GPU-1", "GPU-2", "GPU-3", "GPU-4", "GPU-5", "GPU-6", "GPU-7"}, {}, 4);
  EXPECT_EQ(GpusOf(ids), (std::set<int>{4, 5, 6, 7}));
}

// An HGX board: every pair joined by the same 18 NVLinks through the NVSwitches, GPUs 0-3 on
// socket 0 and 4-7 on socket 1; only the PCIe path tells the sockets apart.
std::vector<hw::Gpu> NvSwitchBoard() {
  std::vector<hw::Gpu> gpus;
  for (int i = 0; i < 8; ++i) {
    hw::Gpu g{.vendor = hw::Vendor::kNvidia, .index = i, .uuid = absl::StrCat("GPU-", i)};
    for (int j = 0; j < 8; ++j) {
      if (i == j) continue;
      g.links.push_back(
          {.peer_index = j,
           .kind = hw::LinkKind::kGpuFabric,
           .fabric_links = 18,
           .pcie = i / 4 == j / 4 ? hw::LinkKind::kSameNumaNode : hw::LinkKind::kCrossSocket});
    }
    gpus.push_back(g);
  }
  return gpus;
}

TEST(PreferredAllocationTest, AnNvSwitchBoardKeepsASetOnOneSocket) {
  const auto gpus = NvSwitchBoard();
  const Topology topology(gpus);
  // The kubelet's available set is unordered: the answer must not depend on its order.
  for (const std::vector<std::string>& available :
       {std::vector<std::string>{"GPU-7", "GPU-0", "GPU-5", "GPU-2", "GPU-4", "GPU-6", "GPU-3"},
        std::vector<std::string>{"GPU-0", "GPU-2", "GPU-3", "GPU-4", "GPU-5", "GPU-6", "GPU-7"}}) {
    auto four = PreferredAllocation(Whole(gpus), topology, available, {}, 4);
    EXPECT_EQ(GpusOf(four), (std::set<int>{4, 5, 6, 7})) << "socket 0 has only 3 free";
    auto two = PreferredAllocation(Whole(gpus), topology, available, {"GPU-2"}, 2);
    EXPECT_EQ(GpusOf(two), (std::set<int>{0, 2})) << "the must-include GPU's socket";
  }
}

TEST(PreferredAllocationTest, MustIncludeSteersTheIsland) {
  const auto gpus = TwoIslands();
  std::vector<std::string> ids = PreferredAllocation(
      Whole(gpus), Topology(gpus), {"GPU-0", "GPU-1", "GPU-2", "GPU-4", "GPU-5", "GPU-6", "GPU-7"},
      {"GPU-1"}, 3);
  EXPECT_EQ(GpusOf(ids), (std::set<int>{0, 1, 2}));
}

TEST(PreferredAllocationTest, PcieSwitchBeatsNumaBeatsCrossSocket) {
  std::vector<hw::Gpu> gpus(4);
  for (int i = 0; i < 4; ++i) {
    gpus[i] = {.vendor = hw::Vendor::kNvidia, .index = i, .uuid = absl::StrCat("GPU-", i)};
  }
  auto link = [&](int a, int b, hw::LinkKind kind) {
    gpus[a].links.push_back({.peer_index = b, .kind = kind});
    gpus[b].links.push_back({.peer_index = a, .kind = kind});
  };
  link(0, 1, hw::LinkKind::kSameNumaNode);
  link(0, 2, hw::LinkKind::kCrossSocket);
  link(0, 3, hw::LinkKind::kCrossSocket);
  link(1, 2, hw::LinkKind::kCrossSocket);
  link(1, 3, hw::LinkKind::kCrossSocket);
  link(2, 3, hw::LinkKind::kSamePcieSwitch);
  auto ids =
      PreferredAllocation(Whole(gpus), Topology(gpus), {"GPU-0", "GPU-1", "GPU-2", "GPU-3"}, {}, 2);
  EXPECT_EQ(GpusOf(ids), (std::set<int>{2, 3}));
}

TEST(PreferredAllocationTest, ReplicasSpreadOverLeastLoadedGpus) {
  std::vector<PluginDevice> devices;
  for (int g = 0; g < 2; ++g) {
    for (int r = 0; r < 4; ++r) {
      devices.push_back({.id = absl::StrCat("GPU-", g, "::", r),
                         .physical_id = absl::StrCat("GPU-", g),
                         .gpu_index = g,
                         .replica = r,
                         .replicas = 4});
    }
  }
  // GPU 0 has one replica left, GPU 1 all four: two replicas go one per GPU.
  std::vector<std::string> ids = PreferredAllocation(
      devices, Topology(), {"GPU-0::3", "GPU-1::0", "GPU-1::1", "GPU-1::2", "GPU-1::3"}, {}, 2);
  EXPECT_EQ(GpusOf(ids), (std::set<int>{0, 1}));
  // One replica: the least-loaded GPU.
  ids = PreferredAllocation(devices, Topology(),
                            {"GPU-0::3", "GPU-1::0", "GPU-1::1", "GPU-1::2", "GPU-1::3"}, {}, 1);
  EXPECT_EQ(GpusOf(ids), (std::set<int>{1}));
}

TEST(PreferredAllocationTest, MigDevicesPackOntoTheBusiestGpu) {
  std::vector<PluginDevice> devices;
  for (int g = 0; g < 2; ++g) {
    for (int m = 0; m < 7; ++m) {
      devices.push_back({.id = absl::StrCat("MIG-", g, "-", m), .gpu_index = g, .mig = true});
    }
  }
  // GPU 0 has 2 free, GPU 1 has 7 free: pack onto GPU 0.
  std::vector<std::string> available = {"MIG-0-5", "MIG-0-6"};
  for (int m = 0; m < 7; ++m) available.push_back(absl::StrCat("MIG-1-", m));
  std::vector<std::string> ids = PreferredAllocation(devices, Topology(), available, {}, 2);
  EXPECT_THAT(ids, UnorderedElementsAre("MIG-0-5", "MIG-0-6"));
}

TEST(PreferredAllocationTest, NeverFailsAndGivesItsBestForRequestsItCannotMeet) {
  const auto gpus = TwoIslands();
  const auto devices = Whole(gpus);
  const Topology topology(gpus);
  // Fewer available than asked: all of them (the kubelet fills the rest).
  EXPECT_THAT(PreferredAllocation(devices, topology, {"GPU-0"}, {}, 2), ElementsAre("GPU-0"));
  // IDs the plugin does not serve, and duplicates, are skipped rather than refused.
  EXPECT_THAT(PreferredAllocation(devices, topology, {"GPU-9", "GPU-1", "GPU-1"}, {}, 1),
              ElementsAre("GPU-1"));
  EXPECT_THAT(PreferredAllocation(devices, topology, {"GPU-9"}, {"GPU-8"}, 1), IsEmpty());
  // must_include as large as the request is the answer.
  EXPECT_THAT(PreferredAllocation(devices, topology, {"GPU-0", "GPU-1"}, {"GPU-1", "GPU-0"}, 1),
              ElementsAre("GPU-1", "GPU-0"));
  EXPECT_THAT(PreferredAllocation(devices, topology, {"GPU-0"}, {}, 0), IsEmpty());
}

}  // namespace
}  // namespace gpuop::agent
