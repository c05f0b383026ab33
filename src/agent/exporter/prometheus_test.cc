// A real Prometheus scrapes the exporter serving the fake 8 x H100 machine, and its query API
// returns DCGM_FI_DEV_GPU_TEMP for each GPU with dcgm-exporter's labels.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "agent/exporter/exporter.h"
#include "agent/exporter/exposition.h"
#include "agent/exporter/fake_node.h"
#include "common/process.h"
#include "hw/nvml/nvml_accelerator.h"
#include "kube/client/resource.h"
#include "kube/transport/curl_http_client.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::exporter {
namespace {

constexpr char kPrometheus[] = "/usr/bin/prometheus";
constexpr absl::Duration kWait = absl::Seconds(60);

// A loopback port nothing listens on right now.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

class ExporterPrometheusTest : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("GPUOP_FAKE_NVML_SCENARIO"); }

  // GETs `path` from Prometheus and parses the JSON; null when it does not answer yet.
  nlohmann::json Api(const std::string& path) {
    auto response = client_->Send(
        {.url = absl::StrCat("http://127.0.0.1:", port_, path), .timeout = absl::Seconds(5)});
    if (!response.ok() || response->status != 200) return nullptr;
    return nlohmann::json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  }

  // Starts Prometheus scraping 127.0.0.1:`target` every second and waits until the target is
  // up (scraped successfully).
  void StartPrometheus(int target) {
    port_ = FreePort();
    std::ofstream(dir_.path() / "prometheus.yml")
        << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        << "scrape_configs:\n"
        << "- job_name: gpuop\n"
        << "  static_configs: [{targets: ['127.0.0.1:" << target << "']}]\n";
    auto prometheus = common::Subprocess::Spawn(
        {.argv = {kPrometheus,
                  absl::StrCat("--config.file=", (dir_.path() / "prometheus.yml").string()),
                  absl::StrCat("--storage.tsdb.path=", (dir_.path() / "data").string()),
                  absl::StrCat("--web.listen-address=127.0.0.1:", port_)},
         .output_path = dir_.path() / "prometheus.log"});
    ASSERT_TRUE(prometheus.ok()) << prometheus.status();
    prometheus_ = std::make_unique<common::Subprocess>(*std::move(prometheus));
    bool up = false;
    for (absl::Time deadline = absl::Now() + kWait; !up && absl::Now() < deadline;) {
      ASSERT_TRUE(prometheus_->Running()) << prometheus_->DescribeExit() << "\n" << Log();
      const nlohmann::json targets = Api("/api/v1/targets");
      if (targets.is_object()) {
        for (const auto& t : targets["data"]["activeTargets"]) {
          if (t.value("health", "") != "up") continue;
          up = true;
          EXPECT_EQ(t.value("lastError", "?"), "") << "Prometheus could not use the scrape";
        }
      }
      if (!up) absl::SleepFor(absl::Milliseconds(200));
    }
    ASSERT_TRUE(up) << Log();
  }

  // The instant query's result vector, once it has `want` series (or the wait ran out).
  nlohmann::json Query(const std::string& promql, size_t want) {
    nlohmann::json result = nlohmann::json::array();
    for (absl::Time deadline = absl::Now() + kWait; absl::Now() < deadline;) {
      const nlohmann::json answer = Api("/api/v1/query?query=" + kube::UrlEncode(promql));
      if (answer.is_object() && answer.value("status", "") == "success") {
        result = answer["data"]["result"];
        if (result.size() >= want) break;
      }
      absl::SleepFor(absl::Milliseconds(200));
    }
    return result;
  }

  std::string Log() const {
    std::stringstream log;
    log << std::ifstream(dir_.path() / "prometheus.log").rdbuf();
    return log.str();
  }

  fakes::TempDir dir_;
  int port_ = 0;
  std::unique_ptr<common::Subprocess> prometheus_;
  std::unique_ptr<kube::CurlHttpClient> client_ = *kube::CurlHttpClient::Create({});
};

TEST_F(ExporterPrometheusTest, ARealPrometheusScrapesEveryGpuWithDcgmLabels) {
  if (!std::filesystem::exists(kPrometheus)) GTEST_SKIP() << kPrometheus << " is not installed";
  setenv("GPUOP_FAKE_NVML_SCENARIO", "h100-8x-nvswitch", 1);
  auto nvml = hw::NvmlAccelerator::Open({.library_path = testing::FakeNvmlLibrary()});
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  auto inventory = (*nvml)->Discover();
  ASSERT_TRUE(inventory.ok());
  Exporter exporter({.listen_address = "127.0.0.1:0",
                     .interval = absl::Seconds(1),
                     .pod_resources_socket = "",
                     .node_name = "node-1",
                     .accelerators = {nvml->get()}});
  ASSERT_TRUE(exporter.Start().ok());

  StartPrometheus(exporter.port());

  nlohmann::json series;
  for (absl::Time deadline = absl::Now() + kWait; absl::Now() < deadline;) {
    const nlohmann::json answer = Api("/api/v1/query?query=DCGM_FI_DEV_GPU_TEMP");
    if (answer.is_object() && answer["data"]["result"].size() == 8) {
      series = answer["data"]["result"];
      break;
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  ASSERT_EQ(series.size(), 8u) << Log();
  std::map<int, nlohmann::json> by_gpu;
  for (const auto& s : series) by_gpu[std::stoi(s["metric"]["gpu"].get<std::string>())] = s;
  ASSERT_EQ(by_gpu.size(), 8u);
  for (const hw::Gpu& gpu : inventory->gpus) {
    const nlohmann::json& labels = by_gpu[gpu.index]["metric"];
    EXPECT_EQ(labels["UUID"], gpu.uuid);
    EXPECT_EQ(labels["pci_bus_id"], DcgmPciBusId(gpu.pci_bus_id));
    EXPECT_EQ(labels["device"], absl::StrCat("nvidia", gpu.index));
    EXPECT_EQ(labels["modelName"], "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(labels["Hostname"], "node-1");
    EXPECT_EQ(labels["DCGM_FI_DRIVER_VERSION"], "570.86.15");
    EXPECT_EQ(labels["job"], "gpuop");
    EXPECT_FALSE(labels.contains("pod"));
    const double celsius = std::stod(by_gpu[gpu.index]["value"][1].get<std::string>());
    EXPECT_GT(celsius, 0);
  }
  EXPECT_GT(exporter.scrapes(), 0);

  ASSERT_TRUE(prometheus_->Stop(absl::Seconds(20)).ok());
  exporter.Stop();
}

// Every panel of NVIDIA's published dcgm-exporter dashboard has data for every GPU of the H100
// node (the profiling panels included: GPM), and a node whose GPUs are time-sliced between two
// pods each does not count a GPU twice: one series per GPU, so the power total is the GPUs'.
TEST_F(ExporterPrometheusTest, EveryPanelOfNvidiasDashboardHasDataAndSumsAreNotInflated) {
  if (!std::filesystem::exists(kPrometheus)) GTEST_SKIP() << kPrometheus << " is not installed";
  auto node = testing::FakeNode::StartWithPods(16);  // 2 pods per GPU
  ASSERT_TRUE(node.ok()) << node.status();
  Exporter exporter({.listen_address = "127.0.0.1:0",
                     .interval = absl::Seconds(1),
                     .pod_resources_socket = (*node)->pod_resources_socket(),
                     .node_name = "node-1",
                     .accelerators = {&(*node)->exporter_nvml()}});
  ASSERT_TRUE(exporter.Start().ok());
  StartPrometheus(exporter.port());

  std::ifstream panels(std::string(GPUOP_EXPORTER_TESTDATA) + "/dcgm-exporter-dashboard.promql");
  std::string line;
  int checked = 0;
  while (std::getline(panels, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t bar = line.find(" | ");
    ASSERT_NE(bar, std::string::npos) << line;
    const std::string title = line.substr(0, bar);
    std::string promql = line.substr(bar + 3);
    // The dashboard's "All" for both variables.
    for (const char* variable : {"$Hostname", "$gpu"}) {
      for (size_t at; (at = promql.find(variable)) != std::string::npos;) {
        promql.replace(at, std::string(variable).size(), ".*");
      }
    }
    const bool per_gpu = promql.find("by (Hostname, gpu") != std::string::npos ||
                         promql.find("by (Hostname, UUID, gpu)") != std::string::npos ||
                         title == "gpu variable";
    const nlohmann::json result = Query(promql, per_gpu ? 8 : 1);
    EXPECT_EQ(result.size(), per_gpu ? 8u : 1u) << title << ": " << promql << "\n" << result;
    ++checked;
  }
  EXPECT_EQ(checked, 10);

  // Not inflated: the shared GPUs have one series each, so a plain sum is the GPUs' total.
  const nlohmann::json total =
      Query("sum(max(DCGM_FI_DEV_POWER_USAGE) by (gpu)) - sum(DCGM_FI_DEV_POWER_USAGE)", 1);
  ASSERT_EQ(total.size(), 1u);
  EXPECT_EQ(std::stod(total[0]["value"][1].get<std::string>()), 0.0);
  EXPECT_EQ(Query("count(DCGM_FI_DEV_POWER_USAGE)", 1)[0]["value"][1], "8");
  // Each series still names a pod holding the GPU.
  EXPECT_EQ(Query("count(DCGM_FI_DEV_POWER_USAGE{namespace=\"bench\",pod=~\"pod-.*\"})",
                  1)[0]["value"][1],
            "8");

  ASSERT_TRUE(prometheus_->Stop(absl::Seconds(20)).ok());
  exporter.Stop();
}

}  // namespace
}  // namespace gpuop::agent::exporter
