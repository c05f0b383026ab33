// The collector and the exporter with a fake accelerator: cached scrapes, kubelet failures,
// XIDs, energy accounting, re-discovery and /healthz on an injected clock.
#include "agent/exporter/collector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "agent/exporter/exporter.h"
#include "agent/exporter/exposition.h"
#include "agent/exporter/test_util.h"
#include "agent/podresources/fake_pod_lister.h"
#include "common/fake_clock.h"
#include "kube/transport/curl_http_client.h"

namespace gpuop::agent::exporter {
namespace {

using podresources::FakePodLister;
using testing::FakeAccelerator;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr absl::Duration kWait = absl::Seconds(20);

// Polls `condition` in real time; true once it holds.
template <typename Fn>
bool Eventually(Fn condition) {
  for (absl::Time deadline = absl::Now() + kWait; absl::Now() < deadline;) {
    if (condition()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return condition();
}

podresources::PodDevice Device(std::string id, std::string pod) {
  return podresources::PodDevice{.resource = "nvidia.com/gpu",
                                 .device_id = std::move(id),
                                 .pod_namespace = "ml",
                                 .pod = std::move(pod),
                                 .container = "main"};
}

class ExporterCollectorTest : public ::testing::Test {
 protected:
  CollectorOptions Options() {
    return CollectorOptions{.accelerators = {&accelerator_},
                            .interval = absl::Hours(1),
                            .pods = &pods_,
                            .node_name = "node-1",
                            .event_wait = absl::Milliseconds(20)};
  }

  absl::StatusOr<kube::HttpResponse> Get(int port, const std::string& path) {
    if (client_ == nullptr) client_ = *kube::CurlHttpClient::Create({});
    return client_->Send({.url = absl::StrCat("http://127.0.0.1:", port, path)});
  }

  FakeAccelerator accelerator_{testing::SmallInventory(), testing::SmallSample()};
  FakePodLister pods_;
  std::unique_ptr<kube::CurlHttpClient> client_;
};

TEST_F(ExporterCollectorTest, ScrapesServeTheCachedTextAndNeverTouchTheHardware) {
  pods_.Set(std::vector<podresources::PodDevice>{Device("GPU-0000", "train")});
  Exporter exporter({.listen_address = "127.0.0.1:0",
                     .interval = absl::Hours(1),
                     .node_name = "node-1",
                     .accelerators = {&accelerator_},
                     .pod_lister = &pods_});
  ASSERT_TRUE(exporter.Start().ok());
  ASSERT_TRUE(Eventually([&] { return exporter.collector().collections() == 1; }));
  const std::shared_ptr<const std::string> text = exporter.collector().Exposition();
  ASSERT_THAT(*text, HasSubstr("pod=\"train\"} 61\n"));
  for (int i = 1; i <= 5; ++i) {
    auto response = Get(exporter.port(), "/metrics");
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->Header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
    EXPECT_THAT(response->body, StartsWith(*text));
    EXPECT_EQ(response->body.substr(text->size()),
              absl::StrCat("# HELP gpuop_exporter_scrapes_total Scrapes of /metrics served.\n"
                           "# TYPE gpuop_exporter_scrapes_total counter\n"
                           "gpuop_exporter_scrapes_total ",
                           i, "\n"));
  }
  // The same text object, and no sample, discovery or kubelet call for any scrape.
  EXPECT_EQ(exporter.collector().Exposition().get(), text.get());
  EXPECT_EQ(accelerator_.samples(), 1);
  EXPECT_EQ(accelerator_.discovers(), 1);
  EXPECT_EQ(pods_.calls(), 1);
  EXPECT_EQ(exporter.scrapes(), 5);
  exporter.Stop();
}

TEST_F(ExporterCollectorTest, MissingKubeletMeansNoPodLabelsCountedErrorsAndSamplingGoesOn) {
  std::unique_ptr<podresources::PodLister> kubelet =
      podresources::NewKubeletPodLister("/nonexistent/pod-resources/kubelet.sock");
  CollectorOptions options = Options();
  options.pods = kubelet.get();
  options.pod_resources_timeout = absl::Seconds(1);
  Collector collector(options);
  collector.CollectOnce();
  accelerator_.SetSample([] {
    hw::Sample sample = testing::SmallSample();
    sample.gpus[0].temperature_celsius = 62;
    return sample;
  }());
  collector.CollectOnce();
  const std::string text = *collector.Exposition();
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DRIVER_VERSION=\"570.86.15\"} 62\n"));
  EXPECT_THAT(text, Not(HasSubstr("pod=")));
  EXPECT_THAT(text, HasSubstr("gpuop_exporter_pod_resources_errors_total 2\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_exporter_collections_total 2\n"));
  EXPECT_EQ(accelerator_.samples(), 2);
  EXPECT_TRUE(collector.Health().ok()) << collector.Health();
}

TEST_F(ExporterCollectorTest, AKubeletOutageKeepsTheLastPodLabels) {
  Collector collector(Options());
  pods_.Set(
      std::vector<podresources::PodDevice>{Device("GPU-0000::0", "a"), Device("GPU-0000::1", "b")});
  collector.CollectOnce();
  EXPECT_THAT(*collector.Exposition(), HasSubstr("pod=\"a\"} 61\n"));
  EXPECT_THAT(*collector.Exposition(), Not(HasSubstr("pod=\"b\"")))
      << "one series per GPU, with its first holder";
  pods_.Set(absl::DeadlineExceededError("kubelet too slow"));
  collector.CollectOnce();
  EXPECT_THAT(*collector.Exposition(), HasSubstr("pod=\"a\"} 61\n"));
  EXPECT_THAT(*collector.Exposition(), HasSubstr("gpuop_exporter_pod_resources_errors_total 1\n"));
  pods_.Set(std::vector<podresources::PodDevice>{});
  collector.CollectOnce();
  EXPECT_THAT(*collector.Exposition(), Not(HasSubstr("pod=")));
}

TEST_F(ExporterCollectorTest, TheLatestXidOfEachGpuIsShown) {
  Collector collector(Options());
  collector.Start();
  accelerator_.PushEvent({.kind = hw::HardwareEvent::Kind::kXid, .gpu_index = 1, .xid = 79});
  accelerator_.PushEvent({.kind = hw::HardwareEvent::Kind::kXid, .gpu_index = 1, .xid = 48});
  accelerator_.PushEvent({.kind = hw::HardwareEvent::Kind::kDoubleBitEcc, .gpu_index = 0});
  const std::string gpu1 =
      "modelName=\"NVIDIA A100-SXM4-40GB\",Hostname=\"node-1\","
      "DCGM_FI_DRIVER_VERSION=\"570.86.15\",";
  EXPECT_TRUE(Eventually([&] {
    collector.CollectOnce();
    return collector.Exposition()->find("DCGM_FI_DEV_XID_ERRORS{gpu=\"1\"") != std::string::npos &&
           collector.Exposition()->find(
               gpu1 + "err_code=\"48\",err_msg=\"DBE (Double Bit Error) ECC Error\"} 48\n") !=
               std::string::npos;
  })) << *collector.Exposition();
  EXPECT_THAT(*collector.Exposition(), HasSubstr("DCGM_FI_DEV_XID_ERRORS{gpu=\"0\""));
  const absl::Time start = absl::Now();
  collector.Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(ExporterCollectorTest, EnergyIsChargedToTheHoldersAndSurvivesCounterResets) {
  Collector collector(Options());
  // GPU 0 time-sliced by a and b; MIG instance 1 (3 of 7 slices) held by m.
  pods_.Set(std::vector<podresources::PodDevice>{
      Device("GPU-0000::0", "a"), Device("GPU-0000::1", "b"), Device("MIG-1111-a", "m")});
  hw::Sample sample = testing::SmallSample();
  sample.gpus[0].energy_joules = 1000;
  accelerator_.SetSample(sample);
  collector.CollectOnce();  // the baseline
  sample.time += absl::Seconds(10);
  sample.gpus[0].energy_joules = 1100;  // +100 J
  accelerator_.SetSample(sample);       // GPU 1 has no counter: 90 W x 10 s = 900 J
  collector.CollectOnce();
  sample.time += absl::Seconds(10);
  sample.gpus[0].energy_joules = 40;  // the driver reloaded: nothing is added
  sample.gpus[1].power_watts = 0;
  accelerator_.SetSample(sample);
  collector.CollectOnce();
  const std::string text = *collector.Exposition();
  EXPECT_THAT(text, HasSubstr("gpuop_gpu_energy_joules_total{gpu=\"0\",UUID=\"GPU-0000\"} 100\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_gpu_energy_joules_total{gpu=\"1\",UUID=\"GPU-1111\"} 900\n"));
  EXPECT_THAT(text, HasSubstr("{namespace=\"ml\",pod=\"a\",container=\"main\"} 50\n"));
  EXPECT_THAT(text, HasSubstr("{namespace=\"ml\",pod=\"b\",container=\"main\"} 50\n"));
  std::string m = "{namespace=\"ml\",pod=\"m\",container=\"main\"} ";
  AppendSampleValue(m, 900 * (3.0 / 7));
  EXPECT_THAT(text, HasSubstr(m + "\n"));
  // A container that no longer holds anything leaves the exposition.
  pods_.Set(std::vector<podresources::PodDevice>{Device("GPU-0000::0", "a")});
  collector.CollectOnce();
  EXPECT_THAT(*collector.Exposition(), Not(HasSubstr("pod=\"b\",container")));
}

TEST_F(ExporterCollectorTest, AFailedSampleKeepsTheEnergyTotals) {
  Collector collector(Options());
  hw::Sample sample = testing::SmallSample();
  sample.gpus[0].energy_joules = 1000;
  accelerator_.SetSample(sample);
  collector.CollectOnce();
  sample.time += absl::Seconds(10);
  sample.gpus[0].energy_joules = 1070;
  accelerator_.SetSample(sample);
  collector.CollectOnce();
  accelerator_.FailSamples(absl::UnavailableError("driver busy"));
  collector.CollectOnce();
  EXPECT_THAT(*collector.Exposition(), Not(HasSubstr("DCGM_FI_DEV_GPU_TEMP")));
  accelerator_.FailSamples(absl::OkStatus());
  collector.CollectOnce();
  EXPECT_THAT(*collector.Exposition(),
              HasSubstr("gpuop_gpu_energy_joules_total{gpu=\"0\",UUID=\"GPU-0000\"} 70\n"));
}

TEST_F(ExporterCollectorTest, UnknownDevicesTriggerOneRediscovery) {
  CollectorOptions options = Options();
  options.unknown_device_rediscover_gap = absl::Hours(1);
  Collector collector(options);
  pods_.Set(std::vector<podresources::PodDevice>{Device("MIG-new-layout", "p")});
  collector.CollectOnce();
  EXPECT_EQ(accelerator_.discovers(), 1);
  collector.CollectOnce();  // re-discovers: the pod may hold a device of a new MIG layout
  EXPECT_EQ(accelerator_.discovers(), 2);
  collector.CollectOnce();  // not again within the gap
  EXPECT_EQ(accelerator_.discovers(), 2);
}

TEST_F(ExporterCollectorTest, HealthzFollowsCollectionsOnTheInjectedClock) {
  common::FakeClock clock;
  {
    CollectorOptions options = Options();
    options.clock = &clock;
    Collector idle(options);
    EXPECT_EQ(idle.Health().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(std::string(idle.Health().message()), HasSubstr("no successful collection yet"));
  }
  Exporter exporter({.listen_address = "127.0.0.1:0",
                     .interval = absl::Seconds(10),
                     .accelerators = {&accelerator_},
                     .clock = &clock,
                     .pod_lister = &pods_});
  ASSERT_TRUE(exporter.Start().ok());
  ASSERT_TRUE(Eventually([&] { return exporter.collector().collections() == 1; }));
  auto healthy = Get(exporter.port(), "/healthz");
  ASSERT_TRUE(healthy.ok());
  EXPECT_EQ(healthy->status, 200);
  EXPECT_EQ(healthy->body, "ok\n");

  accelerator_.FailSamples(absl::UnavailableError("nvmlDeviceGetTemperature(GPU 0): GPU is lost"));
  clock.Advance(absl::Seconds(31));
  ASSERT_TRUE(Eventually([&] { return exporter.collector().collections() == 2; }));
  auto failing = Get(exporter.port(), "/healthz");
  ASSERT_TRUE(failing.ok());
  EXPECT_EQ(failing->status, 503);
  EXPECT_THAT(failing->body, HasSubstr("last successful collection 31s ago"));
  EXPECT_THAT(failing->body, HasSubstr("GPU is lost"));
  EXPECT_THAT(*exporter.collector().Exposition(),
              HasSubstr("gpuop_exporter_collection_errors_total{source=\"sample\"} 1\n"));

  accelerator_.FailSamples(absl::OkStatus());
  clock.Advance(absl::Seconds(10));
  ASSERT_TRUE(Eventually([&] { return exporter.collector().collections() == 3; }));
  auto recovered = Get(exporter.port(), "/healthz");
  ASSERT_TRUE(recovered.ok());
  EXPECT_EQ(recovered->status, 200);
  exporter.Stop();
}

TEST_F(ExporterCollectorTest, ABadListenAddressIsRefused) {
  Exporter exporter({.listen_address = "nowhere", .accelerators = {&accelerator_}});
  EXPECT_EQ(exporter.Start().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpuop::agent::exporter
