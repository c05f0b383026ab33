#include "agent/discover/pci_node.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "agent/labels/inventory.h"
#include "common/clock.h"
#include "hw/pci/sysfs.h"
#include "kube/client/resource.h"

namespace gpuop::agent {

std::string PciNodeVerdict::vendor() const {
  if (!nvidia.empty() && !amd.empty()) return "mixed";
  if (!nvidia.empty()) return "nvidia";
  if (!amd.empty()) return "amd";
  return "";
}

PciNodeVerdict ClassifyPci(const hw::PciInventory& inventory) {
  PciNodeVerdict verdict;
  for (const hw::PciDevice& device : inventory.Gpus(hw::Vendor::kNvidia)) {
    verdict.nvidia.push_back(device.address);
  }
  for (const hw::PciDevice& device : inventory.Gpus(hw::Vendor::kAmd)) {
    verdict.amd.push_back(device.address);
  }
  for (const absl::Status& error : inventory.errors) {
    verdict.problems.push_back(std::string(error.message()));
  }
  // A GPU found is a GPU node whatever else failed; "none" must have read every device.
  verdict.conclusive = verdict.present() || inventory.errors.empty();
  return verdict;
}

absl::StatusOr<PciNodeVerdict> ScanPciNode(const std::string& sysfs_root) {
  const std::string bus = hw::sysfs::Join(sysfs_root, "bus");
  if (!hw::sysfs::Exists(bus)) {
    return absl::NotFoundError(absl::StrCat(bus, " does not exist: ", sysfs_root,
                                            " is not a sysfs (is the host's /sys mounted?)"));
  }
  absl::StatusOr<hw::PciInventory> inventory = hw::DiscoverPci(sysfs_root);
  if (absl::IsNotFound(inventory.status()) &&
      !hw::sysfs::Exists(hw::sysfs::Join(sysfs_root, "bus/pci"))) {
    return PciNodeVerdict{};  // no PCI bus at all, so no PCI GPUs
  }
  if (!inventory.ok()) {
    return absl::Status(inventory.status().code(),
                        absl::StrCat("scan PCI devices: ", inventory.status().message()));
  }
  PciNodeVerdict verdict = ClassifyPci(*inventory);
  verdict.nvidia_module_loaded = hw::sysfs::Exists(hw::sysfs::Join(sysfs_root, "module/nvidia"));
  verdict.nouveau_loaded = hw::sysfs::Exists(hw::sysfs::Join(sysfs_root, "module/nouveau"));
  return verdict;
}

std::map<std::string, std::string> DiscoveryLabels(const PciNodeVerdict& verdict) {
  if (!verdict.conclusive) return {};
  std::map<std::string, std::string> labels = {
      {kGpuPresentLabel, verdict.present() ? "true" : "false"}};
  if (verdict.present()) labels[kGpuVendorLabel] = verdict.vendor();
  if (!verdict.nvidia.empty() && verdict.nvidia_module_loaded) {
    labels[kDriverPreinstalledLabel] = "true";
  }
  if (!verdict.nvidia.empty() && verdict.nouveau_loaded) labels[kNouveauLoadedLabel] = "true";
  return labels;
}

std::map<std::string, std::string> OsReleaseLabels(const std::string& os_release_path) {
  std::map<std::string, std::string> labels;
  std::ifstream in(os_release_path);
  std::string line;
  const auto valid = [](const std::string& v) {
    const auto alnum = [](char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); };
    if (v.empty() || v.size() > 63 || !alnum(v.front()) || !alnum(v.back())) return false;
    return std::all_of(v.begin(), v.end(),
                       [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
  };
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq);
    std::string value = std::string(absl::StripAsciiWhitespace(line.substr(eq + 1)));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    if (key == "ID" && valid(value)) labels[kOsIdLabel] = value;
    if (key == "VERSION_ID" && valid(value)) labels[kOsVersionLabel] = value;
  }
  return labels;
}

absl::Status LabelNode(kube::Client& client, const std::string& node_name,
                       const std::map<std::string, std::string>& labels) {
  // An apply creates what does not exist; the agent must never create a Node.
  absl::StatusOr<kube::Json> node =
      client.Get(kube::resources::kNodes, "", node_name, {.metadata_only = true});
  if (!node.ok()) {
    return absl::Status(absl::IsNotFound(node.status()) ? absl::StatusCode::kFailedPrecondition
                                                        : node.status().code(),
                        absl::StrCat("label node ", node_name, ": ", node.status().message()));
  }
  kube::Json object = {{"apiVersion", "v1"},
                       {"kind", "Node"},
                       {"metadata", {{"name", node_name}, {"labels", kube::Json::object()}}}};
  for (const auto& [key, value] : labels) object["metadata"]["labels"][key] = value;
  absl::StatusOr<kube::Json> applied =
      client.Apply(kube::resources::kNodes, object, kDiscoveryFieldManager, /*force=*/true);
  if (!applied.ok()) {
    return absl::Status(applied.status().code(),
                        absl::StrCat("label node ", node_name, ": ", applied.status().message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<PciNodeVerdict> DiscoverAndLabel(kube::Client& client,
                                                const DiscoveryOptions& options,
                                                std::stop_token stop) {
  absl::Duration backoff = options.retry_initial;
  while (!stop.stop_requested()) {
    absl::Status failed;
    absl::StatusOr<PciNodeVerdict> verdict = ScanPciNode(options.sysfs_root);
    if (!verdict.ok()) {
      failed = verdict.status();
    } else if (!verdict->conclusive) {
      std::string problems;
      for (const std::string& p : verdict->problems) absl::StrAppend(&problems, "; ", p);
      failed = absl::UnavailableError(
          absl::StrCat("no GPU found, but not every PCI device could be read", problems));
    } else {
      std::map<std::string, std::string> labels = DiscoveryLabels(*verdict);
      if (!options.os_release.empty()) labels.merge(OsReleaseLabels(options.os_release));
      failed = LabelNode(client, options.node_name, labels);
      if (failed.ok()) return verdict;
    }
    std::fprintf(stderr, "discover-pci: %s; retrying in %s\n", failed.ToString().c_str(),
                 absl::FormatDuration(backoff).c_str());
    if (!common::Clock::Real().SleepFor(backoff, stop)) break;
    backoff = std::min(backoff * 2, options.retry_max);
  }
  return absl::CancelledError("discover-pci: stopped");
}

}  // namespace gpuop::agent
