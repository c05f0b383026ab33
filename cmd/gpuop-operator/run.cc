// gpuop-operator run: the controllers, /metrics, /healthz and /readyz, until SIGTERM.
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <malloc.h>
#include <unistd.h>

#include "cmd/gpuop-operator/commands.h"
#include "common/http/server.h"
#include "common/log.h"
#include "common/signals.h"
#include "kube/config/rest_config.h"
#include "kube/transport/rest_client.h"
#include "operator/app/operator.h"

namespace gpuop::cmd {
namespace {

[[noreturn]] void Fail(const std::string& what, const absl::Status& status) {
  common::Log(common::LogLevel::kError, "operator", what,
              {{"error", std::string(status.message())}});
  std::exit(1);
}

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "gpuop-operator";
  return name;
}

}  // namespace

void AddRunCommand(CLI::App& app) {
  struct Flags {
    std::string kubeconfig;
    std::string ns = "gpuop-system";
    std::string listen = ":8080";
    std::string identity;
    std::string log_format = "text";
    bool leader_elect = false;
    int node_workers = 4;
    int qps = 200;
    int burst = 400;
  };
  auto flags = std::make_shared<Flags>();
  if (const char* ns = std::getenv("POD_NAMESPACE")) flags->ns = ns;
  if (const char* pod = std::getenv("POD_NAME")) flags->identity = pod;
  CLI::App* sub = app.add_subcommand(
      "run", "Run the controllers (policy, node labelling, operands, upgrades, remediation)");
  sub->add_option("--kubeconfig", flags->kubeconfig, "Kubeconfig; in-cluster when unset");
  sub->add_option("--namespace", flags->ns,
                  "The operator's namespace: operands and the Lease ($POD_NAMESPACE)")
      ->capture_default_str();
  sub->add_option("--listen", flags->listen, "host:port for /metrics, /healthz and /readyz")
      ->capture_default_str();
  sub->add_option("--identity", flags->identity,
                  "This replica in the Lease and Events ($POD_NAME, else the hostname)");
  sub->add_flag("--leader-elect", flags->leader_elect,
                "Run the controllers only while holding the Lease gpuop-operator (use with "
                "more than one replica)");
  sub->add_option("--node-workers", flags->node_workers, "Nodes reconciled at once")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->add_option("--qps", flags->qps, "API requests per second, sustained")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  sub->add_option("--burst", flags->burst, "API requests in a burst")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  sub->add_option("--log-format", flags->log_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  sub->callback([flags] {
    common::BlockTerminationSignals();
    // Memory: few malloc arenas (the workers' allocations are short-lived JSON), and free pages
    // handed back to the kernel periodically, so resident memory follows the live cache rather
    // than the start-up peak of listing and writing thousands of objects.
    mallopt(M_ARENA_MAX, 2);
    std::jthread trimmer([](std::stop_token stop) {
      std::mutex mu;
      std::condition_variable_any wake;
      std::unique_lock lock(mu);
      while (!wake.wait_for(lock, stop, std::chrono::seconds(30), [] { return false; }) &&
             !stop.stop_requested()) {
        malloc_trim(0);
      }
    });
    common::LogFormat format = common::LogFormat::kText;
    common::ParseLogFormat(flags->log_format, format);
    common::SetLogFormat(format);
    if (flags->identity.empty()) flags->identity = Hostname();

    metrics::Registry registry;
    absl::StatusOr<kube::RestConfig> config = kube::LoadDefaultConfig(flags->kubeconfig);
    if (!config.ok()) Fail("load kubeconfig", config.status());
    config->qps = flags->qps;
    config->burst = flags->burst;
    auto rest = kube::RestClient::Create(*config, {.component = "operator", .metrics = &registry});
    if (!rest.ok()) Fail("create API client", rest.status());
    kube::Client client(std::shared_ptr<kube::RestClient>(*std::move(rest)));

    op::Operator op(client, registry,
                    {.ns = flags->ns,
                     .identity = flags->identity,
                     .leader_elect = flags->leader_elect,
                     .node_workers = flags->node_workers});

    absl::StatusOr<std::pair<std::string, int>> address = http::ParseListenAddress(flags->listen);
    if (!address.ok()) Fail("--listen", address.status());
    http::Server server({.host = address->first, .port = address->second});
    server.Handle("/metrics", [&registry](const http::Request&) {
      http::Response r;
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = registry.Render();
      return r;
    });
    server.Handle("/healthz", [&op](const http::Request&) {
      return op.Healthy() ? http::Response::Text(200, "ok")
                          : http::Response::Text(500, "the operator failed; see its log");
    });
    server.Handle("/readyz", [&op](const http::Request&) {
      return op.Ready() ? http::Response::Text(200, "ok")
                        : http::Response::Text(503, "cache not synced yet");
    });
    if (absl::Status started = server.Start(); !started.ok()) Fail("serve", started);
    common::Log(common::LogLevel::kInfo, "operator", "serving",
                {{"port", std::to_string(server.port())},
                 {"namespace", flags->ns},
                 {"identity", flags->identity}});

    std::stop_source stop;
    absl::Status result;
    std::thread runner([&] { result = op.Run(stop.get_token()); });
    std::thread waiter([&] {
      const int sig = common::WaitForTerminationSignal();
      common::Log(common::LogLevel::kInfo, "operator", "signal: shutting down",
                  {{"signal", std::to_string(sig)}});
      stop.request_stop();
    });
    runner.join();
    if (!stop.stop_requested()) {
      // Run ended by itself (start-up failure or lost Lease): exit so the pod restarts.
      server.Stop();
      Fail("operator stopped", result.ok() ? absl::AbortedError("lost the Lease") : result);
    }
    waiter.join();
    server.Stop();
    common::Log(common::LogLevel::kInfo, "operator", "stopped");
  });
}

}  // namespace gpuop::cmd
