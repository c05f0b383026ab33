#include "operator/cache/cache.h"

#include <algorithm>

#include "absl/hash/hash.h"
#include "common/json_access.h"
#include "kube/client/resource.h"
#include "kube/types/pod.h"
#include "operator/api/resources.h"
#include "operator/nodes/node_labels.h"
#include "operator/render/render.h"

namespace gpuop::op {

namespace {

std::string Name(const nlohmann::json& object) {
  return common::JsonString(common::JsonField(object, "metadata"), "name");
}
std::string Uid(const nlohmann::json& object) {
  return common::JsonString(common::JsonField(object, "metadata"), "uid");
}
int64_t Generation(const nlohmann::json& object) {
  return common::JsonInt(common::JsonField(object, "metadata"), "generation");
}

}  // namespace

PolicyEntry MakePolicyEntry(const nlohmann::json& object, const PolicyEntry* previous) {
  PolicyEntry entry{.name = Name(object),
                    .uid = Uid(object),
                    .generation = Generation(object),
                    .policy = ParseClusterPolicy(object)};
  if (entry.policy.ok() || previous == nullptr || previous->uid != entry.uid) return entry;
  entry.last_good = previous->policy.ok() ? std::optional(*previous->policy) : previous->last_good;
  return entry;
}

uint64_t JsonHash(const nlohmann::json& value) { return absl::HashOf(value.dump()); }

OperatorCache::OperatorCache(kube::Client& client, const std::string& ns) {
  nodes_ = std::make_unique<kube::Informer<NodeEntry>>(
      client, kube::resources::kNodes, kube::ReflectorOptions{},
      [](const kube::Json& object) -> absl::StatusOr<NodeEntry> {
        absl::StatusOr<kube::Node> node = kube::ParseNode(object);
        if (!node.ok()) return node.status();
        std::vector<std::string> owned = OwnedLabelKeys(object, kFieldManager);
        std::erase_if(owned, [](const std::string& key) { return !IsNodeLabellingKey(key); });
        return NodeEntry{.node = *std::move(node),
                         .owned_labels = std::move(owned),
                         .kernel_version = common::JsonString(
                             common::JsonField(common::JsonField(object, "status"), "nodeInfo"),
                             "kernelVersion")};
      });
  nodes_->AddIndex("gpu", [](const NodeEntry& e) {
    return IsGpuNode(e.node) ? std::vector<std::string>{"true"} : std::vector<std::string>{};
  });
  policies_ = std::make_unique<kube::Informer<PolicyEntry>>(
      client, kGpuClusterPolicies, kube::ReflectorOptions{},
      [this](const kube::Json& object) -> absl::StatusOr<PolicyEntry> {
        // The informer calls this from its one thread, before it stores the result, so the
        // stored entry is the previous version of this object.
        return MakePolicyEntry(object, policies_->store().Get(Name(object)).get());
      });
  pools_ = std::make_unique<kube::Informer<PoolEntry>>(
      client, kGpuNodePools, kube::ReflectorOptions{},
      [](const kube::Json& object) -> absl::StatusOr<PoolEntry> {
        return PoolEntry{
            .name = Name(object), .generation = Generation(object), .pool = ParseNodePool(object)};
      });
  gpu_nodes_ = std::make_unique<kube::Informer<GpuNodeEntry>>(
      client, kGpuNodes, kube::ReflectorOptions{},
      [](const kube::Json& object) -> absl::StatusOr<GpuNodeEntry> {
        const nlohmann::json& status =
            object.contains("status") ? object["status"] : nlohmann::json::object();
        return GpuNodeEntry{
            .name = Name(object), .uid = Uid(object), .status_hash = JsonHash(status)};
      });
  const std::string managed = std::string(kManagedByLabel) + "=" + kManagedByValue;
  daemon_sets_ = std::make_unique<kube::Informer<kube::DaemonSet>>(
      client, kube::resources::kDaemonSets,
      kube::ReflectorOptions{.ns = ns, .label_selector = managed},
      [](const kube::Json& object) { return kube::ParseDaemonSet(object); });
  pods_ = std::make_unique<kube::Informer<OperandPod>>(
      client, kube::resources::kPods, kube::ReflectorOptions{.ns = ns, .label_selector = managed},
      [](const kube::Json& object) -> absl::StatusOr<OperandPod> {
        absl::StatusOr<kube::Pod> pod = kube::ParsePod(object);
        if (!pod.ok()) return pod.status();
        OperandPod out{.name = pod->metadata.name,
                       .node = pod->node_name,
                       .ready = pod->Ready(),
                       .restarts = pod->restart_count,
                       .phase = pod->phase,
                       .created = pod->metadata.creation_timestamp};
        if (auto c = pod->metadata.labels.Get(kComponentLabel)) out.component = std::string(*c);
        if (auto r = pod->metadata.labels.Get("controller-revision-hash")) {
          out.revision = std::string(*r);
        }
        if (const kube::OwnerReference* owner = pod->metadata.ControllerRef()) {
          out.owner = owner->name;
        }
        return out;
      });
  pods_->AddIndex("node", [](const OperandPod& p) { return std::vector<std::string>{p.node}; });
}

OperatorCache::~OperatorCache() { Stop(); }

void OperatorCache::Start() {
  nodes_->Start();
  policies_->Start();
  pools_->Start();
  gpu_nodes_->Start();
  daemon_sets_->Start();
  pods_->Start();
}

bool OperatorCache::WaitForSync(absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  auto left = [&] { return std::max(absl::ZeroDuration(), deadline - absl::Now()); };
  return nodes_->WaitForSync(left()) && policies_->WaitForSync(left()) &&
         pools_->WaitForSync(left()) && gpu_nodes_->WaitForSync(left()) &&
         daemon_sets_->WaitForSync(left()) && pods_->WaitForSync(left());
}

void OperatorCache::Stop() {
  nodes_->Stop();
  policies_->Stop();
  pools_->Stop();
  gpu_nodes_->Stop();
  daemon_sets_->Stop();
  pods_->Stop();
}

std::vector<NodePool> OperatorCache::ValidPools() const {
  std::vector<NodePool> out;
  for (const auto& entry : pools_->store().List()) {
    if (entry->pool.ok()) out.push_back(*entry->pool);
  }
  std::sort(out.begin(), out.end(),
            [](const NodePool& a, const NodePool& b) { return a.name < b.name; });
  return out;
}

std::optional<ClusterPolicy> OperatorCache::Policy() const {
  auto entry = policies_->store().Get(kPolicyName);
  if (entry == nullptr) return std::nullopt;
  if (entry->policy.ok()) return *entry->policy;
  return entry->last_good;
}

bool OperatorCache::PolicyPresent() const { return policies_->store().Get(kPolicyName) != nullptr; }

std::vector<std::shared_ptr<const OperandPod>> OperatorCache::PodsOn(
    const std::string& node) const {
  return pods_->store().ByIndex("node", node);
}

DriverClients ClientsOf(const kube::Labels& labels, const PolicySpec& policy,
                        const OperandPods& pods) {
  std::vector<ClientPod> clients;
  for (const auto& pod : pods) clients.push_back({pod->name, pod->component, pod->phase});
  return DescribeDriverClients(labels, policy, clients);
}

std::optional<bool> ValidatorReadySince(const OperandPods& pods, absl::Time driver_created) {
  std::optional<bool> ready;
  for (const auto& pod : pods) {
    if (pod->component == "validator" && pod->created >= driver_created) {
      ready = ready.value_or(false) || pod->ready;
    }
  }
  return ready;
}

}  // namespace gpuop::op
