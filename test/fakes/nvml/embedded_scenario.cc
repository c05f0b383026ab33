#include "test/fakes/nvml/embedded_scenario.h"

#include <yaml-cpp/yaml.h>

#include "absl/strings/str_cat.h"
#include "test/fakes/nvml/scenario.h"

namespace gpuop::fakenvml {
namespace {

absl::Status Prefixed(absl::string_view origin, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat("scenario ", origin, ": ", status.message()));
}

}  // namespace

absl::StatusOr<std::string> MakeEmbeddedScenario(absl::string_view yaml, absl::string_view origin,
                                                 absl::string_view node,
                                                 absl::string_view device_nodes,
                                                 absl::string_view module_device_nodes) {
  absl::StatusOr<Scenario> expected = ParseScenario(yaml, origin, node);
  if (!expected.ok()) return Prefixed(origin, expected.status());
  std::string text;
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    std::string seed(origin);
    if (root["uuid_seed"]) {
      seed = root["uuid_seed"].Scalar();
    } else if (root["name"]) {
      seed = root["name"].Scalar();
    }
    if (!node.empty()) absl::StrAppend(&seed, "/node/", node);
    root["uuid_seed"] = seed;
    if (!device_nodes.empty()) {
      root["device_nodes"] = std::string(device_nodes);
    } else {
      root.remove("device_nodes");
    }
    if (!module_device_nodes.empty()) {
      root["module_device_nodes"] = std::string(module_device_nodes);
    } else {
      root.remove("module_device_nodes");
    }
    YAML::Emitter out;
    out << root;
    if (!out.good()) {
      return absl::InternalError(
          absl::StrCat("scenario ", origin, ": cannot write it back: ", out.GetLastError()));
    }
    text =
        absl::StrCat("# SIMULATED: a gpuop fake NVML scenario, from ", origin,
                     node.empty() ? "" : absl::StrCat(" for node ", node), "\n", out.c_str(), "\n");
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("scenario ", origin, ": invalid YAML: ", e.what()));
  }
  absl::StatusOr<Scenario> written = ParseScenario(text, origin, "");
  if (!written.ok()) {
    return absl::InternalError(absl::StrCat(
        "scenario ", origin, ": the embedded form does not parse: ", written.status().message()));
  }
  bool same = written->gpus.size() == expected->gpus.size();
  for (size_t i = 0; same && i < written->gpus.size(); ++i) {
    same = written->gpus[i].uuid == expected->gpus[i].uuid &&
           written->gpus[i].serial == expected->gpus[i].serial &&
           written->gpus[i].minor_number == expected->gpus[i].minor_number;
  }
  if (!same) {
    return absl::InternalError(
        absl::StrCat("scenario ", origin, ": the embedded form derives different GPUs"));
  }
  return text;
}

}  // namespace gpuop::fakenvml
