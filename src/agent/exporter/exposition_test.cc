// Rendering of the exposition text: the golden file for a small node, label order and escaping,
// MIG series, left-out series, and promtool's verdict.
#include "agent/exporter/exposition.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/exporter/test_util.h"

namespace gpuop::agent::exporter {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ExporterExpositionTest : public ::testing::Test {
 protected:
  ExporterExpositionTest()
      : inventory_(testing::SmallInventory()), sample_(testing::SmallSample()) {
    holders_["GPU-0000"].gpu = {{"ml", "train-a", "main"}, {"ml", "train-b", "main"}};
    holders_["GPU-1111"].instances[1] = {{"ml", "infer", "server"}, {"ml", "infer-2", "c"}};
    pod_energy_ = {{{"ml", "infer", "server"}, 10.5},
                   {{"ml", "train-a", "main"}, 1000},
                   {{"ml", "train-b", "main"}, 1000}};
  }

  ExpositionInput Input() {
    ExpositionInput input{.node_name = "node-1", .pod_energy = &pod_energy_};
    for (size_t i = 0; i < inventory_.gpus.size(); ++i) {
      const hw::Gpu& gpu = inventory_.gpus[i];
      input.gpus.push_back({.gpu = &gpu,
                            .driver_version = &inventory_.driver_version,
                            .sample = &sample_.gpus[i],
                            .last_xid = i == 0 ? 79 : 0,
                            .holders = &holders_[gpu.uuid],
                            .energy_joules = i == 0 ? 2000.25 : 84.0});
    }
    ExpositionInput::Self& self = input.self;
    self.version = "0.1.0";
    self.collections = 3;
    self.collection_duration.bounds = {0.001, 0.01};
    self.collection_duration.cumulative = {1, 3, 3};
    self.collection_duration.sum = 0.0125;
    self.collection_duration.count = 3;
    self.collection_errors = {{"discover", 0}, {"events", 1}, {"sample", 0}};
    self.pod_resources_errors = 2;
    self.last_collection_timestamp = 1700000000.5;
    self.resident_memory_bytes = 7340032;
    self.cpu_seconds = 0.25;
    return input;
  }

  std::string Render(const ExpositionInput& input) {
    std::string out;
    RenderExposition(input, out);
    return out;
  }

  hw::Inventory inventory_;
  hw::Sample sample_;
  std::map<std::string, podresources::GpuHolders> holders_;
  std::map<podresources::Holder, double> pod_energy_;
};

TEST_F(ExporterExpositionTest, MatchesTheGoldenFile) {
  const std::string text = Render(Input());
  const std::string path = std::string(GPUOP_EXPORTER_TESTDATA) + "/small_node.prom";
  if (std::getenv("GPUOP_UPDATE_GOLDEN") != nullptr) std::ofstream(path) << text;
  std::stringstream golden;
  golden << std::ifstream(path).rdbuf();
  EXPECT_EQ(text, golden.str()) << "regenerate with GPUOP_UPDATE_GOLDEN=1 after checking the "
                                   "difference";
}

TEST_F(ExporterExpositionTest, LabelsComeInDcgmExporterOrderAndAreEscaped) {
  const std::string text = Render(Input());
  EXPECT_THAT(
      text,
      HasSubstr("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-0000\",pci_bus_id=\"00000000:17:00.0\","
                "device=\"nvidia0\",modelName=\"Test \\\"GPU\\\" \\\\ 80GB\",Hostname=\"node-1\","
                "DCGM_FI_DRIVER_VERSION=\"570.86.15\",container=\"main\",namespace=\"ml\","
                "pod=\"train-a\"} 61\n"));
  // A GPU shared by two pods: one series, with the first holder's labels (dcgm-exporter keeps
  // one holder too), so that a sum over pods counts the GPU once.
  EXPECT_THAT(text, Not(HasSubstr("pod=\"train-b\"} 61")));
  EXPECT_THAT(text, HasSubstr("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DRIVER_VERSION=\"570.86.15\",container=\"main\","
                              "namespace=\"ml\",pod=\"train-a\"} 123456789\n"));
  EXPECT_THAT(text, HasSubstr("pod=\"train-a\"} 512.25\n"));
}

TEST_F(ExporterExpositionTest, MigInstancesGetTheirOwnMemorySeries) {
  const std::string text = Render(Input());
  const std::string gpu1 =
      "gpu=\"1\",UUID=\"GPU-1111\",pci_bus_id=\"00000000:B1:00.0\",device=\"nvidia1\","
      "modelName=\"NVIDIA A100-SXM4-40GB\"";
  const std::string node = "Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"570.86.15\"";
  // GPU-level series of a MIG GPU carry no pod labels.
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DEV_FB_USED{" + gpu1 + "," + node + "} 3000\n"));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DEV_GPU_TEMP{" + gpu1 + "," + node + "} 35\n"));
  // Instance 1 (two compute instances, two pods): 2000 + 512 MiB used of 19968.
  const std::string gi1 = gpu1 + ",GPU_I_PROFILE=\"3g.20gb\",GPU_I_ID=\"1\"," + node;
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DEV_FB_USED{" + gi1 +
                              ",container=\"server\",namespace=\"ml\",pod=\"infer\"} 2512\n"));
  EXPECT_THAT(text, Not(HasSubstr("pod=\"infer-2\"")))
      << "one series per instance, with its first holder";
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DEV_FB_FREE{" + gi1 +
                              ",container=\"server\",namespace=\"ml\",pod=\"infer\"} 17456\n"));
  // Instance 13, nobody holds it.
  const std::string gi13 = gpu1 + ",GPU_I_PROFILE=\"1g.5gb\",GPU_I_ID=\"13\"," + node;
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DEV_FB_USED{" + gi13 + "} 100\n"));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DEV_FB_FREE{" + gi13 + "} 4764\n"));
  // Fields the A100 does not report are left out, not zero.
  EXPECT_THAT(text, Not(HasSubstr("DCGM_FI_DEV_MEMORY_TEMP{" + gpu1)));
}

// A Hopper GPU in MIG mode: the profiling fields of each GPU instance whose GPM counters were
// read, with the instance's labels and its holder; an instance without counters has none.
TEST_F(ExporterExpositionTest, MigInstancesGetTheirOwnProfilingSeries) {
  // Give the MIG GPU of the small node Hopper's counters: instance 1 read, instance 13 not.
  sample_.gpus[1].activity = {.sm_active = 0.5, .pcie_tx_bytes_per_second = 4e9};
  sample_.gpus[1].instance_activity[1] = {.graphics_active = 0.75,
                                          .sm_active = 0.25,
                                          .tensor_active = 0.125,
                                          .dram_active = 0.5,
                                          .pcie_tx_bytes_per_second = 1.5e9,
                                          .pcie_rx_bytes_per_second = 3e8};
  const std::string text = Render(Input());
  const std::string gpu1 =
      "gpu=\"1\",UUID=\"GPU-1111\",pci_bus_id=\"00000000:B1:00.0\",device=\"nvidia1\","
      "modelName=\"NVIDIA A100-SXM4-40GB\"";
  const std::string node = "Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"570.86.15\"";
  const std::string gi1 = gpu1 + ",GPU_I_PROFILE=\"3g.20gb\",GPU_I_ID=\"1\"," + node +
                          ",container=\"server\",namespace=\"ml\",pod=\"infer\"";
  EXPECT_THAT(text, HasSubstr("DCGM_FI_PROF_SM_ACTIVE{" + gpu1 + "," + node + "} 0.5\n"));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_PROF_GR_ENGINE_ACTIVE{" + gi1 + "} 0.75\n"));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_PROF_SM_ACTIVE{" + gi1 + "} 0.25\n"));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{" + gi1 + "} 0.125\n"));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_PROF_DRAM_ACTIVE{" + gi1 + "} 0.5\n"));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_PROF_PCIE_TX_BYTES{" + gi1 + "} 1500000000\n"));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_PROF_PCIE_RX_BYTES{" + gi1 + "} 300000000\n"));
  EXPECT_THAT(text, Not(HasSubstr("DCGM_FI_PROF_SM_ACTIVE{" + gpu1 + ",GPU_I_PROFILE=\"1g.5gb\"")))
      << "instance 13 has no counters read";
  // The GPU-level field the GPU lacks stays absent; the instance's is there.
  EXPECT_THAT(text, Not(HasSubstr("DCGM_FI_PROF_DRAM_ACTIVE{" + gpu1 + "," + node + "}")));
}

TEST_F(ExporterExpositionTest, LostOrUnsampledGpusKeepOnlyTheirXid) {
  sample_.gpus[0] = hw::GpuSample{.index = 0, .lost = true};
  ExpositionInput input = Input();
  input.gpus[1].sample = nullptr;
  input.node_name = "";
  const std::string text = Render(input);
  EXPECT_THAT(text, Not(HasSubstr("DCGM_FI_DEV_GPU_TEMP")));
  EXPECT_THAT(text, Not(HasSubstr("DCGM_FI_DEV_FB_USED")));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DRIVER_VERSION=\"570.86.15\",container=\"main\","
                              "namespace=\"ml\",pod=\"train-a\",err_code=\"79\","
                              "err_msg=\"GPU has fallen off the bus\"} 79\n"));
  EXPECT_THAT(text, HasSubstr("modelName=\"NVIDIA A100-SXM4-40GB\","
                              "DCGM_FI_DRIVER_VERSION=\"570.86.15\",err_code=\"0\"} 0\n"))
      << "no XID yet: err_code 0 and no err_msg, as dcgm-exporter labels it";
  EXPECT_THAT(text, Not(HasSubstr("Hostname")));
}

// dcgm-exporter's --kubernetes-virtual-gpus: a shared GPU's (and MIG instance's) series once per
// holding container, so that each pod finds its own.
TEST_F(ExporterExpositionTest, SeriesPerHolderRepeatsASharedGpusSeriesPerPod) {
  ExpositionInput input = Input();
  input.series_per_holder = true;
  const std::string text = Render(input);
  EXPECT_THAT(text, HasSubstr("pod=\"train-a\"} 61\n"));
  EXPECT_THAT(text, HasSubstr("pod=\"train-b\"} 61\n"));
  EXPECT_THAT(text, HasSubstr(",container=\"c\",namespace=\"ml\",pod=\"infer-2\"} 2512\n"));
}

// An XID the catalogue does not name gets err_code alone.
TEST_F(ExporterExpositionTest, AnUnnamedXidHasNoErrMsg) {
  ExpositionInput input = Input();
  input.gpus[1].last_xid = 157;
  const std::string text = Render(input);
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DRIVER_VERSION=\"570.86.15\",err_code=\"157\"} 157\n"));
}

// A GPU a ResourceClaim gave carries the claim in dcgm-exporter's dra_* labels, between the
// container and the namespace (the order its series show them).
TEST_F(ExporterExpositionTest, GpusFromAClaimCarryTheDraLabels) {
  holders_["GPU-0000"].gpu = {{.pod_namespace = "gpu-test3",
                               .pod = "pod1",
                               .container = "ctr",
                               .dra = podresources::DraDevice{.driver = "gpu.nvidia.com",
                                                              .pool = "node-1",
                                                              .device = "gpu-0",
                                                              .claim_name = "single-gpu",
                                                              .claim_namespace = "gpu-test3"}}};
  const std::string text = Render(Input());
  EXPECT_THAT(text, HasSubstr("container=\"ctr\",dra_claim_name=\"single-gpu\","
                              "dra_claim_namespace=\"gpu-test3\",dra_device_name=\"gpu-0\","
                              "dra_driver_name=\"gpu.nvidia.com\",dra_pool_name=\"node-1\","
                              "namespace=\"gpu-test3\",pod=\"pod1\"}"));
}

TEST_F(ExporterExpositionTest, EnergyAndSelfMetrics) {
  const std::string text = Render(Input());
  EXPECT_THAT(text, HasSubstr("gpuop_gpu_energy_joules_total{gpu=\"0\",UUID=\"GPU-0000\"} "
                              "2000.25\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_pod_gpu_energy_joules_total{namespace=\"ml\","
                              "pod=\"infer\",container=\"server\"} 10.5\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_exporter_collection_duration_seconds_bucket{le=\"0.001\"} "
                              "1\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_exporter_collection_duration_seconds_bucket{le=\"+Inf\"} "
                              "3\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_exporter_collection_errors_total{source=\"events\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("process_resident_memory_bytes 7340032\n"));
}

TEST_F(ExporterExpositionTest, PromtoolFindsNothingBeyondDcgmExporterNames) {
  absl::StatusOr<std::vector<std::string>> problems = testing::PromtoolProblems(Render(Input()));
  if (problems.status().code() == absl::StatusCode::kFailedPrecondition) {
    GTEST_SKIP() << problems.status();
  }
  ASSERT_TRUE(problems.ok()) << problems.status();
  EXPECT_THAT(*problems, ::testing::IsEmpty());
  // The check itself catches what it should.
  auto bad = testing::PromtoolProblems("# HELP gpuop_x X.\n# TYPE gpuop_x counter\ngpuop_x 1\n");
  ASSERT_TRUE(bad.ok());
  EXPECT_THAT(*bad, ::testing::ElementsAre(HasSubstr("_total")));
  auto broken = testing::PromtoolProblems("gpuop_x{a=b} 1\n");
  ASSERT_TRUE(broken.ok());
  EXPECT_THAT(*broken, ::testing::Not(::testing::IsEmpty()));
}

TEST(ExporterFormatTest, PciBusIdsAndValues) {
  EXPECT_EQ(DcgmPciBusId("0000:17:00.0"), "00000000:17:00.0");
  EXPECT_EQ(DcgmPciBusId("0001:b1:00.0"), "00000001:B1:00.0");
  EXPECT_EQ(DcgmPciBusId("00000000:AB:00.0"), "00000000:AB:00.0");
  EXPECT_EQ(DcgmPciBusId("weird"), "WEIRD");
  const std::pair<double, const char*> values[] = {
      {0, "0"},
      {42, "42"},
      {-3, "-3"},
      {0.1, "0.1"},
      {512.25, "512.25"},
      {1e20, "1e+20"},
      {123456789012, "123456789012"},
      {std::numeric_limits<double>::infinity(), "+Inf"},
      {-std::numeric_limits<double>::infinity(), "-Inf"},
      {std::nan(""), "NaN"},
  };
  for (const auto& [value, text] : values) {
    std::string out;
    AppendSampleValue(out, value);
    EXPECT_EQ(out, text);
  }
  std::string escaped;
  AppendLabelValue(escaped, "a\"b\\c\nd");
  EXPECT_EQ(escaped, "a\\\"b\\\\c\\nd");
}

}  // namespace
}  // namespace gpuop::agent::exporter
