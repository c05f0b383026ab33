#include "operator/nodes/node_labels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/render/render.h"

namespace gpuop::op {
namespace {

using ::testing::Contains;
using ::testing::Key;
using ::testing::Not;
using ::testing::Pair;
using Map = std::map<std::string, std::string>;

kube::Node NodeWith(Map labels, const std::string& name = "gpu-1") {
  kube::Node n;
  n.metadata.name = name;
  n.metadata.labels = kube::Labels(labels);
  return n;
}

kube::Labels Plus(const kube::Labels& labels, const std::string& key, const std::string& value) {
  Map map = labels.ToMap();
  map[key] = value;
  return kube::Labels(map);
}

PolicySpec Policy() {
  PolicySpec p;
  p.driver.version = "570.86.15";
  return p;
}

NodePool Pool(const std::string& name, Map selector) {
  nlohmann::json object = {{"metadata", {{"name", name}}},
                           {"spec", {{"nodeSelector", {{"matchLabels", selector}}}}}};
  auto pool = ParseNodePool(object);
  EXPECT_TRUE(pool.ok()) << pool.status();
  return *pool;
}

TEST(NodeLabelsTest, GpuNodesComeFromNfdOrTheAgent) {
  EXPECT_TRUE(IsGpuNode(NodeWith({{"feature.node.kubernetes.io/pci-10de.present", "true"}})));
  EXPECT_TRUE(IsGpuNode(NodeWith({{"feature.node.kubernetes.io/pci-1002.present", "true"}})));
  EXPECT_TRUE(IsGpuNode(NodeWith({{"gpuop.io/gpu.present", "true"}})));
  EXPECT_TRUE(IsGpuNode(NodeWith({{"nvidia.com/gpu.present", "true"}})));
  EXPECT_FALSE(IsGpuNode(NodeWith({{"kubernetes.io/os", "linux"}})));
  EXPECT_FALSE(IsGpuNode(NodeWith({{"gpuop.io/gpu.present", "false"}})));
  EXPECT_FALSE(
      IsGpuNode(NodeWith({{"feature.node.kubernetes.io/pci-0302_10de.present", "false"}})));
}

// Every form NFD writes with its deviceLabelFields, and what is not a GPU.
TEST(NodeLabelsTest, NfdPciLabelsInEveryForm) {
  struct Case {
    const char* key;
    std::optional<uint16_t> vendor;
  };
  const Case cases[] = {
      // NFD's default fields (class, vendor).
      {"feature.node.kubernetes.io/pci-0302_10de.present", kPciVendorNvidia},  // H100, A100
      {"feature.node.kubernetes.io/pci-0300_10de.present", kPciVendorNvidia},  // VGA-class GPU
      {"feature.node.kubernetes.io/pci-0380_10de.present", kPciVendorNvidia},
      {"feature.node.kubernetes.io/pci-0b40_10de.present", kPciVendorNvidia},  // coprocessor
      {"feature.node.kubernetes.io/pci-0380_1002.present", kPciVendorAmd},     // MI210
      {"feature.node.kubernetes.io/pci-1200_1002.present", kPciVendorAmd},     // MI300X
      {"feature.node.kubernetes.io/pci-0300_1002.present", kPciVendorAmd},
      // Vendor only (NVIDIA's GPU operator's NFD configuration), vendor and device.
      {"feature.node.kubernetes.io/pci-10de.present", kPciVendorNvidia},
      {"feature.node.kubernetes.io/pci-1002.present", kPciVendorAmd},
      {"feature.node.kubernetes.io/pci-10de_2330.present", kPciVendorNvidia},
      // Class, vendor, device and the subsystem.
      {"feature.node.kubernetes.io/pci-0302_10de_2330.present", kPciVendorNvidia},
      {"feature.node.kubernetes.io/pci-0302_10de_2330_10de_16c1.present", kPciVendorNvidia},
      {"feature.node.kubernetes.io/pci-1200_1002_74a1_1002_74a1.present", kPciVendorAmd},
      {"feature.node.kubernetes.io/pci-0302_10DE.present", kPciVendorNvidia},
      // Not GPUs: the BMC's display (ASPEED, Matrox), virtio, a NIC, NVIDIA's HDMI audio or
      // NVSwitch (classes NFD does not whitelist by default), the class alone.
      {"feature.node.kubernetes.io/pci-0300_1a03.present", std::nullopt},
      {"feature.node.kubernetes.io/pci-0300_102b.present", std::nullopt},
      {"feature.node.kubernetes.io/pci-0300_1af4.present", std::nullopt},
      {"feature.node.kubernetes.io/pci-0200_15b3.present", std::nullopt},
      {"feature.node.kubernetes.io/pci-0403_10de.present", std::nullopt},
      {"feature.node.kubernetes.io/pci-0680_10de.present", std::nullopt},
      {"feature.node.kubernetes.io/pci-0302.present", std::nullopt},
      {"feature.node.kubernetes.io/pci-0302_10de.sriov.capable", std::nullopt},
      {"feature.node.kubernetes.io/pci-0302_10de", std::nullopt},
      {"feature.node.kubernetes.io/pci-.present", std::nullopt},
      {"feature.node.kubernetes.io/pci-_.present", std::nullopt},
      {"feature.node.kubernetes.io/pci-0302__10de.present", std::nullopt},
      {"feature.node.kubernetes.io/pci-030_10de.present", std::nullopt},
      {"feature.node.kubernetes.io/pci-03020_10de.present", std::nullopt},
      {"feature.node.kubernetes.io/pci-0g02_10de.present", std::nullopt},
      {"feature.node.kubernetes.io/pci-1_2_3_4_5_6.present", std::nullopt},
      {"feature.node.kubernetes.io/usb-10de.present", std::nullopt},
      {"example.com/pci-10de.present", std::nullopt},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(NfdPciGpuVendor(c.key), c.vendor) << c.key;
    const kube::Node node = NodeWith({{c.key, "true"}});
    EXPECT_EQ(IsGpuNode(node), c.vendor.has_value()) << c.key;
    EXPECT_EQ(GpusOf(node).nvidia, c.vendor == kPciVendorNvidia) << c.key;
    EXPECT_EQ(GpusOf(node).amd, c.vendor == kPciVendorAmd) << c.key;
  }
}

TEST(NodeLabelsTest, VendorsFromEverySource) {
  EXPECT_TRUE(GpusOf(NodeWith({{"gpuop.io/gpu.present", "true"}, {"gpuop.io/gpu.vendor", "amd"}}))
                  .amd_only());
  const NodeGpus mixed =
      GpusOf(NodeWith({{"gpuop.io/gpu.present", "true"}, {"gpuop.io/gpu.vendor", "mixed"}}));
  EXPECT_TRUE(mixed.nvidia && mixed.amd && !mixed.amd_only());
  // NFD saw AMD, gpuop's discovery NVIDIA as well: not AMD only.
  EXPECT_FALSE(GpusOf(NodeWith({{"feature.node.kubernetes.io/pci-1200_1002.present", "true"},
                                {"gpuop.io/gpu.vendor", "nvidia"}}))
                   .amd_only());
  EXPECT_FALSE(GpusOf(NodeWith({{"feature.node.kubernetes.io/pci-1200_1002.present", "true"},
                                {"nvidia.com/gpu.present", "true"}}))
                   .amd_only());
  const NodeGpus unknown = GpusOf(NodeWith({{"gpuop.io/gpu.present", "true"}}));
  EXPECT_TRUE(unknown.any() && unknown.unknown_vendor && !unknown.amd_only());
  EXPECT_FALSE(GpusOf(NodeWith({{"gpuop.io/gpu.vendor", "intel"}})).any());
}

TEST(NodeLabelsTest, AGpuNodeGetsEveryEnabledComponent) {
  const PolicySpec policy = Policy();
  const kube::Node node = NodeWith({{kNfdNvidiaLabel, "true"}});
  NodeLabelChange c = DesiredNodeLabels(node, {}, &policy, nullptr, false);
  EXPECT_TRUE(c.needed);
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/managed", "true")));
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/deploy.driver", "true")));
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/deploy.device-plugin", "true")));
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/driver.pool", "default")));
  EXPECT_THAT(c.desired, Not(Contains(Key("gpuop.io/deploy.mig-manager"))));  // disabled

  // Once applied, nothing more to do.
  Map applied = {{kNfdNvidiaLabel, "true"}};
  std::vector<std::string> owned;
  for (const auto& [k, v] : c.desired) {
    applied[k] = v;
    owned.push_back(k);
  }
  EXPECT_FALSE(DesiredNodeLabels(NodeWith(applied), owned, &policy, nullptr, false).needed);
}

TEST(NodeLabelsTest, PausesAndHostDriversAreRespected) {
  const PolicySpec policy = Policy();
  const kube::Node node = NodeWith({{kNfdNvidiaLabel, "true"},
                                    {"gpuop.io/deploy.exporter", "paused"},
                                    {"gpuop.io/driver.preinstalled", "true"}});
  NodeLabelChange c = DesiredNodeLabels(node, {}, &policy, nullptr, false);
  EXPECT_THAT(c.desired, Not(Contains(Key("gpuop.io/deploy.exporter"))));
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/deploy.driver", "host-driver")));

  const kube::Node off =
      NodeWith({{kNfdNvidiaLabel, "true"}, {"gpuop.io/deploy.operands", "false"}});
  NodeLabelChange none =
      DesiredNodeLabels(off, {"gpuop.io/deploy.health"}, &policy, nullptr, false);
  EXPECT_THAT(none.desired, Not(Contains(Key("gpuop.io/deploy.health"))));
  EXPECT_TRUE(none.needed) << "the owned label must go";
}

TEST(NodeLabelsTest, TheOperatorsOwnDriverRestartPauseStands) {
  const PolicySpec policy = Policy();
  // Written by the upgrade controller under the operator's field manager, so node labelling
  // owns the key; it still keeps the pause until that controller lifts it.
  const kube::Node node = NodeWith(
      {{kNfdNvidiaLabel, "true"}, {"gpuop.io/deploy.device-plugin", "paused-for-driver-upgrade"}});
  NodeLabelChange c =
      DesiredNodeLabels(node, {"gpuop.io/deploy.device-plugin"}, &policy, nullptr, false);
  EXPECT_THAT(c.desired,
              Contains(Pair("gpuop.io/deploy.device-plugin", "paused-for-driver-upgrade")));
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/deploy.exporter", "true")));
}

TEST(NodeLabelsTest, ADriverGpuopRunsIsNeverTakenForTheHosts) {
  const PolicySpec policy = Policy();
  const kube::Node node = NodeWith({{kNfdNvidiaLabel, "true"},
                                    {"gpuop.io/deploy.driver", "true"},
                                    {"gpuop.io/driver.preinstalled", "true"}});
  const std::vector<std::string> owned = {"gpuop.io/deploy.driver"};
  EXPECT_THAT(
      DesiredNodeLabels(node, owned, &policy, nullptr, false, /*driver_pod_on_node=*/true).desired,
      Contains(Pair("gpuop.io/deploy.driver", "true")));
  EXPECT_THAT(
      DesiredNodeLabels(node, owned, &policy, nullptr, false, /*driver_pod_on_node=*/false).desired,
      Contains(Pair("gpuop.io/deploy.driver", "host-driver")));
}

TEST(NodeLabelsTest, NvidiaOnlyComponentsDoNotApplyToAmdNodes) {
  PolicySpec policy = Policy();
  policy.components.mig_manager = true;
  const kube::Node amd = NodeWith({{kNfdAmdLabel, "true"}});
  NodeLabelChange c = DesiredNodeLabels(amd, {}, &policy, nullptr, false);
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/deploy.driver", "not-applicable")));
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/deploy.mig-manager", "not-applicable")));
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/deploy.exporter", "true")));
  // A node with both vendors runs the NVIDIA components.
  const kube::Node both = NodeWith({{kNfdAmdLabel, "true"}, {kNfdNvidiaLabel, "true"}});
  EXPECT_THAT(DesiredNodeLabels(both, {}, &policy, nullptr, false).desired,
              Contains(Pair("gpuop.io/deploy.driver", "true")));
  // The same from stock NFD's class-first labels, and from gpuop's own discovery.
  const kube::Node mi300 = NodeWith({{"feature.node.kubernetes.io/pci-1200_1002.present", "true"}});
  EXPECT_THAT(DesiredNodeLabels(mi300, {}, &policy, nullptr, false).desired,
              Contains(Pair("gpuop.io/deploy.driver", "not-applicable")));
  const kube::Node discovered =
      NodeWith({{"gpuop.io/gpu.present", "true"}, {"gpuop.io/gpu.vendor", "amd"}});
  EXPECT_THAT(DesiredNodeLabels(discovered, {}, &policy, nullptr, false).desired,
              Contains(Pair("gpuop.io/deploy.mig-manager", "not-applicable")));
  const kube::Node h100 = NodeWith({{"feature.node.kubernetes.io/pci-0302_10de.present", "true"}});
  EXPECT_THAT(DesiredNodeLabels(h100, {}, &policy, nullptr, false).desired,
              Contains(Pair("gpuop.io/deploy.driver", "true")));
  // A CPU node that discovery labelled has nothing.
  const kube::Node cpu = NodeWith({{"gpuop.io/gpu.present", "false"}});
  EXPECT_TRUE(DesiredNodeLabels(cpu, {}, &policy, nullptr, false).desired.empty());
}

TEST(NodeLabelsTest, WithoutAPolicyTheOperatorsLabelsGoButTheDriversStay) {
  const kube::Node node = NodeWith({{kNfdNvidiaLabel, "true"},
                                    {"gpuop.io/managed", "true"},
                                    {"gpuop.io/deploy.exporter", "true"},
                                    {"gpuop.io/deploy.driver", "true"},
                                    {"gpuop.io/driver.pool", "default"}});
  NodeLabelChange c = DesiredNodeLabels(node,
                                        {"gpuop.io/managed", "gpuop.io/deploy.exporter",
                                         "gpuop.io/deploy.driver", "gpuop.io/driver.pool"},
                                        nullptr, nullptr, false);
  EXPECT_THAT(c.desired, ::testing::UnorderedElementsAre(Pair("gpuop.io/deploy.driver", "true"),
                                                         Pair("gpuop.io/driver.pool", "default")));
  EXPECT_TRUE(c.needed);
}

TEST(NodeLabelsTest, PoolsSetDriverSharingAndMig) {
  const PolicySpec policy = Policy();
  NodePool pool = Pool("h100", {{"pool", "h100"}});
  pool.driver_version = "580.65.06";
  pool.time_slicing_replicas = 4;
  pool.mig_layout = "all-1g.10gb";
  const kube::Node node = NodeWith({{kNfdNvidiaLabel, "true"}, {"pool", "h100"}});
  NodeLabelChange c = DesiredNodeLabels(node, {}, &policy, &pool, false);
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/driver.pool", "h100")));
  EXPECT_THAT(c.desired, Contains(Pair("nvidia.com/device-plugin.config", "pool-h100")));
  EXPECT_THAT(c.desired, Contains(Pair("nvidia.com/mig.config", "all-1g.10gb")));
}

// A pool's power settings reach its nodes complete (the pool's over the policy's); without the
// power manager in the policy there is no label, and leaving the pool takes the label away.
TEST(NodeLabelsTest, PoolPowerSettingsBecomeTheNodesPowerPolicyLabel) {
  PolicySpec policy = Policy();
  policy.components.power_manager = true;
  policy.components.power_idle_after = absl::Minutes(10);
  policy.components.power_floor_percent = 60;
  NodePool pool = Pool("h100", {{"pool", "h100"}});
  pool.power = NodePool::Power{.floor_percent = 40};
  const kube::Node node = NodeWith({{kNfdNvidiaLabel, "true"}, {"pool", "h100"}});
  NodeLabelChange c = DesiredNodeLabels(node, {}, &policy, &pool, false);
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/power.policy", "idle-600s.floor-40pct")));

  pool.power = NodePool::Power{.enabled = false};
  c = DesiredNodeLabels(node, {}, &policy, &pool, false);
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/power.policy", "off")));

  policy.components.power_manager = false;
  c = DesiredNodeLabels(node, {}, &policy, &pool, false);
  EXPECT_THAT(c.desired, Not(Contains(Pair("gpuop.io/power.policy", ::testing::_))));

  policy.components.power_manager = true;
  const kube::Node labelled =
      NodeWith({{kNfdNvidiaLabel, "true"}, {"pool", "other"}, {"gpuop.io/power.policy", "off"}});
  c = DesiredNodeLabels(labelled, {"gpuop.io/power.policy"}, &policy, nullptr, false);
  EXPECT_THAT(c.desired, Not(Contains(Pair("gpuop.io/power.policy", ::testing::_))));
  EXPECT_TRUE(c.needed);
  EXPECT_TRUE(IsNodeLabellingKey("gpuop.io/power.policy"));
}

TEST(NodeLabelsTest, ARunningDriverMovesPoolsThroughTheUpgradeNotAtOnce) {
  const PolicySpec policy = Policy();
  NodePool pool = Pool("h100", {{"pool", "h100"}});
  pool.driver_version = "580.65.06";
  const kube::Node node =
      NodeWith({{kNfdNvidiaLabel, "true"}, {"pool", "h100"}, {"gpuop.io/driver.pool", "default"}});
  const std::vector<std::string> owned = {"gpuop.io/driver.pool"};
  NodeLabelChange c = DesiredNodeLabels(node, owned, &policy, &pool, false,
                                        /*driver_pod_on_node=*/true);
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/driver.pool", "default")));
  EXPECT_EQ(c.pool_target, "h100");
  EXPECT_TRUE(c.needed);
  // Without a driver pod there is nothing to take down: the label moves at once.
  c = DesiredNodeLabels(node, owned, &policy, &pool, false, /*driver_pod_on_node=*/false);
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/driver.pool", "h100")));
  EXPECT_EQ(c.pool_target, std::nullopt);
  // Once the upgrade moved it, a leftover target goes.
  kube::Node moved =
      NodeWith({{kNfdNvidiaLabel, "true"}, {"pool", "h100"}, {"gpuop.io/driver.pool", "h100"}});
  moved.metadata.annotations =
      kube::Labels(std::map<std::string, std::string>{{"gpuop.io/driver-pool-target", "h100"}});
  c = DesiredNodeLabels(moved, owned, &policy, &pool, false, /*driver_pod_on_node=*/true);
  EXPECT_EQ(c.pool_target, "");
  EXPECT_TRUE(c.needed);
}

TEST(NodeLabelsTest, ARunningDriverLeavesThroughTheUpgradeNotAtOnce) {
  PolicySpec disabled = Policy();
  disabled.driver.enabled = false;
  const kube::Node node = NodeWith({{kNfdNvidiaLabel, "true"},
                                    {"gpuop.io/deploy.driver", "true"},
                                    {"gpuop.io/driver.pool", "default"}});
  const std::vector<std::string> owned = {"gpuop.io/deploy.driver", "gpuop.io/driver.pool"};
  // spec.components.driver off: the label stays while the pod runs, the reason is written.
  NodeLabelChange c = DesiredNodeLabels(node, owned, &disabled, nullptr, false, true);
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/deploy.driver", "true")));
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/driver.pool", "default")));
  EXPECT_EQ(c.driver_removal, "driver-disabled");
  EXPECT_TRUE(c.needed);
  // Without a driver pod nothing runs to take down: the label goes at once.
  c = DesiredNodeLabels(node, owned, &disabled, nullptr, false, false);
  EXPECT_FALSE(c.desired.contains("gpuop.io/deploy.driver"));
  EXPECT_EQ(c.driver_removal, std::nullopt);
  // gpuop.io/deploy.operands=false takes the clients off at once and the driver through the
  // upgrade.
  const PolicySpec policy = Policy();
  kube::Node off = node;
  off.metadata.labels = Plus(node.metadata.labels, "gpuop.io/deploy.operands", "false");
  c = DesiredNodeLabels(off, owned, &policy, nullptr, false, true);
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/deploy.driver", "true")));
  EXPECT_FALSE(c.desired.contains("gpuop.io/deploy.device-plugin"));
  EXPECT_EQ(c.driver_removal, "operands-disabled");
  // A node the policy's nodeSelector no longer admits.
  PolicySpec selective = Policy();
  selective.node_selector = {{"gpu-pool", "a"}};
  c = DesiredNodeLabels(node, owned, &selective, nullptr, false, true);
  EXPECT_FALSE(c.desired.contains(kManagedLabel));
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/deploy.driver", "true")));
  EXPECT_EQ(c.driver_removal, "node-deselected");
  // The driver enabled again while it still runs: the request goes.
  kube::Node pending = node;
  pending.metadata.annotations = Plus({}, "gpuop.io/driver-removal", "driver-disabled");
  c = DesiredNodeLabels(pending, owned, &policy, nullptr, false, true);
  EXPECT_EQ(c.driver_removal, "");
  EXPECT_TRUE(c.needed);
  // Once the upgrade switched the driver off, the annotation is the upgrade's.
  kube::Node switched = pending;
  switched.metadata.labels = Plus(node.metadata.labels, "gpuop.io/deploy.driver", "false");
  c = DesiredNodeLabels(switched, owned, &disabled, nullptr, false, true);
  EXPECT_EQ(c.driver_removal, std::nullopt);
}

TEST(NodeLabelsTest, TheDriverImageFollowsTheNodesOsAndKernel) {
  const kube::Node nfd =
      NodeWith({{kNfdNvidiaLabel, "true"},
                {"feature.node.kubernetes.io/system-os_release.ID", "rhel"},
                {"feature.node.kubernetes.io/system-os_release.VERSION_ID", "9.4"},
                {"gpuop.io/os-release.ID", "ubuntu"},
                {"gpuop.io/os-release.VERSION_ID", "22.04"}});
  EXPECT_EQ(NodeOsTag(nfd), "rhel9.4") << "NFD's labels first";
  const kube::Node own =
      NodeWith({{"gpuop.io/os-release.ID", "ubuntu"}, {"gpuop.io/os-release.VERSION_ID", "22.04"}});
  EXPECT_EQ(NodeOsTag(own), "ubuntu22.04");
  EXPECT_EQ(NodeOsTag(NodeWith({{"gpuop.io/os-release.ID", "ubuntu"}})), std::nullopt);

  DriverSpec driver;
  EXPECT_EQ(NodeDriverOs(own, driver, "5.15.0-1043-azure"), "ubuntu22.04");
  driver.use_precompiled = true;
  EXPECT_EQ(NodeDriverOs(own, driver, "5.15.0-1043-azure"), "5.15.0-1043-azure-ubuntu22.04");
  EXPECT_EQ(NodeDriverOs(own, driver, ""), std::nullopt) << "no kernel known";
  EXPECT_EQ(NodeDriverOs(own, driver, "6.1.0+rt"), std::nullopt) << "not a label value";
  driver.os_tag = "ubuntu24.04";  // fixed OS, precompiled: per kernel only
  EXPECT_EQ(NodeDriverOs(own, driver, "6.8.0-1015-aws"), "6.8.0-1015-aws-ubuntu24.04");

  PolicySpec policy = Policy();
  NodeLabelChange c = DesiredNodeLabels(nfd, {}, &policy, nullptr, false);
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/driver.os", "rhel9.4")));
  // OS labels gone (NFD uninstalled): the node keeps the image it has rather than losing it.
  const kube::Node forgotten =
      NodeWith({{kNfdNvidiaLabel, "true"}, {"gpuop.io/driver.os", "rhel9.4"}});
  c = DesiredNodeLabels(forgotten, {"gpuop.io/driver.os"}, &policy, nullptr, false, true);
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/driver.os", "rhel9.4")));
  EXPECT_EQ(c.os_target, std::nullopt);
  policy.driver.os_tag = "ubuntu22.04";
  c = DesiredNodeLabels(nfd, {}, &policy, nullptr, false);
  EXPECT_FALSE(c.desired.contains("gpuop.io/driver.os")) << "one image for every node";
}

TEST(NodeLabelsTest, ARunningDriverMovesToItsNewOsThroughTheUpgrade) {
  const PolicySpec policy = Policy();
  const kube::Node node = NodeWith({{kNfdNvidiaLabel, "true"},
                                    {"gpuop.io/os-release.ID", "ubuntu"},
                                    {"gpuop.io/os-release.VERSION_ID", "24.04"},
                                    {"gpuop.io/driver.pool", "default"},
                                    {"gpuop.io/driver.os", "ubuntu22.04"}});
  const std::vector<std::string> owned = {"gpuop.io/driver.pool", "gpuop.io/driver.os"};
  NodeLabelChange c = DesiredNodeLabels(node, owned, &policy, nullptr, false, true);
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/driver.os", "ubuntu22.04")));
  EXPECT_EQ(c.os_target, "ubuntu24.04");
  EXPECT_EQ(c.pool_target, std::nullopt);
  // A driver that ran before the image followed the OS (no driver.os yet) moves too.
  const kube::Node unlabelled = NodeWith({{kNfdNvidiaLabel, "true"},
                                          {"gpuop.io/os-release.ID", "ubuntu"},
                                          {"gpuop.io/os-release.VERSION_ID", "22.04"},
                                          {"gpuop.io/driver.pool", "default"}});
  c = DesiredNodeLabels(unlabelled, {"gpuop.io/driver.pool"}, &policy, nullptr, false, true);
  EXPECT_FALSE(c.desired.contains("gpuop.io/driver.os"));
  EXPECT_EQ(c.os_target, "ubuntu22.04");
  // And back to one image for all: the label is to go.
  PolicySpec fixed = Policy();
  fixed.driver.os_tag = "ubuntu22.04";
  c = DesiredNodeLabels(node, owned, &fixed, nullptr, false, true);
  EXPECT_EQ(c.os_target, "-");
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/driver.os", "ubuntu22.04")));
  // Without a driver pod the label changes at once.
  c = DesiredNodeLabels(node, owned, &policy, nullptr, false, false);
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/driver.os", "ubuntu24.04")));
  EXPECT_EQ(c.os_target, std::nullopt);
}

TEST(NodeLabelsTest, OverlappingPoolsAreAConflictAndTheNodeKeepsItsConfiguration) {
  const kube::Node a = NodeWith({{kNfdNvidiaLabel, "true"}, {"zone", "x"}, {"pool", "h100"}}, "a");
  const kube::Node b = NodeWith({{kNfdNvidiaLabel, "true"}, {"zone", "y"}, {"pool", "h100"}}, "b");
  std::vector<NodePool> pools = {Pool("h100", {{"pool", "h100"}}), Pool("zone-x", {{"zone", "x"}})};
  PoolAssignment assignment = AssignPools({&a, &b}, pools);
  EXPECT_TRUE(assignment.Conflicted("a"));
  EXPECT_FALSE(assignment.Conflicted("b"));
  EXPECT_EQ(assignment.pool_of.at("b"), "h100");
  EXPECT_THAT(assignment.conflicts.at("h100"), ::testing::ElementsAre("a"));
  EXPECT_THAT(assignment.conflicts.at("zone-x"), ::testing::ElementsAre("a"));
  EXPECT_EQ(assignment.members.at("h100"), 1);

  const PolicySpec policy = Policy();
  const kube::Node configured = NodeWith({{kNfdNvidiaLabel, "true"},
                                          {"gpuop.io/driver.pool", "h100"},
                                          {"nvidia.com/mig.config", "all-balanced"}},
                                         "a");
  NodeLabelChange c = DesiredNodeLabels(
      configured, {"gpuop.io/driver.pool", "nvidia.com/mig.config"}, &policy, nullptr, true);
  EXPECT_THAT(c.desired, Contains(Pair("gpuop.io/driver.pool", "h100")));
  EXPECT_THAT(c.desired, Contains(Pair("nvidia.com/mig.config", "all-balanced")));
}

TEST(NodeLabelsTest, OwnedKeysComeFromManagedFields) {
  const nlohmann::json node = nlohmann::json::parse(R"({"metadata": {"managedFields": [
    {"manager": "gpuop-operator", "operation": "Apply",
     "fieldsV1": {"f:metadata": {"f:labels": {"f:gpuop.io/managed": {}, "f:gpuop.io/deploy.cdi": {}}}}},
    {"manager": "kubectl-label", "operation": "Update",
     "fieldsV1": {"f:metadata": {"f:labels": {"f:gpuop.io/deploy.exporter": {}}}}}]}})");
  EXPECT_THAT(OwnedLabelKeys(node, "gpuop-operator"),
              ::testing::ElementsAre("gpuop.io/deploy.cdi", "gpuop.io/managed"));
}

TEST(NodeLabelsTest, OwnedKeysIgnoreManagedFieldsOfTheWrongShape) {
  const nlohmann::json node = nlohmann::json::parse(R"({"metadata": {"managedFields": [
    1, {"manager": 7}, {"manager": "gpuop-operator", "fieldsV1": []},
    {"manager": "gpuop-operator", "fieldsV1": {"f:metadata": "x"}},
    {"manager": "gpuop-operator", "fieldsV1": {"f:metadata": {"f:labels": [1]}}},
    {"manager": "gpuop-operator", "fieldsV1": {"f:metadata": {"f:labels": {"f:gpuop.io/managed": 1}}}}]}})");
  EXPECT_THAT(OwnedLabelKeys(node, "gpuop-operator"), ::testing::ElementsAre("gpuop.io/managed"));
  for (const char* object :
       {R"([])", R"({"metadata": 1})", R"({"metadata": {"managedFields": {}}})"}) {
    EXPECT_THAT(OwnedLabelKeys(nlohmann::json::parse(object), "gpuop-operator"),
                ::testing::IsEmpty())
        << object;
  }
}

// Regression: the operator writes the upgrade and remediation state labels as the same field
// manager; node labelling took them for its own and removed them on the next reconcile, so an
// upgrade restarted from "unknown" over and over (and remediation forgot where it was).
TEST(NodeLabelsTest, StateLabelsAreNotNodeLabellingKeys) {
  for (const char* key : {"gpuop.io/managed", "gpuop.io/deploy.driver", "gpuop.io/driver.pool",
                          "nvidia.com/device-plugin.config", "nvidia.com/mig.config"}) {
    EXPECT_TRUE(IsNodeLabellingKey(key)) << key;
  }
  for (const char* key : {"gpuop.io/driver-upgrade-state", "gpuop.io/remediation-state",
                          "gpuop.io/gpu.present", "nvidia.com/gpu.product"}) {
    EXPECT_FALSE(IsNodeLabellingKey(key)) << key;
  }
}

}  // namespace
}  // namespace gpuop::op
