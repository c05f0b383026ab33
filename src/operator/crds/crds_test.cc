// The embedded CRDs parse, and their defaults are the ones the C++ types assume.
#include "operator/crds/crds.h"

#include <functional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "operator/api/node_pool.h"
#include "operator/api/policy.h"

namespace gpuop::op {
namespace {

// Applies a structural schema's defaults to `value` the way the API server does: a missing
// property with a default gets it, then defaults apply inside objects.
void ApplyDefaults(const nlohmann::json& schema, nlohmann::json& value) {
  if (!value.is_object() || !schema.contains("properties")) return;
  for (const auto& [name, property] : schema["properties"].items()) {
    if (!value.contains(name) && property.contains("default")) value[name] = property["default"];
    if (value.contains(name)) ApplyDefaults(property, value[name]);
  }
}

const nlohmann::json& Crd(const std::string& name) {
  for (const auto& crd : Crds()) {
    if (crd["metadata"]["name"] == name) return crd;
  }
  static const nlohmann::json none;
  ADD_FAILURE() << "no CRD " << name;
  return none;
}

TEST(CrdsTest, ThreeCrdsInTheGpuopGroup) {
  ASSERT_EQ(Crds().size(), 3u);
  for (const auto& crd : Crds()) {
    EXPECT_EQ(crd["kind"], "CustomResourceDefinition");
    EXPECT_EQ(crd["spec"]["group"], "gpuop.io");
    EXPECT_EQ(crd["spec"]["scope"], "Cluster");
    EXPECT_EQ(crd["spec"]["versions"][0]["name"], "v1alpha1");
    EXPECT_TRUE(crd["spec"]["versions"][0]["subresources"].contains("status"));
  }
}

TEST(CrdsTest, PolicyDefaultsAgreeWithTheParser) {
  const nlohmann::json& schema =
      Crd("gpuclusterpolicies.gpuop.io")["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
  nlohmann::json object = {{"metadata", {{"name", "default"}}},
                           {"spec", {{"driver", {{"version", "570.86.15"}}}}}};
  ApplyDefaults(schema, object);
  auto from_crd = ParseClusterPolicy(object);
  ASSERT_TRUE(from_crd.ok()) << from_crd.status();
  nlohmann::json bare = {{"metadata", {{"name", "default"}}},
                         {"spec", {{"driver", {{"version", "570.86.15"}}}}}};
  auto from_parser = ParseClusterPolicy(bare);
  ASSERT_TRUE(from_parser.ok()) << from_parser.status();
  const PolicySpec& a = from_crd->spec;
  const PolicySpec& b = from_parser->spec;
  EXPECT_EQ(a.image, b.image);
  EXPECT_EQ(a.host_network, b.host_network);
  EXPECT_EQ(a.api_server.has_value(), b.api_server.has_value());
  EXPECT_EQ(a.driver.repository, b.driver.repository);
  EXPECT_EQ(a.driver.image, b.driver.image);
  EXPECT_EQ(a.driver.env, b.driver.env);
  EXPECT_EQ(a.driver.args, b.driver.args);
  EXPECT_EQ(a.driver.resources.has_value(), b.driver.resources.has_value());
  for (Component c : kAllComponents) {
    EXPECT_EQ(a.Enabled(c), b.Enabled(c)) << ComponentName(c);
  }
  EXPECT_EQ(a.components.exporter_port, b.components.exporter_port);
  EXPECT_EQ(a.components.exporter_interval, b.components.exporter_interval);
  EXPECT_EQ(a.components.ignored_xids, b.components.ignored_xids);
  EXPECT_EQ(a.components.xid_actions, b.components.xid_actions);
  EXPECT_EQ(a.components.power_floor_percent, b.components.power_floor_percent);
  EXPECT_EQ(a.components.device_plugin_default_config, b.components.device_plugin_default_config);
  EXPECT_EQ(a.components.mig_strategy, b.components.mig_strategy);
  EXPECT_EQ(a.driver.os_tag, b.driver.os_tag);
  EXPECT_EQ(a.upgrade.max_parallel, b.upgrade.max_parallel);
  EXPECT_EQ(a.upgrade.max_unavailable.value, b.upgrade.max_unavailable.value);
  EXPECT_EQ(a.upgrade.max_unavailable.percent, b.upgrade.max_unavailable.percent);
  EXPECT_EQ(a.upgrade.pod_deletion_timeout, b.upgrade.pod_deletion_timeout);
  EXPECT_EQ(a.upgrade.drain_timeout, b.upgrade.drain_timeout);
  EXPECT_EQ(a.upgrade.pod_restart_timeout, b.upgrade.pod_restart_timeout);
  EXPECT_EQ(a.upgrade.validation_timeout, b.upgrade.validation_timeout);
  EXPECT_EQ(a.remediation.steps, b.remediation.steps);
  EXPECT_EQ(a.remediation.max_attempts, b.remediation.max_attempts);
  EXPECT_EQ(a.remediation.window, b.remediation.window);
  EXPECT_EQ(a.remediation.step_timeout, b.remediation.step_timeout);
  EXPECT_EQ(a.remediation.reboot_annotation, b.remediation.reboot_annotation);
}

// The schema of a property below spec ("apiServer.host", "driver.env[].name", with "*" for a
// map's values).
const nlohmann::json& SpecProperty(const std::string& path) {
  const nlohmann::json* node =
      &Crd("gpuclusterpolicies.gpuop.io")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
                                         ["properties"]["spec"];
  for (absl::string_view part : absl::StrSplit(path, '.')) {
    const bool list = absl::ConsumeSuffix(&part, "[]");
    node =
        part == "*" ? &(*node)["additionalProperties"] : &(*node)["properties"][std::string(part)];
    if (list) node = &(*node)["items"];
  }
  return *node;
}

// Whether the API server would take `value` for a string property: its length bounds and its
// pattern (Go's RE2 there; the patterns use only what ECMAScript reads the same way).
bool CrdAccepts(const nlohmann::json& schema, const std::string& value) {
  if (schema.contains("minLength") && value.size() < schema["minLength"].get<size_t>())
    return false;
  if (schema.contains("maxLength") && value.size() > schema["maxLength"].get<size_t>())
    return false;
  if (!schema.contains("pattern")) return true;
  return std::regex_search(value, std::regex(schema["pattern"].get<std::string>()));
}

// The parser's answer for `spec` (a GPUClusterPolicy spec).
bool ParserAccepts(const nlohmann::json& spec) {
  return ParseClusterPolicy({{"metadata", {{"name", "default"}}}, {"spec", spec}}).ok();
}

TEST(CrdsTest, PatternsAgreeWithTheParser) {
  const std::string long_label(64, 'a');
  const std::string label63(63, 'a');
  const std::string too_long = absl::StrCat(label63, ".", label63, ".", label63, ".", label63);
  struct Field {
    std::string path;
    std::function<nlohmann::json(const std::string&)> spec;
    std::vector<std::string> values;
  };
  const nlohmann::json no_driver = {{"enabled", false}};
  const std::vector<Field> fields = {
      {"apiServer.host",
       [&](const std::string& v) {
         return nlohmann::json{{"driver", no_driver}, {"apiServer", {{"host", v}, {"port", 6443}}}};
       },
       {"127.0.0.1",
        "localhost",
        "api.example.com",
        "fd00::1",
        "::1",
        "::ffff:10.0.0.1",
        "a-b.c",
        label63,
        long_label,
        too_long,
        "",
        "-a",
        "a-",
        "a..b",
        ".a",
        "a.",
        "[::1]",
        "10.0.0.1:6443x",
        "10.0.0.1:6443",
        "fd00:1",
        "a:b:c",
        "https://a",
        "a b",
        "a_b",
        "fd00::1%eth0",
        "g::1",
        ":"}},
      {"driver.image",
       [&](const std::string& v) {
         return nlohmann::json{{"driver", {{"enabled", false}, {"image", v}}}};
       },
       {"driver", "k8s/driver", "a", "a.b_c-d", "", "Driver", "driver:1", "driver@sha256", "-a",
        "a/", "/a", "a b"}},
      {"driver.env[].name",
       [&](const std::string& v) {
         return nlohmann::json{
             {"driver", {{"enabled", false}, {"env", {{{"name", v}, {"value", "x"}}}}}}};
       },
       {"A", "a_b", "-x", ".x", "x.y-z", "_1", "", "1A", "A=B", "A B", "Ä"}},
      {"driver.resources.requests.*",
       [&](const std::string& v) {
         return nlohmann::json{
             {"driver", {{"enabled", false}, {"resources", {{"requests", {{"cpu", v}}}}}}}};
       },
       {"1",     "0", "500m", "1.5", "1.", ".5",  "4Gi", "1Ki",  "2E", "1e3",  "1E-2", "1e+3",
        "1.5e3", "",  ".",    "-1",  "+1", "1Gb", "1e",  "1ee3", "Gi", "1 Gi", "1KiB", "1.5.5"}},
      {"driver.resources.limits.*",
       [&](const std::string& v) {
         return nlohmann::json{
             {"driver", {{"enabled", false}, {"resources", {{"limits", {{"memory", v}}}}}}}};
       },
       {"4Gi", "64Mi", "1m", "lots", "-4Gi"}},
  };
  for (const auto& field : fields) {
    const nlohmann::json& schema = SpecProperty(field.path);
    ASSERT_TRUE(schema.contains("pattern")) << field.path;
    for (const auto& value : field.values) {
      EXPECT_EQ(CrdAccepts(schema, value), ParserAccepts(field.spec(value)))
          << field.path << " = \"" << value << "\"";
    }
  }
}

TEST(CrdsTest, BoundsAgreeWithTheParser) {
  struct Bound {
    std::string path;
    std::function<nlohmann::json(int64_t)> spec;
  };
  const std::vector<Bound> bounds = {
      {"apiServer.port",
       [](int64_t v) {
         return nlohmann::json{{"driver", {{"enabled", false}}},
                               {"apiServer", {{"host", "127.0.0.1"}, {"port", v}}}};
       }},
      {"components.exporter.port",
       [](int64_t v) {
         return nlohmann::json{{"driver", {{"enabled", false}}},
                               {"components", {{"exporter", {{"port", v}}}}}};
       }},
  };
  for (const auto& bound : bounds) {
    const nlohmann::json& schema = SpecProperty(bound.path);
    const int64_t min = schema.at("minimum").get<int64_t>();
    const int64_t max = schema.at("maximum").get<int64_t>();
    EXPECT_TRUE(ParserAccepts(bound.spec(min))) << bound.path << " = " << min;
    EXPECT_TRUE(ParserAccepts(bound.spec(max))) << bound.path << " = " << max;
    EXPECT_FALSE(ParserAccepts(bound.spec(min - 1))) << bound.path << " = " << min - 1;
    EXPECT_FALSE(ParserAccepts(bound.spec(max + 1))) << bound.path << " = " << max + 1;
  }
  for (const char* list : {"requests", "limits"}) {
    const nlohmann::json& schema = SpecProperty(absl::StrCat("driver.resources.", list));
    const size_t max = schema.at("maxProperties").get<size_t>();
    auto with = [&](size_t n) {
      nlohmann::json resources = nlohmann::json::object();
      for (size_t i = 0; i < n; ++i) resources[absl::StrCat("example.com/r", i)] = "1";
      return nlohmann::json{{"driver", {{"enabled", false}, {"resources", {{list, resources}}}}}};
    };
    EXPECT_TRUE(ParserAccepts(with(max))) << list;
    EXPECT_FALSE(ParserAccepts(with(max + 1))) << list;
  }
  const nlohmann::json& api_server = SpecProperty("apiServer");
  EXPECT_EQ(api_server["required"], nlohmann::json({"host", "port"}));
  EXPECT_FALSE(ParserAccepts({{"driver", {{"enabled", false}}}, {"apiServer", {{"host", "h"}}}}));
  EXPECT_FALSE(ParserAccepts({{"driver", {{"enabled", false}}}, {"apiServer", {{"port", 1}}}}));
  EXPECT_EQ(SpecProperty("driver.env").value("x-kubernetes-list-type", ""), "map")
      << "names are unique, as the parser requires";
}

// An integer property below spec, with the bounds its schema gives (int64's, what the API
// server takes for an integer, where it gives none).
struct IntegerField {
  std::vector<std::string> path;
  bool list_item = false;  // the items of a list of integers
  int64_t min = INT64_MIN;
  int64_t max = INT64_MAX;
};

void CollectIntegers(const nlohmann::json& schema, const std::vector<std::string>& path,
                     bool list_item, std::vector<IntegerField>& out) {
  const std::string type = schema.value("type", "");
  if (type == "integer") {
    out.push_back({.path = path,
                   .list_item = list_item,
                   .min = schema.value("minimum", INT64_MIN),
                   .max = schema.value("maximum", INT64_MAX)});
  } else if (type == "array" && schema.contains("items")) {
    // Lists of objects (env, tolerations) hold no integers in these CRDs.
    if (schema["items"].value("type", "") == "integer") {
      CollectIntegers(schema["items"], path, true, out);
    }
  } else if (schema.contains("properties")) {
    for (const auto& [name, property] : schema["properties"].items()) {
      std::vector<std::string> below = path;
      below.push_back(name);
      CollectIntegers(property, below, false, out);
    }
  }
}

std::vector<IntegerField> IntegersOf(const std::string& crd) {
  std::vector<IntegerField> out;
  CollectIntegers(
      Crd(crd)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"], {}, false,
      out);
  return out;
}

// `base` with `value` at `field`.
nlohmann::json With(nlohmann::json base, const IntegerField& field, int64_t value) {
  nlohmann::json* node = &base;
  for (size_t i = 0; i + 1 < field.path.size(); ++i) node = &(*node)[field.path[i]];
  (*node)[field.path.back()] =
      field.list_item ? nlohmann::json::array({value}) : nlohmann::json(value);
  return base;
}

// Every integer the CRD admits, the parser takes, and one past a bound the CRD rejects, the
// parser rejects too: a spec the API server accepted never turns out unparseable.
void ExpectParserAgrees(const std::vector<IntegerField>& fields,
                        const std::function<nlohmann::json(const IntegerField&)>& base,
                        const std::function<absl::Status(const nlohmann::json&)>& parse) {
  for (const IntegerField& field : fields) {
    const std::string name = absl::StrJoin(field.path, ".") + (field.list_item ? "[]" : "");
    for (int64_t v : {field.min, field.max}) {
      absl::Status parsed = parse(With(base(field), field, v));
      EXPECT_TRUE(parsed.ok()) << name << " = " << v << ": " << parsed;
    }
    if (field.min != INT64_MIN) {
      EXPECT_FALSE(parse(With(base(field), field, field.min - 1)).ok())
          << name << " = " << field.min - 1;
    }
    if (field.max != INT64_MAX) {
      EXPECT_FALSE(parse(With(base(field), field, field.max + 1)).ok())
          << name << " = " << field.max + 1;
    }
  }
}

TEST(CrdsTest, EveryIntegerBoundOfThePolicyAgreesWithTheParser) {
  const std::vector<IntegerField> fields = IntegersOf("gpuclusterpolicies.gpuop.io");
  std::set<std::string> names;
  for (const IntegerField& f : fields) names.insert(absl::StrJoin(f.path, "."));
  EXPECT_THAT(names, ::testing::IsSupersetOf({"upgrade.maxParallel", "remediation.maxParallel",
                                              "remediation.maxAttempts", "apiServer.port",
                                              "components.health.ignoredXids"}));
  ExpectParserAgrees(
      fields,
      [](const IntegerField& field) {
        nlohmann::json spec = {{"driver", {{"enabled", false}}}};
        if (field.path.front() == "apiServer") spec["apiServer"]["host"] = "127.0.0.1";
        return spec;
      },
      [](const nlohmann::json& spec) {
        return ParseClusterPolicy({{"metadata", {{"name", "default"}}}, {"spec", spec}}).status();
      });
}

TEST(CrdsTest, EveryIntegerBoundOfThePoolAgreesWithTheParser) {
  const std::vector<IntegerField> fields = IntegersOf("gpunodepools.gpuop.io");
  std::set<std::string> names;
  for (const IntegerField& f : fields) names.insert(absl::StrJoin(f.path, "."));
  EXPECT_EQ(names, (std::set<std::string>{"timeSlicing.replicas", "power.floorPercent"}));
  ExpectParserAgrees(
      fields,
      [](const IntegerField&) {
        return nlohmann::json{{"nodeSelector", {{"matchLabels", {{"pool", "a"}}}}}};
      },
      [](const nlohmann::json& spec) {
        return ParseNodePool({{"metadata", {{"name", "a"}}}, {"spec", spec}}).status();
      });
}

TEST(CrdsTest, GpuNodesPrintTheFleetTable) {
  const nlohmann::json& columns =
      Crd("gpunodes.gpuop.io")["spec"]["versions"][0]["additionalPrinterColumns"];
  std::vector<std::string> names;
  for (const auto& c : columns) names.push_back(c["name"].get<std::string>());
  EXPECT_THAT(names, ::testing::ElementsAre("GPUs", "Model", "Driver", "Health", "State", "Age"));
}

}  // namespace
}  // namespace gpuop::op
