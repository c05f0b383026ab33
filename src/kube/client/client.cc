#include "kube/client/client.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gpuop::kube {
namespace {

std::string Where(const ResourceType& type, absl::string_view ns, absl::string_view name) {
  if (type.namespaced && !ns.empty()) return absl::StrCat(type.plural, " ", ns, "/", name);
  return absl::StrCat(type.plural, " ", name);
}

std::string NamespaceOf(const Json& object) {
  const auto& meta = object.value("metadata", Json::object());
  return meta.value("namespace", "");
}

std::string NameOf(const Json& object) {
  const auto& meta = object.value("metadata", Json::object());
  return meta.value("name", "");
}

const char* ContentType(PatchType type) {
  switch (type) {
    case PatchType::kJsonPatch:
      return "application/json-patch+json";
    case PatchType::kMergePatch:
      return "application/merge-patch+json";
    case PatchType::kStrategicMergePatch:
      return "application/strategic-merge-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";  // JSON is valid YAML.
  }
  return "application/json";
}

}  // namespace

const char kAcceptMetadata[] =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
const char kAcceptMetadataList[] =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

std::string ObjectKey(const Json& object) {
  std::string ns = NamespaceOf(object);
  return ns.empty() ? NameOf(object) : absl::StrCat(ns, "/", NameOf(object));
}

absl::StatusOr<Json> Client::Call(const std::string& what, RestRequest request) {
  GPUOP_ASSIGN_OR_RETURN(HttpResponse response, rest_->Send(request));
  if (response.status < 200 || response.status >= 300) {
    return ApiError(what, response.status, response.body);
  }
  if (response.body.empty()) return Json::object();
  Json body = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    return absl::InternalError(absl::StrCat(what, ": response is not JSON"));
  }
  return body;
}

absl::StatusOr<Json> Client::Get(const ResourceType& type, absl::string_view ns,
                                 absl::string_view name, const GetOptions& options) {
  return Call(absl::StrCat("get ", Where(type, ns, name)),
              {.path = type.ObjectPath(ns, name) +
                       QueryString({{"resourceVersion", options.resource_version}}),
               .accept = options.metadata_only ? kAcceptMetadata : "application/json"});
}

absl::StatusOr<ObjectList> Client::List(const ResourceType& type, absl::string_view ns,
                                        const ListOptions& options) {
  const std::string query =
      QueryString({{"labelSelector", options.label_selector},
                   {"fieldSelector", options.field_selector},
                   {"limit", options.limit > 0 ? absl::StrCat(options.limit) : ""},
                   {"continue", options.continue_token},
                   {"resourceVersion", options.resource_version},
                   {"resourceVersionMatch", options.resource_version_match}});
  GPUOP_ASSIGN_OR_RETURN(
      Json body,
      Call(absl::StrCat("list ", type.plural, ns.empty() ? "" : " in ", ns),
           {.path = type.CollectionPath(ns) + query,
            .accept = options.metadata_only ? kAcceptMetadataList : "application/json"}));
  ObjectList list;
  const Json& meta = body.value("metadata", Json::object());
  list.resource_version = meta.value("resourceVersion", "");
  list.continue_token = meta.value("continue", "");
  if (auto items = body.find("items"); items != body.end() && items->is_array()) {
    list.items = std::move(items->get_ref<Json::array_t&>());
  }
  return list;
}

absl::StatusOr<ObjectList> Client::ListAll(const ResourceType& type, absl::string_view ns,
                                           ListOptions options) {
  ObjectList all;
  options.continue_token.clear();
  bool first = true;
  do {
    GPUOP_ASSIGN_OR_RETURN(ObjectList page, List(type, ns, options));
    // Later pages come from the same snapshot as the first; its version is the list's.
    if (first) all.resource_version = page.resource_version;
    first = false;
    if (all.items.empty()) {
      all.items = std::move(page.items);
    } else {
      all.items.insert(all.items.end(), std::make_move_iterator(page.items.begin()),
                       std::make_move_iterator(page.items.end()));
    }
    options.continue_token = page.continue_token;
    // A continued list must not repeat the version constraints of the first request.
    options.resource_version.clear();
    options.resource_version_match.clear();
  } while (!options.continue_token.empty());
  return all;
}

absl::StatusOr<Json> Client::Create(const ResourceType& type, absl::string_view ns,
                                    const Json& object, const WriteOptions& options) {
  const std::string target_ns = ns.empty() ? NamespaceOf(object) : std::string(ns);
  return Call(absl::StrCat("create ", Where(type, target_ns, NameOf(object))),
              {.method = "POST",
               .path = type.CollectionPath(target_ns) +
                       QueryString({{"fieldManager", options.field_manager},
                                    {"dryRun", options.dry_run ? "All" : ""}}),
               .body = object.dump(),
               .content_type = "application/json"});
}

absl::StatusOr<Json> Client::Replace(const ResourceType& type, const Json& object,
                                     const WriteOptions& options, absl::string_view subresource) {
  const std::string ns = NamespaceOf(object);
  const std::string name = NameOf(object);
  return Call(absl::StrCat("update ", subresource.empty() ? "" : absl::StrCat(subresource, " of "),
                           Where(type, ns, name)),
              {.method = "PUT",
               .path = type.ObjectPath(ns, name, subresource) +
                       QueryString({{"fieldManager", options.field_manager},
                                    {"dryRun", options.dry_run ? "All" : ""}}),
               .body = object.dump(),
               .content_type = "application/json"});
}

absl::StatusOr<Json> Client::Update(const ResourceType& type, const Json& object,
                                    const WriteOptions& options) {
  return Replace(type, object, options, "");
}

absl::StatusOr<Json> Client::UpdateStatus(const ResourceType& type, const Json& object,
                                          const WriteOptions& options) {
  return Replace(type, object, options, "status");
}

absl::StatusOr<Json> Client::Patch(const ResourceType& type, absl::string_view ns,
                                   absl::string_view name, PatchType patch_type, const Json& patch,
                                   const PatchOptions& options) {
  return Call(absl::StrCat(patch_type == PatchType::kApply ? "apply " : "patch ",
                           options.subresource.empty() ? "" : options.subresource + " of ",
                           Where(type, ns, name)),
              {.method = "PATCH",
               .path = type.ObjectPath(ns, name, options.subresource) +
                       QueryString({{"fieldManager", options.field_manager},
                                    {"force", options.force ? "true" : ""}}),
               .body = patch.dump(),
               .content_type = ContentType(patch_type)});
}

absl::StatusOr<Json> Client::Apply(const ResourceType& type, const Json& object,
                                   absl::string_view field_manager, bool force,
                                   absl::string_view subresource) {
  if (field_manager.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("apply ",
                                                   Where(type, NamespaceOf(object), NameOf(object)),
                                                   ": server-side apply needs a field manager"));
  }
  return Patch(type, NamespaceOf(object), NameOf(object), PatchType::kApply, object,
               {.field_manager = std::string(field_manager),
                .force = force,
                .subresource = std::string(subresource)});
}

absl::Status Client::Delete(const ResourceType& type, absl::string_view ns, absl::string_view name,
                            const DeleteOptions& options) {
  Json body = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!options.uid.empty()) body["preconditions"]["uid"] = options.uid;
  if (!options.resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = options.resource_version;
  }
  if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  return Call(absl::StrCat("delete ", Where(type, ns, name)), {.method = "DELETE",
                                                               .path = type.ObjectPath(ns, name),
                                                               .body = body.dump(),
                                                               .content_type = "application/json"})
      .status();
}

absl::StatusOr<EvictionResult> Client::Evict(absl::string_view ns, absl::string_view pod,
                                             const DeleteOptions& options) {
  Json eviction = {{"apiVersion", "policy/v1"},
                   {"kind", "Eviction"},
                   {"metadata", {{"name", pod}, {"namespace", ns}}}};
  if (!options.uid.empty()) eviction["deleteOptions"]["preconditions"]["uid"] = options.uid;
  if (options.grace_period_seconds) {
    eviction["deleteOptions"]["gracePeriodSeconds"] = *options.grace_period_seconds;
  }
  const std::string what = absl::StrCat("evict pod ", ns, "/", pod);
  GPUOP_ASSIGN_OR_RETURN(HttpResponse response,
                         rest_->Send({.method = "POST",
                                      .path = resources::kPods.ObjectPath(ns, pod, "eviction"),
                                      .body = eviction.dump(),
                                      .content_type = "application/json",
                                      .retry_too_many_requests = false}));
  if (response.status >= 200 && response.status < 300) return EvictionResult{};
  absl::Status error = ApiError(what, response.status, response.body);
  // A disruption budget says "not now" with 429; the caller decides when to try again.
  if (response.status == 429) {
    return EvictionResult{.outcome = EvictionResult::Outcome::kBlocked,
                          .message = std::string(error.message())};
  }
  return error;
}

}  // namespace gpuop::kube
