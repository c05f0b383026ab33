#include "operator/crds/crds.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/yaml_json.h"
#include "kube/client/resource.h"
#include "kube/types/object_meta.h"
#include "operator/crds/crds_yaml.h"

namespace gpuop::op {

const std::vector<nlohmann::json>& Crds() {
  static const std::vector<nlohmann::json>* const crds = [] {
    auto* out = new std::vector<nlohmann::json>();
    for (const char* yaml : kCrdYaml) {
      absl::StatusOr<std::vector<nlohmann::json>> docs = common::YamlDocumentsToJson(yaml);
      if (!docs.ok()) {
        // The build embeds these files and a unit test parses them: this cannot happen.
        std::fprintf(stderr, "embedded CRD YAML: %s\n", docs.status().ToString().c_str());
        std::abort();
      }
      for (auto& d : *docs) out->push_back(std::move(d));
    }
    return out;
  }();
  return *crds;
}

absl::Status InstallCrds(kube::Client& client, absl::Duration timeout) {
  for (const nlohmann::json& crd : Crds()) {
    GPUOP_RETURN_IF_ERROR(
        client.Apply(kube::resources::kCustomResourceDefinitions, crd, "gpuop-operator", true)
            .status());
  }
  const absl::Time deadline = absl::Now() + timeout;
  for (const nlohmann::json& crd : Crds()) {
    const std::string name = crd["metadata"]["name"].get<std::string>();
    while (true) {
      GPUOP_ASSIGN_OR_RETURN(kube::Json got,
                             client.Get(kube::resources::kCustomResourceDefinitions, "", name));
      const std::vector<kube::Condition> conditions =
          kube::ParseConditions(got["status"].is_object() && got["status"].contains("conditions")
                                    ? got["status"]["conditions"]
                                    : kube::Json::array());
      const kube::Condition* established = kube::FindCondition(conditions, "Established");
      if (established != nullptr && established->status == "True") break;
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(
            absl::StrCat("CRD ", name, " not Established after ", absl::FormatDuration(timeout)));
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
  }
  return absl::OkStatus();
}

}  // namespace gpuop::op
