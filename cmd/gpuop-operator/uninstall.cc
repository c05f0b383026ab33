// gpuop-operator uninstall: Helm's pre-delete hook; stops the operands in order, restores the
// node files, and removes what gpuop put on the cluster (operator/uninstall/uninstaller.h).
#include <cstdio>
#include <cstdlib>

#include "cmd/gpuop-operator/commands.h"
#include "kube/config/rest_config.h"
#include "kube/transport/rest_client.h"
#include "operator/uninstall/uninstaller.h"

namespace gpuop::cmd {

void AddUninstallCommand(CLI::App& app) {
  struct Flags {
    std::string kubeconfig;
    std::string ns = "gpuop-system";
    std::string deployment = "gpuop-operator";
    int step_timeout_seconds = 300;
  };
  auto flags = std::make_shared<Flags>();
  if (const char* ns = std::getenv("POD_NAMESPACE")) flags->ns = ns;
  CLI::App* sub = app.add_subcommand(
      "uninstall",
      "Stop the operands in order, restore the node files and remove gpuop's objects and node "
      "labels (Helm's pre-delete hook)");
  sub->add_option("--kubeconfig", flags->kubeconfig, "Kubeconfig; in-cluster when unset");
  sub->add_option("--namespace", flags->ns, "The operator's namespace ($POD_NAMESPACE)")
      ->capture_default_str();
  sub->add_option("--deployment", flags->deployment, "The operator's Deployment")
      ->capture_default_str();
  sub->add_option("--step-timeout", flags->step_timeout_seconds,
                  "Seconds each step waits (pods gone, node files restored) before it is "
                  "reported and the next one runs")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->callback([flags] {
    absl::StatusOr<kube::RestConfig> config = kube::LoadDefaultConfig(flags->kubeconfig);
    if (!config.ok()) {
      std::fprintf(stderr, "uninstall: %s\n", config.status().ToString().c_str());
      std::exit(1);
    }
    auto rest = kube::RestClient::Create(*config, {.component = "operator-uninstall"});
    if (!rest.ok()) {
      std::fprintf(stderr, "uninstall: %s\n", rest.status().ToString().c_str());
      std::exit(1);
    }
    kube::Client client(std::shared_ptr<kube::RestClient>(*std::move(rest)));
    op::uninstall::Uninstaller uninstaller(
        client, {.ns = flags->ns,
                 .operator_deployment = flags->deployment,
                 .step_timeout = absl::Seconds(flags->step_timeout_seconds)});
    op::uninstall::UninstallReport report;
    const absl::Status status = uninstaller.Run(report);
    for (const std::string& line : report.done) std::printf("uninstall: %s\n", line.c_str());
    for (const std::string& line : report.problems) {
      std::fprintf(stderr, "uninstall: problem: %s\n", line.c_str());
    }
    // Problems are reported, never fatal: a failing hook would block `helm uninstall` for good.
    std::printf("uninstall: %s\n", status.ok() ? "done" : "done, with the problems above");
    std::exit(0);
  });
}

}  // namespace gpuop::cmd
