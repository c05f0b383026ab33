// GPM (performance monitoring) samples and metrics, and the NVLink traffic fields: what a real
// NVML client can rely on and what it must not do.
#include "test/fakes/nvml/fake_nvml_test_util.h"

namespace gpuop::fakenvml {
namespace {

class FakeNvmlGpm : public FakeNvmlTest {};

TEST_F(FakeNvmlGpm, MetricsComeFromTwoSamplesOfOneHopperGpu) {
  UseControlFile();
  ASSERT_EQ(Start("h100-8x-nvswitch"), NVML_SUCCESS);
  Control("set 1 sm_active 55");
  Control("set 1 pcie_rx_mibps 300");
  nvmlGpmSupport_t support{.version = NVML_GPM_SUPPORT_VERSION};
  ASSERT_EQ(nvml.nvmlGpmQueryDeviceSupport(Gpu(1), &support), NVML_SUCCESS);
  EXPECT_EQ(support.isSupportedDevice, 1u);
  nvmlGpmSupport_t old{.version = 2};
  EXPECT_EQ(nvml.nvmlGpmQueryDeviceSupport(Gpu(1), &old), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);

  nvmlGpmSample_t a = nullptr;
  nvmlGpmSample_t b = nullptr;
  nvmlGpmSample_t other = nullptr;
  ASSERT_EQ(nvml.nvmlGpmSampleAlloc(&a), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlGpmSampleAlloc(&b), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlGpmSampleAlloc(&other), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlGpmSampleGet(Gpu(1), a), NVML_SUCCESS);
  Control("advance 1s");
  ASSERT_EQ(nvml.nvmlGpmSampleGet(Gpu(1), b), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlGpmSampleGet(Gpu(2), other), NVML_SUCCESS);

  nvmlGpmMetricsGet_t get{
      .version = NVML_GPM_METRICS_GET_VERSION, .numMetrics = 3, .sample1 = a, .sample2 = b};
  get.metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
  get.metrics[1].metricId = NVML_GPM_METRIC_PCIE_RX_PER_SEC;
  get.metrics[2].metricId = 4;  // integer utilisation: not modelled
  ASSERT_EQ(nvml.nvmlGpmMetricsGet(&get), NVML_SUCCESS);
  EXPECT_EQ(get.metrics[0].nvmlReturn, NVML_SUCCESS);
  EXPECT_DOUBLE_EQ(get.metrics[0].value, 55);
  EXPECT_DOUBLE_EQ(get.metrics[1].value, 300);
  EXPECT_EQ(get.metrics[2].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);

  // Samples of two GPUs, in the wrong order, a wrong version, freed samples: refused.
  nvmlGpmMetricsGet_t mixed = get;
  mixed.sample2 = other;
  EXPECT_EQ(nvml.nvmlGpmMetricsGet(&mixed), NVML_ERROR_INVALID_ARGUMENT);
  nvmlGpmMetricsGet_t backwards = get;
  std::swap(backwards.sample1, backwards.sample2);
  EXPECT_EQ(nvml.nvmlGpmMetricsGet(&backwards), NVML_ERROR_INVALID_ARGUMENT);
  nvmlGpmMetricsGet_t version = get;
  version.version = 2;
  EXPECT_EQ(nvml.nvmlGpmMetricsGet(&version), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  EXPECT_EQ(nvml.nvmlGpmSampleFree(a), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlGpmSampleFree(a), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlGpmMetricsGet(&get), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlGpmSampleFree(b), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlGpmSampleFree(other), NVML_SUCCESS);
}

// nvmlGpmMigSampleGet: one GPU instance's counters, through its parent GPU and the instance's id;
// the instance has the GPU's activity and its share (memory slices) of the GPU's PCIe traffic.
TEST_F(FakeNvmlGpm, AMigInstanceIsSampledThroughItsParent) {
  UseControlFile();
  ASSERT_EQ(Start("h100-8x-nvswitch"), NVML_SUCCESS);
  Control("set 1 sm_active 40");
  Control("set 1 pcie_tx_mibps 800");
  nvmlGpmSample_t a = nullptr;
  nvmlGpmSample_t b = nullptr;
  nvmlGpmSample_t whole = nullptr;
  ASSERT_EQ(nvml.nvmlGpmSampleAlloc(&a), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlGpmSampleAlloc(&b), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlGpmSampleAlloc(&whole), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlGpmMigSampleGet(Gpu(1), 1, a), NVML_ERROR_NOT_SUPPORTED) << "MIG is off";

  nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
  ASSERT_EQ(nvml.nvmlDeviceSetMigMode(Gpu(1), NVML_DEVICE_MIG_ENABLE, &activation), NVML_SUCCESS);
  ASSERT_EQ(activation, NVML_SUCCESS);
  nvmlGpuInstance_t instance = nullptr;
  ASSERT_EQ(nvml.nvmlDeviceCreateGpuInstance(Gpu(1), 9, &instance), NVML_SUCCESS);  // 3g.40gb
  nvmlGpuInstanceInfo_t info{};
  ASSERT_EQ(nvml.nvmlGpuInstanceGetInfo(instance, &info), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlGpmMigSampleGet(Gpu(1), info.id, a), NVML_SUCCESS);
  Control("advance 1s");
  ASSERT_EQ(nvml.nvmlGpmMigSampleGet(Gpu(1), info.id, b), NVML_SUCCESS);
  nvmlGpmMetricsGet_t get{
      .version = NVML_GPM_METRICS_GET_VERSION, .numMetrics = 2, .sample1 = a, .sample2 = b};
  get.metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
  get.metrics[1].metricId = NVML_GPM_METRIC_PCIE_TX_PER_SEC;
  ASSERT_EQ(nvml.nvmlGpmMetricsGet(&get), NVML_SUCCESS);
  EXPECT_DOUBLE_EQ(get.metrics[0].value, 40);
  EXPECT_DOUBLE_EQ(get.metrics[1].value, 800.0 * 3 / 8) << "three of the eight memory slices";

  // An instance's sample and the whole GPU's make no interval; unknown instances, a handle that
  // is not the parent's and a GPU without GPM are refused.
  ASSERT_EQ(nvml.nvmlGpmSampleGet(Gpu(1), whole), NVML_SUCCESS);
  nvmlGpmMetricsGet_t mixed = get;
  mixed.sample2 = whole;
  EXPECT_EQ(nvml.nvmlGpmMetricsGet(&mixed), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlGpmMigSampleGet(Gpu(1), info.id + 1, a), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvml.nvmlGpmMigSampleGet(Gpu(1), info.id, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlGpmMigSampleGet(Gpu(2), info.id, a), NVML_ERROR_NOT_SUPPORTED);
  for (nvmlGpmSample_t sample : {a, b, whole})
    EXPECT_EQ(nvml.nvmlGpmSampleFree(sample), NVML_SUCCESS);
}

TEST_F(FakeNvmlGpm, GpusBeforeHopperHaveNoGpm) {
  ASSERT_EQ(Start("a100-8x-mig"), NVML_SUCCESS);
  nvmlGpmSupport_t support{.version = NVML_GPM_SUPPORT_VERSION};
  ASSERT_EQ(nvml.nvmlGpmQueryDeviceSupport(Gpu(4), &support), NVML_SUCCESS);
  EXPECT_EQ(support.isSupportedDevice, 0u);
  nvmlGpmSample_t sample = nullptr;
  ASSERT_EQ(nvml.nvmlGpmSampleAlloc(&sample), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlGpmSampleGet(Gpu(4), sample), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlGpmMigSampleGet(Gpu(0), 1, sample), NVML_ERROR_NOT_SUPPORTED)
      << "an A100 with MIG on";
  EXPECT_EQ(nvml.nvmlGpmSampleFree(sample), NVML_SUCCESS);
}

TEST_F(FakeNvmlGpm, NvlinkTrafficIsTheSumOverLinksOnly) {
  UseControlFile();
  ASSERT_EQ(Start("h100-8x-nvswitch"), NVML_SUCCESS);
  Control("set 0 nvlink_raw_tx_kib 1600");
  nvmlFieldValue_t fields[3]{};
  fields[0].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX;
  fields[0].scopeId = kNvmlAllLinks;
  fields[1].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
  fields[1].scopeId = kNvmlAllLinks;
  fields[2].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX;
  fields[2].scopeId = 3;  // one link: not modelled
  ASSERT_EQ(nvml.nvmlDeviceGetFieldValues(Gpu(0), 3, fields), NVML_SUCCESS);
  EXPECT_EQ(fields[0].nvmlReturn, NVML_SUCCESS);
  EXPECT_EQ(fields[0].value.ullVal, 1600u);
  EXPECT_EQ(fields[1].value.ullVal, 1500u);
  EXPECT_EQ(fields[2].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
}

}  // namespace
}  // namespace gpuop::fakenvml
