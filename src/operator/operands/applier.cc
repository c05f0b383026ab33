#include "operator/operands/applier.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "kube/client/resource.h"
#include "operator/api/resources.h"
#include "operator/cache/cache.h"
#include "operator/render/render.h"

namespace gpuop::op {
namespace {

// The kinds the renderer produces, in prune order (workloads before their permissions).
const kube::ResourceType* const kKinds[] = {
    &kServiceMonitors,
    &kServices,
    &kube::resources::kDaemonSets,
    &kube::resources::kConfigMaps,
    &kube::resources::kClusterRoleBindings,
    &kube::resources::kClusterRoles,
    &kube::resources::kServiceAccounts,
    &kube::resources::kRuntimeClasses,
};

// Kinds from CRDs another project installs: where the API is not served, none exist to prune,
// and rendering one is an error that says what is missing.
bool Optional(const kube::ResourceType* type) { return type == &kServiceMonitors; }

const kube::ResourceType* KindOf(const nlohmann::json& object) {
  const std::string api_version = object.value("apiVersion", "");
  const std::string kind = object.value("kind", "");
  for (const kube::ResourceType* type : kKinds) {
    if (type->kind == kind && type->ApiVersion() == api_version) return type;
  }
  return nullptr;
}

std::string Describe(const kube::ResourceType& type, const std::string& ns,
                     const std::string& name) {
  return absl::StrCat(type.kind, " ", type.namespaced ? absl::StrCat(ns, "/") : "", name);
}

}  // namespace

// FNV-1a over the serialized object (absl::Hash is not stable across processes).
std::string SpecHash(const nlohmann::json& object) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : object.dump()) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return absl::StrCat(absl::Hex(hash, absl::kZeroPad16));
}

absl::StatusOr<ApplyReport> OperandApplier::Sync(
    const std::vector<nlohmann::json>& desired,
    const std::function<bool(const std::string& kind, const std::string& name)>& keep) {
  // What lives now, per kind: name -> spec hash annotation.
  std::map<const kube::ResourceType*, std::map<std::string, std::string>> live;
  for (const kube::ResourceType* type : kKinds) {
    absl::StatusOr<kube::ObjectList> list =
        client_.ListAll(*type, ns_,
                        {.label_selector = absl::StrCat(kManagedByLabel, "=", kManagedByValue),
                         .limit = 500,
                         .metadata_only = true});
    if (!list.ok() && Optional(type) && absl::IsNotFound(list.status())) continue;
    if (!list.ok()) {
      return absl::Status(list.status().code(),
                          absl::StrCat("list ", type->plural, " managed by ", kManagedByValue, ": ",
                                       list.status().message()));
    }
    auto& names = live[type];
    for (const nlohmann::json& item : list->items) {
      const nlohmann::json& meta = item["metadata"];
      std::string hash;
      if (meta.contains("annotations") && meta["annotations"].contains(kSpecHashAnnotation)) {
        hash = meta["annotations"][kSpecHashAnnotation].get<std::string>();
      }
      names[meta.value("name", "")] = hash;
    }
  }

  ApplyReport report;
  std::map<const kube::ResourceType*, std::set<std::string>> wanted;
  for (const nlohmann::json& rendered : desired) {
    const kube::ResourceType* type = KindOf(rendered);
    const std::string name = rendered["metadata"].value("name", "");
    if (type == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("rendered ", rendered.value("kind", "?"), " ",
                                                     name, ": not a kind the operator manages"));
    }
    wanted[type].insert(name);
    nlohmann::json object = rendered;
    const std::string hash = SpecHash(rendered);
    object["metadata"]["annotations"][kSpecHashAnnotation] = hash;
    const auto found = live[type].find(name);
    if (found != live[type].end() && found->second == hash) {
      ++report.unchanged;
      continue;
    }
    if (found == live[type].end() && type == &kube::resources::kRuntimeClasses) {
      // Not among the operator's: absent, or someone else's.
      absl::StatusOr<nlohmann::json> existing =
          client_.Get(*type, "", name, {.metadata_only = true});
      if (existing.ok()) {
        const nlohmann::json labels = existing->value("metadata", nlohmann::json::object())
                                          .value("labels", nlohmann::json::object());
        const std::string owner =
            labels.contains(kManagedByLabel) && labels[kManagedByLabel].is_string()
                ? absl::StrCat(kManagedByLabel, "=", labels[kManagedByLabel].get<std::string>())
                : std::string("no ") + kManagedByLabel + " label";
        report.skipped.push_back(absl::StrCat(Describe(*type, ns_, name),
                                              ": exists and is not managed by ", kManagedByValue,
                                              " (", owner, "); left as it is"));
        continue;
      }
      if (!absl::IsNotFound(existing.status())) {
        report.errors.push_back(
            absl::StrCat("get ", Describe(*type, ns_, name), ": ", existing.status().message()));
        continue;
      }
    }
    absl::StatusOr<nlohmann::json> applied = client_.Apply(*type, object, kFieldManager, true);
    if (applied.ok()) {
      ++report.applied;
    } else if (Optional(type) && absl::IsNotFound(applied.status())) {
      report.errors.push_back(absl::StrCat("apply ", Describe(*type, ns_, name), ": the API ",
                                           type->ApiVersion(),
                                           " is not served: install the Prometheus Operator's "
                                           "CRDs, or set "
                                           "components.exporter.serviceMonitor.enabled to false"));
    } else {
      report.errors.push_back(
          absl::StrCat("apply ", Describe(*type, ns_, name), ": ", applied.status().message()));
    }
  }

  for (const kube::ResourceType* type : kKinds) {
    for (const auto& [name, hash] : live[type]) {
      if (wanted[type].contains(name) || (keep && keep(type->kind, name))) continue;
      absl::Status deleted = client_.Delete(*type, ns_, name, {.propagation_policy = "Background"});
      if (deleted.ok() || absl::IsNotFound(deleted)) {
        ++report.pruned;
      } else {
        report.errors.push_back(
            absl::StrCat("prune ", Describe(*type, ns_, name), ": ", deleted.message()));
      }
    }
  }
  return report;
}

}  // namespace gpuop::op
