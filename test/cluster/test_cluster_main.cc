// gpuop-test-cluster: starts a test control plane, prints how to reach it, and stops it on
// Ctrl-C or SIGTERM. For exploring by hand what the tests do automatically.
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <signal.h>

#include "test/cluster/control_plane.h"

int main(int argc, char** argv) {
  CLI::App app{"Start a real Kubernetes test control plane on loopback until interrupted.",
               "gpuop-test-cluster"};
  std::string profile_name = "full";
  std::string work_dir;
  std::vector<std::string> images;
  app.add_option("--profile", profile_name,
                 "apiserver (etcd + kube-apiserver), full (+ controller-manager, scheduler, kwok) "
                 "or node (+ a real kubelet and containerd, node `localhost`)")
      ->capture_default_str();
  app.add_option("--image", images,
                 "node: ARCHIVE=REF imports an OCI archive into the node's containerd (the pause "
                 "image is imported from the build's images/ by default)");
  std::string pci_bus = "hgx-h100";
  app.add_option("--pci-bus", pci_bus,
                 "node: hgx-h100 (a SIMULATED HGX H100 board, matching the fake NVML scenario "
                 "h100-8x-nvswitch) or machine (this machine's own PCI bus)")
      ->check(CLI::IsMember({"hgx-h100", "machine"}))
      ->capture_default_str();
  app.add_option("--work-dir", work_dir,
                 "State directory (kept on exit); a temporary one if unset");
  CLI11_PARSE(app, argc, argv);

  absl::StatusOr<gpuop::test::Profile> profile = gpuop::test::ParseProfile(profile_name);
  if (!profile.ok()) {
    std::fprintf(stderr, "--profile: %s\n", std::string(profile.status().message()).c_str());
    return 2;
  }
  // Signals are taken synchronously below; children reset their mask before exec.
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, sig);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::vector<gpuop::test::NodeImage> node_images;
  for (const std::string& image : images) {
    const size_t eq = image.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "--image %s: want ARCHIVE=REF\n", image.c_str());
      return 2;
    }
    node_images.push_back({.archive = image.substr(0, eq), .ref = image.substr(eq + 1)});
  }
  auto cp = gpuop::test::ControlPlane::Start(
      {.profile = *profile,
       .work_dir = work_dir,
       .node_images = std::move(node_images),
       .node_pci_bus = pci_bus == "machine" ? gpuop::test::NodePciBus::kMachine
                                            : gpuop::test::NodePciBus::kHgxH100});
  if (!cp.ok()) {
    std::fprintf(stderr, "%s\n", cp.status().ToString().c_str());
    return 1;
  }
  if (!work_dir.empty()) (*cp)->KeepWorkDir();
  std::printf("control plane (%s) ready at %s\nexport KUBECONFIG=%s\n", profile_name.c_str(),
              (*cp)->server().c_str(), (*cp)->kubeconfig().c_str());
  if (*profile == gpuop::test::Profile::kNode) {
    std::printf("node %s: files under %s; containerd at %s\n", gpuop::test::kNodeName,
                (*cp)->node().root.c_str(), (*cp)->node().ContainerdSocket().c_str());
  }
  std::printf("Press Ctrl-C to stop.\n");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  std::printf("stopping (signal %d)\n", sig);
  const absl::Status stopped = (*cp)->Stop();
  if (!stopped.ok()) {
    std::fprintf(stderr, "%s\n", stopped.ToString().c_str());
    return 1;
  }
  return 0;
}
