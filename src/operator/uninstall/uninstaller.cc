#include "operator/uninstall/uninstaller.h"

#include <functional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json_access.h"
#include "kube/client/resource.h"
#include "operator/api/resources.h"
#include "operator/render/render.h"
#include "operator/uninstall/node_cleanup.h"

namespace gpuop::op::uninstall {
namespace {

using Json = nlohmann::json;
namespace res = kube::resources;

constexpr char kNameLabel[] = "app.kubernetes.io/name";
const std::string kRendered = absl::StrCat(kManagedByLabel, "=", kManagedByValue);

// The components whose DaemonSets stay until the GPU clients are gone: the driver (the clients
// hold it) and those that undo what they changed on the node afterwards (node files, power
// limits).
bool IsHostComponent(const std::string& component) {
  return component == "driver" || component == "runtime" || component == "cdi" ||
         component == "power-manager";
}

std::string Component(const Json& object) {
  return common::JsonString(common::JsonField(common::JsonField(object, "metadata"), "labels"),
                            kComponentLabel);
}

std::string Name(const Json& object) {
  return common::JsonString(common::JsonField(object, "metadata"), "name");
}

// Keeps polling `done` (OK: finished; any other status: what is still pending) until it
// finishes or `timeout` passes; DeadlineExceeded then carries the last pending reason.
absl::Status AwaitDone(absl::Duration timeout, absl::Duration poll,
                       const std::function<absl::Status()>& done) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status last;
  while (true) {
    last = done();
    if (last.ok()) return last;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("after ", absl::FormatDuration(timeout), ": ", last.message()));
    }
    absl::SleepFor(poll);
  }
}

// Every pod of DaemonSet `ds` (as last read) belongs to its current template and has run its
// command to exit 0 at least once; otherwise what is pending.
absl::Status RanToSuccess(kube::Client& client, const std::string& ns, const Json& ds) {
  const Json& status = common::JsonField(ds, "status");
  const Json& meta = common::JsonField(ds, "metadata");
  if (common::JsonInt(status, "observedGeneration") < common::JsonInt(meta, "generation")) {
    return absl::UnavailableError(absl::StrCat(Name(ds), ": not observed yet"));
  }
  const int64_t desired = common::JsonInt(status, "desiredNumberScheduled");
  absl::StatusOr<kube::ObjectList> pods =
      client.List(res::kPods, ns, {.label_selector = absl::StrCat(kNameLabel, "=", Name(ds))});
  if (!pods.ok()) return pods.status();
  const std::string generation = absl::StrCat(common::JsonInt(meta, "generation"));
  int64_t finished = 0;
  for (const Json& pod : pods->items) {
    const Json& labels = common::JsonField(common::JsonField(pod, "metadata"), "labels");
    if (common::JsonString(labels, "pod-template-generation") != generation) continue;
    const Json& containers =
        common::JsonField(common::JsonField(pod, "status"), "containerStatuses");
    if (!containers.is_array() || containers.empty()) continue;
    const Json& c = containers[0];
    for (const char* when : {"state", "lastState"}) {
      const Json& terminated = common::JsonField(common::JsonField(c, when), "terminated");
      if (terminated.is_object() && common::JsonInt(terminated, "exitCode", -1) == 0) {
        ++finished;
        break;
      }
    }
  }
  if (finished >= desired) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat(Name(ds), ": ", finished, " of ", desired, " nodes done"));
}

}  // namespace

std::vector<std::string> UndoCommand(const std::vector<std::string>& command) {
  if (command.size() >= 3 && command[1] == "runtime" && command[2] == "configure") {
    std::vector<std::string> undo = {command[0], "runtime", "unconfigure"};
    for (size_t i = 3; i < command.size(); ++i) {
      if (command[i] != "--keep-running") undo.push_back(command[i]);
    }
    return undo;
  }
  if (command.size() >= 3 && command[1] == "cdi" && command[2] == "generate") {
    std::vector<std::string> undo = {command[0], "cdi", "remove"};
    for (size_t i = 3; i < command.size(); ++i) {
      for (const char* kept :
           {"--output-dir=", "--host-root=", "--hook-path=", "--hook-install-dir=", "--sysroot="}) {
        if (absl::StartsWith(command[i], kept)) undo.push_back(command[i]);
      }
    }
    return undo;
  }
  if (command.size() >= 2 && command[1] == "power") {
    std::vector<std::string> undo = command;  // with --limit-record: the limits it lowered
    undo.push_back("--restore");
    return undo;
  }
  return {};
}

absl::Status Uninstaller::Run(UninstallReport& report) {
  auto step = [&report](absl::string_view what, const absl::Status& status) {
    if (status.ok()) {
      report.done.push_back(std::string(what));
    } else {
      report.problems.push_back(absl::StrCat(what, ": ", status.ToString()));
    }
  };
  step("stopped the operator", StopOperator(report));
  step("removed the GPU clients", DeleteDaemonSets(/*clients=*/true, report));
  step("restored the node files and power limits", UndoNodeFiles(report));
  step("removed the driver, runtime, CDI and power components", DeleteDaemonSets(false, report));
  step("cleaned the nodes", CleanNodes(report));
  step("deleted GPUNodes and rendered objects", DeleteRendered(report));
  if (report.problems.empty()) return absl::OkStatus();
  return absl::UnknownError(absl::StrJoin(report.problems, "; "));
}

absl::Status Uninstaller::StopOperator(UninstallReport& report) {
  absl::StatusOr<Json> scaled =
      client_.Patch(res::kDeployments, options_.ns, options_.operator_deployment,
                    kube::PatchType::kMergePatch, {{"spec", {{"replicas", 0}}}});
  if (!scaled.ok()) {
    if (absl::IsNotFound(scaled.status())) return absl::OkStatus();
    return scaled.status();
  }
  report.done.push_back(absl::StrCat("scaled deployment ", options_.operator_deployment, " to 0"));
  return AwaitDone(options_.step_timeout, options_.poll, [this]() -> absl::Status {
    absl::StatusOr<Json> d =
        client_.Get(res::kDeployments, options_.ns, options_.operator_deployment);
    if (!d.ok()) return absl::IsNotFound(d.status()) ? absl::OkStatus() : d.status();
    const int64_t replicas = common::JsonInt(common::JsonField(*d, "status"), "replicas");
    if (replicas == 0) return absl::OkStatus();
    return absl::UnavailableError(absl::StrCat(replicas, " operator pods left"));
  });
}

absl::Status Uninstaller::DeleteDaemonSets(bool clients, UninstallReport& report) {
  absl::StatusOr<kube::ObjectList> list =
      client_.List(res::kDaemonSets, options_.ns, {.label_selector = kRendered});
  if (!list.ok()) return list.status();
  std::vector<std::string> deleted;
  for (const Json& ds : list->items) {
    if (IsHostComponent(Component(ds)) == clients) continue;
    const std::string name = Name(ds);
    absl::Status status =
        client_.Delete(res::kDaemonSets, options_.ns, name, {.propagation_policy = "Background"});
    if (!status.ok() && !absl::IsNotFound(status)) return status;
    report.done.push_back(absl::StrCat("deleted daemonset ", name));
    deleted.push_back(name);
  }
  return AwaitPodsGone(deleted);
}

absl::Status Uninstaller::AwaitPodsGone(const std::vector<std::string>& names) {
  return AwaitDone(options_.step_timeout, options_.poll, [&]() -> absl::Status {
    std::vector<std::string> left;
    for (const std::string& name : names) {
      absl::StatusOr<kube::ObjectList> pods = client_.List(
          res::kPods, options_.ns, {.label_selector = absl::StrCat(kNameLabel, "=", name)});
      if (!pods.ok()) return pods.status();
      for (const Json& pod : pods->items) left.push_back(Name(pod));
    }
    if (left.empty()) return absl::OkStatus();
    return absl::UnavailableError(absl::StrCat("pods left: ", absl::StrJoin(left, ", ")));
  });
}

absl::Status Uninstaller::UndoNodeFiles(UninstallReport& report) {
  absl::StatusOr<kube::ObjectList> list =
      client_.List(res::kDaemonSets, options_.ns, {.label_selector = kRendered});
  if (!list.ok()) return list.status();
  std::vector<std::string> rewritten;
  for (Json ds : list->items) {
    Json& pod = ds["spec"]["template"]["spec"];
    const Json& containers = common::JsonField(pod, "containers");
    if (!containers.is_array() || containers.empty()) continue;
    std::vector<std::string> command;
    for (const Json& arg : common::JsonField(containers[0], "command")) {
      if (arg.is_string()) command.push_back(arg.get<std::string>());
    }
    const std::vector<std::string> undo = UndoCommand(command);
    if (undo.empty()) continue;
    pod["containers"][0]["command"] = undo;
    pod["containers"][0].erase("readinessProbe");
    // Every node at once: the undo is quick and nothing serves from these pods any more.
    ds["spec"]["updateStrategy"] = {{"type", "RollingUpdate"},
                                    {"rollingUpdate", {{"maxUnavailable", "100%"}}}};
    absl::StatusOr<Json> updated = client_.Update(res::kDaemonSets, ds);
    if (!updated.ok()) return updated.status();
    report.done.push_back(absl::StrCat("daemonset ", Name(ds), " runs ", absl::StrJoin(undo, " ")));
    rewritten.push_back(Name(ds));
  }
  return AwaitDone(options_.step_timeout, options_.poll, [&]() -> absl::Status {
    for (const std::string& name : rewritten) {
      absl::StatusOr<Json> ds = client_.Get(res::kDaemonSets, options_.ns, name);
      if (!ds.ok()) return ds.status();
      if (absl::Status done = RanToSuccess(client_, options_.ns, *ds); !done.ok()) return done;
    }
    return absl::OkStatus();
  });
}

absl::Status Uninstaller::CleanNodes(UninstallReport& report) {
  absl::StatusOr<kube::ObjectList> nodes = client_.ListAll(res::kNodes, "", {});
  if (!nodes.ok()) return nodes.status();
  std::vector<std::string> failed;
  for (const Json& node : nodes->items) {
    const std::optional<Json> patch = NodeCleanupPatch(node);
    if (!patch.has_value()) continue;
    absl::StatusOr<Json> patched =
        client_.Patch(res::kNodes, "", Name(node), kube::PatchType::kMergePatch, *patch);
    if (!patched.ok()) {
      failed.push_back(absl::StrCat(Name(node), ": ", patched.status().message()));
      continue;
    }
    report.done.push_back(absl::StrCat("cleaned node ", Name(node)));
  }
  if (failed.empty()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrJoin(failed, "; "));
}

absl::Status Uninstaller::DeleteRendered(UninstallReport& report) {
  std::vector<std::string> failed;
  auto remove = [&](const kube::ResourceType& type, const std::string& ns,
                    const std::string& selector) {
    absl::StatusOr<kube::ObjectList> list = client_.ListAll(type, ns, {.label_selector = selector});
    // ServiceMonitors exist only where the Prometheus Operator's CRDs are installed.
    if (!list.ok() && &type == &kServiceMonitors && absl::IsNotFound(list.status())) return;
    if (!list.ok()) {
      failed.push_back(list.status().ToString());
      return;
    }
    for (const Json& object : list->items) {
      absl::Status status = client_.Delete(type, ns, Name(object));
      if (!status.ok() && !absl::IsNotFound(status)) {
        failed.push_back(status.ToString());
      } else {
        report.done.push_back(absl::StrCat("deleted ", type.plural, " ", Name(object)));
      }
    }
  };
  remove(kGpuNodes, "", "");
  remove(res::kServiceAccounts, options_.ns, kRendered);
  remove(res::kConfigMaps, options_.ns, kRendered);
  remove(kServiceMonitors, options_.ns, kRendered);
  remove(kServices, options_.ns, kRendered);
  remove(res::kClusterRoleBindings, "", kRendered);
  remove(res::kClusterRoles, "", kRendered);
  remove(res::kRuntimeClasses, "", kRendered);
  if (failed.empty()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrJoin(failed, "; "));
}

}  // namespace gpuop::op::uninstall
