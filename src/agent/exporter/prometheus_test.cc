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

  std::string Log() const {
    std::stringstream log;
    log << std::ifstream(dir_.path() / "prometheus.log").rdbuf();
    return log.str();
  }

  fakes::TempDir dir_;
  int port_ = 0;
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

  port_ = FreePort();
  std::ofstream(dir_.path() / "prometheus.yml")
      << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
      << "scrape_configs:\n"
      << "- job_name: gpuop\n"
      << "  static_configs: [{targets: ['127.0.0.1:" << exporter.port() << "']}]\n";
  auto prometheus = common::Subprocess::Spawn(
      {.argv = {kPrometheus,
                absl::StrCat("--config.file=", (dir_.path() / "prometheus.yml").string()),
                absl::StrCat("--storage.tsdb.path=", (dir_.path() / "data").string()),
                absl::StrCat("--web.listen-address=127.0.0.1:", port_)},
       .output_path = dir_.path() / "prometheus.log"});
  ASSERT_TRUE(prometheus.ok()) << prometheus.status();

  // The target is up once Prometheus has scraped it successfully.
  bool up = false;
  for (absl::Time deadline = absl::Now() + kWait; !up && absl::Now() < deadline;) {
    ASSERT_TRUE(prometheus->Running()) << prometheus->DescribeExit() << "\n" << Log();
    const nlohmann::json targets = Api("/api/v1/targets");
    if (targets.is_object()) {
      for (const auto& target : targets["data"]["activeTargets"]) {
        if (target.value("health", "") != "up") continue;
        up = true;
        EXPECT_EQ(target.value("lastError", "?"), "") << "Prometheus could not use the scrape";
      }
    }
    if (!up) absl::SleepFor(absl::Milliseconds(200));
  }
  ASSERT_TRUE(up) << Log();

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

  ASSERT_TRUE(prometheus->Stop(absl::Seconds(20)).ok());
  exporter.Stop();
}

}  // namespace
}  // namespace gpuop::agent::exporter
