#ifndef GPUOP_KUBE_CLIENT_CLIENT_H_
#define GPUOP_KUBE_CLIENT_CLIENT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kube/client/api_error.h"
#include "kube/client/resource.h"
#include "kube/transport/rest_client.h"

namespace gpuop::kube {

using Json = nlohmann::json;

struct GetOptions {
  // "" reads the latest (a quorum read); "0" accepts any cached version.
  std::string resource_version;
  // Only apiVersion, kind and metadata (PartialObjectMetadata).
  bool metadata_only = false;
};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  // Page size; 0 lets the server return everything at once.
  int64_t limit = 0;
  std::string continue_token;
  std::string resource_version;
  std::string resource_version_match;  // "NotOlderThan" or "Exact"
  bool metadata_only = false;
};

struct ObjectList {
  std::vector<Json> items;
  std::string resource_version;
  std::string continue_token;
};

struct WriteOptions {
  std::string field_manager;
  bool dry_run = false;
};

enum class PatchType { kJsonPatch, kMergePatch, kStrategicMergePatch, kApply };

struct PatchOptions {
  std::string field_manager;
  // Server-side apply only: take ownership of fields other managers own.
  bool force = false;
  std::string subresource;  // "status", ...
};

struct DeleteOptions {
  // Preconditions: delete only the object with this UID / at this resourceVersion.
  std::string uid;
  std::string resource_version;
  // "Foreground", "Background" or "Orphan"; the server's default when empty.
  std::string propagation_policy;
  std::optional<int64_t> grace_period_seconds;
};

// The answer to an eviction request. A PodDisruptionBudget that forbids the eviction right now
// is an ordinary outcome (kBlocked, with the server's message), not an error.
struct EvictionResult {
  enum class Outcome { kEvicted, kBlocked };
  Outcome outcome = Outcome::kEvicted;
  std::string message;
};

// Generic access to the API server: every call takes the resource type, the namespace (ignored
// for cluster-scoped types) and works on JSON objects. Errors come from ApiError(): they say what
// was attempted on which object, and carry the server's reason (Aborted for a 409 conflict, so
// the caller re-reads and retries).
//
// Thread-safe.
class Client {
 public:
  explicit Client(std::shared_ptr<RestClient> rest) : rest_(std::move(rest)) {}

  [[nodiscard]] absl::StatusOr<Json> Get(const ResourceType& type, absl::string_view ns,
                                         absl::string_view name, const GetOptions& options = {});

  // One page of objects; follow `continue_token` for the next.
  [[nodiscard]] absl::StatusOr<ObjectList> List(const ResourceType& type, absl::string_view ns,
                                                const ListOptions& options = {});
  // Every page, `options.limit` objects at a time. The result's resource_version is the one to
  // start a watch from.
  [[nodiscard]] absl::StatusOr<ObjectList> ListAll(const ResourceType& type, absl::string_view ns,
                                                   ListOptions options = {});

  [[nodiscard]] absl::StatusOr<Json> Create(const ResourceType& type, absl::string_view ns,
                                            const Json& object, const WriteOptions& options = {});
  // Replaces the object named by its metadata. Its metadata.resourceVersion is a precondition:
  // when the object changed since it was read, the result is Aborted.
  [[nodiscard]] absl::StatusOr<Json> Update(const ResourceType& type, const Json& object,
                                            const WriteOptions& options = {});
  // Update() on the status subresource.
  [[nodiscard]] absl::StatusOr<Json> UpdateStatus(const ResourceType& type, const Json& object,
                                                  const WriteOptions& options = {});
  [[nodiscard]] absl::StatusOr<Json> Patch(const ResourceType& type, absl::string_view ns,
                                           absl::string_view name, PatchType patch_type,
                                           const Json& patch, const PatchOptions& options = {});
  // Server-side apply of `object` (which names itself) as `field_manager`.
  [[nodiscard]] absl::StatusOr<Json> Apply(const ResourceType& type, const Json& object,
                                           absl::string_view field_manager, bool force = false,
                                           absl::string_view subresource = "");
  // Deletes; NotFound when the object does not exist.
  [[nodiscard]] absl::Status Delete(const ResourceType& type, absl::string_view ns,
                                    absl::string_view name, const DeleteOptions& options = {});
  // Evicts a pod through the eviction subresource (policy/v1).
  [[nodiscard]] absl::StatusOr<EvictionResult> Evict(absl::string_view ns, absl::string_view pod,
                                                     const DeleteOptions& options = {});

  RestClient& rest() { return *rest_; }

 private:
  absl::StatusOr<Json> Call(const std::string& what, RestRequest request);
  // PUT of the object, or of its `subresource`.
  absl::StatusOr<Json> Replace(const ResourceType& type, const Json& object,
                               const WriteOptions& options, absl::string_view subresource);

  std::shared_ptr<RestClient> rest_;
};

// Accept header values that ask for PartialObjectMetadata(List) with a JSON fallback.
extern const char kAcceptMetadata[];
extern const char kAcceptMetadataList[];

// "namespace/name", or "name" for cluster-scoped objects: the key caches and queues use.
std::string ObjectKey(const Json& object);

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_CLIENT_CLIENT_H_
