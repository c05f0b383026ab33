#include "operator/render/monitoring.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gpuop::op::render {
namespace {

constexpr char kName[] = "gpuop-exporter";
constexpr char kPortName[] = "metrics";

// "15s", "1m30s": the Prometheus duration form of a whole number of seconds (at least 1s).
std::string PrometheusDuration(absl::Duration d) {
  int64_t seconds = std::max<int64_t>(1, absl::ToInt64Seconds(d));
  std::string out;
  if (seconds >= 3600) absl::StrAppend(&out, seconds / 3600, "h");
  if (seconds % 3600 >= 60) absl::StrAppend(&out, seconds % 3600 / 60, "m");
  if (seconds % 60 != 0) absl::StrAppend(&out, seconds % 60, "s");
  return out;
}

}  // namespace

std::vector<nlohmann::json> ExporterMonitoring(const PolicySpec& policy, const std::string& ns,
                                               const nlohmann::json& labels) {
  const ComponentsSpec& c = policy.components;
  std::vector<nlohmann::json> out;
  const nlohmann::json selector = {{"app.kubernetes.io/name", kName}};
  out.push_back({{"apiVersion", "v1"},
                 {"kind", "Service"},
                 {"metadata", {{"name", kName}, {"namespace", ns}, {"labels", labels}}},
                 {"spec",
                  {{"clusterIP", "None"},
                   {"selector", selector},
                   {"ports",
                    {{{"name", kPortName},
                      {"port", c.exporter_port},
                      {"targetPort", c.exporter_port},
                      {"protocol", "TCP"}}}}}}});
  if (!c.exporter_service_monitor) return out;
  nlohmann::json monitor_labels = labels;
  for (const auto& [key, value] : c.exporter_service_monitor_labels) {
    if (!monitor_labels.contains(key)) monitor_labels[key] = value;  // gpuop's own keys win
  }
  out.push_back(
      {{"apiVersion", "monitoring.coreos.com/v1"},
       {"kind", "ServiceMonitor"},
       {"metadata", {{"name", kName}, {"namespace", ns}, {"labels", monitor_labels}}},
       {"spec",
        {{"selector", {{"matchLabels", selector}}},
         {"namespaceSelector", {{"matchNames", {ns}}}},
         {"endpoints",
          {{{"port", kPortName},
            {"path", "/metrics"},
            {"interval",
             PrometheusDuration(c.exporter_scrape_interval.value_or(c.exporter_interval))},
            // The node a sample came from, as dcgm-exporter's users expect it on every series.
            {"relabelings",
             {{{"sourceLabels", {"__meta_kubernetes_pod_node_name"}},
               {"targetLabel", "node"}}}}}}}}}});
  return out;
}

}  // namespace gpuop::op::render
