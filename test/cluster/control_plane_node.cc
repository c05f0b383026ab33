// The real node of profile kNode: its files, its images, commands inside it, its readiness and
// what it leaves in the machine's cgroup hierarchy.
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/status_macros.h"
#include "test/cluster/control_plane.h"
#include "test/fakes/sysfs/presets.h"

namespace gpuop::test {
namespace {

namespace fs = std::filesystem;

}  // namespace

absl::Status ControlPlane::PrepareNode() {
  // The API server's client certificate for kubelets (logs, exec), as kubeadm issues one.
  GPUOP_RETURN_IF_ERROR(IssueClientCert(pki_, "kube-apiserver-kubelet-client", "system:masters",
                                        "apiserver-kubelet-client")
                            .status());
  NodeSettings settings{.kubelet_port = ports_.kubelet,
                        .kubelet_healthz_port = ports_.kubelet_healthz,
                        .api_server = server_,
                        .runc = "/usr/sbin/runc",
                        .cni_bin_dir = "/usr/lib/cni"};
  for (const char* binary : {"/usr/sbin/runc", "/usr/lib/cni/loopback"}) {
    if (!fs::exists(binary)) {
      return absl::FailedPreconditionError(
          absl::StrCat("node: ", binary, " is missing; run scripts/setup to install it"));
    }
  }
  GPUOP_RETURN_IF_ERROR(WriteNodeFiles(settings, node_layout_, pki_));
  if (options_.node_pci_bus == NodePciBus::kHgxH100) {
    std::error_code ec;
    fs::remove_all(node_layout_.fake_sysfs, ec);
    if (!fs::create_directories(node_layout_.fake_sysfs, ec) || ec) {
      return absl::InternalError(absl::StrCat(
          "node: cannot create ", node_layout_.fake_sysfs.string(), ": ", ec.message()));
    }
    (void)fakes::NvidiaHgxNode(node_layout_.fake_sysfs, /*driver_loaded=*/false);
  }
  return absl::OkStatus();
}

absl::Status ControlPlane::ImportNodeImages() {
  std::vector<NodeImage> images = options_.node_images;
  bool has_pause = false;
  for (const NodeImage& image : images) has_pause = has_pause || image.ref == kPauseImage;
  if (!has_pause)
    images.push_back({.archive = DefaultImagesDir() / "pause.tar", .ref = kPauseImage});
  for (const NodeImage& image : images) GPUOP_RETURN_IF_ERROR(ImportImage(image));
  return absl::OkStatus();
}

absl::Status ControlPlane::ImportImage(const NodeImage& image) {
  if (!fs::exists(image.archive)) {
    return absl::FailedPreconditionError(
        absl::StrCat("node: image archive ", image.archive.string(), " for ", image.ref,
                     " is missing; build the images (scripts/image)"));
  }
  // The archive's index names its image by tag (org.opencontainers.image.ref.name, as
  // `umoci tag` writes it); ctr prefixes the repository: localhost/gpuop + 0.1.0.
  const size_t colon = image.ref.rfind(':');
  if (colon == std::string::npos || image.ref.find('/', colon) != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("node: image ref ", image.ref, ": want REPOSITORY:TAG"));
  }
  const std::string repository = image.ref.substr(0, colon);
  const fs::path log = options_.work_dir / "logs" / "ctr-import.log";
  GPUOP_ASSIGN_OR_RETURN(
      common::Subprocess ctr,
      common::Subprocess::Spawn(
          {.argv = {(options_.node_bin_dir / "ctr").string(), "--address",
                    node_layout_.ContainerdSocket().string(), "--namespace", "k8s.io", "images",
                    "import", "--local", "--base-name", repository, image.archive.string()},
           .output_path = log}));
  GPUOP_ASSIGN_OR_RETURN(int status, ctr.Wait(absl::Seconds(120)));
  if (status != 0) {
    return absl::InternalError(
        absl::StrCat("node: ctr images import ", image.archive.string(), " as ", image.ref, ": ",
                     common::DescribeWaitStatus(status), "; see ", log.string()));
  }
  return absl::OkStatus();
}

fs::path ControlPlane::NodeView(const fs::path& node_path) const {
  return fs::path("/proc") / absl::StrCat(node_init_pid_) / "root" / node_path.relative_path();
}

absl::StatusOr<common::Subprocess> ControlPlane::StartInNode(std::vector<std::string> argv,
                                                             fs::path log) {
  if (node_init_pid_ <= 0 || !IsRunning(Component::kNodeSandbox)) {
    return absl::FailedPreconditionError("node: the node sandbox is not running");
  }
  static int counter = 0;
  const fs::path out =
      !log.empty() ? log
                   : options_.work_dir / "logs" / absl::StrCat("node-run-", ++counter, ".log");
  std::vector<std::string> full = {GPUOP_NODE_SANDBOX, "exec", "--init-pid",
                                   absl::StrCat(node_init_pid_), "--"};
  full.insert(full.end(), argv.begin(), argv.end());
  return common::Subprocess::Spawn({.argv = std::move(full), .output_path = out});
}

absl::StatusOr<ControlPlane::RunResult> ControlPlane::RunInNode(std::vector<std::string> argv,
                                                                absl::Duration timeout) {
  const std::string program = argv.empty() ? "" : argv[0];
  static int runs = 0;
  const fs::path out = options_.work_dir / "logs" / absl::StrCat("node-exec-", ++runs, ".log");
  GPUOP_ASSIGN_OR_RETURN(common::Subprocess process, StartInNode(std::move(argv), out));
  absl::StatusOr<int> status = process.Wait(timeout);
  if (!status.ok()) {
    (void)process.Stop(absl::Seconds(2));
    return absl::DeadlineExceededError(
        absl::StrCat("node: ", program, " still running after ", absl::FormatDuration(timeout)));
  }
  return RunResult{.exit_code = WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status),
                   .output = common::ReadFile(out).value_or("")};
}

absl::StatusOr<bool> ControlPlane::NodeReady() {
  GPUOP_ASSIGN_OR_RETURN(kube::HttpResponse response,
                         probe_->Send({.url = absl::StrCat(server_, "/api/v1/nodes/", kNodeName),
                                       .timeout = absl::Seconds(5)}));
  if (response.status != 200) return false;
  const nlohmann::json node = nlohmann::json::parse(response.body, nullptr, false);
  if (node.is_discarded()) return false;
  const nlohmann::json* conditions = nullptr;
  if (auto status = node.find("status"); status != node.end() && status->is_object()) {
    if (auto c = status->find("conditions"); c != status->end() && c->is_array()) conditions = &*c;
  }
  if (conditions == nullptr) return false;
  for (const nlohmann::json& condition : *conditions) {
    if (condition.value("type", "") == "Ready") return condition.value("status", "") == "True";
  }
  return false;
}

// runc leaves a container's cgroups behind when the node's namespace ends under it; remove the
// (empty) ones named after this node's containers and no others.
void ControlPlane::CleanUpNodeCgroups() {
  std::set<std::string> ids;
  std::error_code ec;
  const fs::path tasks = node_layout_.run / "containerd" / "io.containerd.runtime.v2.task";
  for (const auto& ns : fs::directory_iterator(tasks, ec)) {
    for (const auto& task : fs::directory_iterator(ns.path(), ec)) {
      ids.insert(task.path().filename().string());
    }
  }
  if (ids.empty()) return;
  std::vector<fs::path> doomed;
  for (const auto& controller : fs::directory_iterator("/sys/fs/cgroup", ec)) {
    fs::recursive_directory_iterator it(controller.path(),
                                        fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it.depth() > 3) {
        it.disable_recursion_pending();
        continue;
      }
      if (it->is_directory(ec) && ids.contains(it->path().filename().string())) {
        doomed.push_back(it->path());
        it.disable_recursion_pending();
      }
    }
    ec.clear();
  }
  for (const fs::path& dir : doomed) {
    // Children first: rmdir removes only empty cgroups.
    std::vector<fs::path> nested;
    for (auto it = fs::recursive_directory_iterator(dir, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec)) nested.push_back(it->path());
    }
    for (auto n = nested.rbegin(); n != nested.rend(); ++n) ::rmdir(n->c_str());
    ::rmdir(dir.c_str());
  }
}

}  // namespace gpuop::test
