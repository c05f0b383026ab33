#include "test/e2e/operator_e2e_util.h"

#include <csignal>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "kube/config/rest_config.h"
#include "test/cluster/cluster_environment.h"
#include "test/cluster/interrupt_guard.h"
#include "test/cluster/test_api.h"

namespace gpuop::test {

using kube::Json;

namespace {

// Above the control plane's components, so an interrupted run stops these first.
constexpr int kInterruptRank = 100;

const kube::ResourceType kControllerRevisions = {.group = "apps",
                                                 .version = "v1",
                                                 .plural = "controllerrevisions",
                                                 .kind = "ControllerRevision"};

const Json& Field(const Json& object, const char* a, const char* b) {
  static const Json kEmpty = Json::object();
  if (!object.contains(a) || !object[a].is_object() || !object[a].contains(b)) return kEmpty;
  return object[a][b];
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(std::vector<std::string> argv,
                                                                  std::vector<std::string> env,
                                                                  std::filesystem::path log) {
  InterruptGuard::Install();
  absl::StatusOr<common::Subprocess> process = common::Subprocess::Spawn(
      {.argv = std::move(argv), .env = std::move(env), .output_path = log});
  if (!process.ok()) return process.status();
  InterruptGuard::Track(process->pid(), kInterruptRank);
  return std::unique_ptr<ChildProcess>(new ChildProcess(*std::move(process), std::move(log)));
}

ChildProcess::~ChildProcess() { (void)Stop(absl::Seconds(5)); }

absl::Status ChildProcess::Kill() {
  if (!process_.Running()) {
    return absl::FailedPreconditionError(
        absl::StrCat(process_.name(), " already ended: ", process_.DescribeExit()));
  }
  if (::kill(-process_.pid(), SIGKILL) != 0) {
    return absl::InternalError(absl::StrCat("kill ", process_.name(), ": ", strerror(errno)));
  }
  absl::StatusOr<int> waited = process_.Wait(absl::Seconds(30));
  InterruptGuard::Untrack(process_.pid());
  return waited.status();
}

absl::Status ChildProcess::Stop(absl::Duration grace) {
  const pid_t pid = process_.pid();
  absl::Status stopped = process_.Stop(grace);
  if (pid > 0) InterruptGuard::Untrack(pid);
  return stopped;
}

std::string ChildProcess::LogTail(size_t max_bytes) const {
  std::ifstream in(log_, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (text.size() > max_bytes) text = "..." + text.substr(text.size() - max_bytes);
  return text;
}

absl::StatusOr<std::unique_ptr<kube::Client>> AdminClient() {
  absl::StatusOr<kube::RestConfig> config =
      kube::LoadKubeconfig(ClusterEnvironment::Get().kubeconfig());
  if (!config.ok()) return config.status();
  config->qps = 0;
  absl::StatusOr<std::unique_ptr<kube::RestClient>> rest =
      kube::RestClient::Create(*config, {.component = "e2e"});
  if (!rest.ok()) return rest.status();
  return std::make_unique<kube::Client>(std::shared_ptr<kube::RestClient>(*std::move(rest)));
}

absl::Status AwaitDone(absl::string_view what, absl::Duration timeout,
                       const std::function<absl::StatusOr<std::string>()>& pending) {
  std::string last;
  absl::Status waited = WaitUntil(what, timeout, [&]() -> absl::StatusOr<bool> {
    absl::StatusOr<std::string> missing = pending();
    if (!missing.ok()) return missing.status();
    last = *missing;
    return last.empty();
  });
  if (waited.ok() || last.empty()) return waited;
  return absl::Status(waited.code(), absl::StrCat(waited.message(), "; still: ", last));
}

std::string LabelOf(const Json& object, const std::string& key) {
  const Json& labels = Field(object, "metadata", "labels");
  return labels.is_object() ? labels.value(key, "") : "";
}

std::string AnnotationOf(const Json& object, const std::string& key) {
  const Json& annotations = Field(object, "metadata", "annotations");
  return annotations.is_object() ? annotations.value(key, "") : "";
}

bool HasLabel(const Json& object, const std::string& key) {
  const Json& labels = Field(object, "metadata", "labels");
  return labels.is_object() && labels.contains(key);
}

bool HasAnnotation(const Json& object, const std::string& key) {
  const Json& annotations = Field(object, "metadata", "annotations");
  return annotations.is_object() && annotations.contains(key);
}

Json ConditionOf(const Json& object, const std::string& type) {
  const Json& conditions = Field(object, "status", "conditions");
  if (conditions.is_array()) {
    for (const Json& c : conditions) {
      if (c.is_object() && c.value("type", "") == type) return c;
    }
  }
  return Json::object();
}

std::string ConditionStatus(const Json& object, const std::string& type) {
  return ConditionOf(object, type).value("status", "");
}

int64_t ConditionHeartbeat(const Json& object, const std::string& type) {
  absl::Time at;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, ConditionOf(object, type).value("lastHeartbeatTime", ""),
                       &at, &error)) {
    return 0;
  }
  return absl::ToUnixSeconds(at);
}

bool PodRunningAndReady(const Json& pod) {
  return !Field(pod, "metadata", "deletionTimestamp").is_string() &&
         Field(pod, "status", "phase") == "Running" && ConditionStatus(pod, "Ready") == "True";
}

bool Cordoned(const Json& node) { return Field(node, "spec", "unschedulable") == true; }

bool HasTaint(const Json& node, const std::string& key) {
  const Json& taints = Field(node, "spec", "taints");
  if (!taints.is_array()) return false;
  for (const Json& t : taints) {
    if (t.value("key", "") == key) return true;
  }
  return false;
}

absl::StatusOr<std::string> CurrentRevisionHash(kube::Client& client, const std::string& ns,
                                                const std::string& name) {
  absl::StatusOr<Json> daemon_set = client.Get(kube::resources::kDaemonSets, ns, name);
  if (!daemon_set.ok()) return daemon_set.status();
  const std::string uid = (*daemon_set)["metadata"].value("uid", "");
  absl::StatusOr<kube::ObjectList> revisions = client.List(kControllerRevisions, ns);
  if (!revisions.ok()) return revisions.status();
  int64_t newest = -1;
  std::string hash;
  for (const Json& revision : revisions->items) {
    bool owned = false;
    for (const Json& owner : revision["metadata"].value("ownerReferences", Json::array())) {
      owned = owned || owner.value("uid", "") == uid;
    }
    if (owned && revision.value("revision", int64_t{0}) > newest) {
      newest = revision.value("revision", int64_t{0});
      hash = LabelOf(revision, "controller-revision-hash");
    }
  }
  if (hash.empty()) {
    return absl::NotFoundError(absl::StrCat("no ControllerRevision of DaemonSet ", ns, "/", name));
  }
  return hash;
}

absl::Status AppendLine(const std::filesystem::path& path, absl::string_view line) {
  std::ofstream out(path, std::ios::app);
  out << line << '\n';
  out.flush();
  if (!out) return absl::InternalError(absl::StrCat("append to ", path.string()));
  return absl::OkStatus();
}

}  // namespace gpuop::test
