#ifndef GPUOP_OPERATOR_RENDER_MONITORING_H_
#define GPUOP_OPERATOR_RENDER_MONITORING_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/api/policy.h"

namespace gpuop::op::render {

// How Prometheus finds the exporter: the headless Service gpuop-exporter (no cluster IP: every
// node's exporter is its own target, listed in the Service's endpoints, and nothing ever dials a
// virtual IP), whose port "metrics" selects the exporter's pods; with
// components.exporter.serviceMonitor.enabled also a ServiceMonitor (monitoring.coreos.com/v1)
// scraping that port at the given interval (the sampling interval by default), with the
// additional labels the user's Prometheus selects on. `labels` are the exporter's object labels
// (managed-by, component, part-of, name); the Service selects its pods by their name label.
std::vector<nlohmann::json> ExporterMonitoring(const PolicySpec& policy, const std::string& ns,
                                               const nlohmann::json& labels);

}  // namespace gpuop::op::render

#endif  // GPUOP_OPERATOR_RENDER_MONITORING_H_
