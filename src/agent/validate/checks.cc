#include "agent/validate/checks.h"

#include <charconv>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "kube/client/resource.h"

namespace gpuop::agent {

namespace {

absl::StatusOr<std::vector<hw::Inventory>> DiscoverAll(
    const std::vector<hw::Accelerator*>& accelerators) {
  std::vector<hw::Inventory> out;
  for (hw::Accelerator* a : accelerators) {
    absl::StatusOr<hw::Inventory> inventory = a->Discover();
    if (!inventory.ok()) {
      return absl::Status(
          inventory.status().code(),
          absl::StrCat(hw::VendorName(a->vendor()), " driver: ", inventory.status().message()));
    }
    out.push_back(*std::move(inventory));
  }
  return out;
}

std::string ResourceDomain(hw::Vendor vendor) {
  switch (vendor) {
    case hw::Vendor::kNvidia:
      return "nvidia.com/";
    case hw::Vendor::kAmd:
      return "amd.com/";
    default:
      return "";
  }
}

// Devices the device plugin can make of a GPU: a MIG-enabled GPU yields its instances.
int DevicesOf(const hw::Gpu& gpu) {
  return gpu.mig_enabled ? static_cast<int>(gpu.mig_devices.size()) : 1;
}

}  // namespace

ValidationCheck DriverCheck(std::vector<hw::Accelerator*> accelerators) {
  return {
      "driver", [accelerators]() -> absl::StatusOr<std::string> {
        if (accelerators.empty()) {
          return absl::FailedPreconditionError(
              "no GPU driver answers: NVML did not load and amdgpu reports no GPUs");
        }
        GPUOP_ASSIGN_OR_RETURN(std::vector<hw::Inventory> inventories, DiscoverAll(accelerators));
        std::vector<std::string> parts;
        size_t gpus = 0;
        for (size_t i = 0; i < inventories.size(); ++i) {
          const hw::Inventory& inv = inventories[i];
          const std::string vendor = hw::VendorName(accelerators[i]->vendor());
          if (inv.driver_version.empty()) {
            return absl::FailedPreconditionError(
                absl::StrCat(vendor, " driver: the driver version is unreadable"));
          }
          gpus += inv.gpus.size();
          parts.push_back(
              absl::StrCat(vendor, " driver ", inv.driver_version, ", ", inv.gpus.size(), " GPUs"));
        }
        if (gpus == 0) {
          return absl::FailedPreconditionError(
              absl::StrCat(absl::StrJoin(parts, "; "), ": the driver sees no GPU"));
        }
        return absl::StrJoin(parts, "; ");
      }};
}

ValidationCheck CudaCheck(std::vector<hw::Accelerator*> accelerators,
                          hw::CudaValidationOptions options, MigCudaRunner mig_runner) {
  return {"cuda", [accelerators, options, mig_runner]() -> absl::StatusOr<std::string> {
            std::vector<hw::Gpu> gpus;
            for (hw::Accelerator* a : accelerators) {
              if (a->vendor() != hw::Vendor::kNvidia) continue;
              GPUOP_ASSIGN_OR_RETURN(hw::Inventory inventory, a->Discover());
              gpus.insert(gpus.end(), inventory.gpus.begin(), inventory.gpus.end());
            }
            if (gpus.empty()) return std::string("not applicable: no NVIDIA GPUs");
            int version = 0;
            int whole = 0;
            int migs = 0;
            for (const hw::Gpu& gpu : gpus) {
              const std::string what = absl::StrCat("GPU ", gpu.index, " (", gpu.pci_bus_id, ")");
              if (gpu.mig_enabled) {
                for (const hw::MigDevice& device : gpu.mig_devices) {
                  if (!mig_runner) {
                    return absl::FailedPreconditionError(absl::StrCat(
                        what, ": MIG device ", device.uuid,
                        ": needs a process of its own (CUDA_VISIBLE_DEVICES), and none can run"));
                  }
                  absl::StatusOr<std::string> ran = mig_runner(device.uuid);
                  if (!ran.ok()) {
                    return absl::Status(
                        ran.status().code(),
                        absl::StrCat(what, ": MIG device ", device.uuid, " (", device.profile,
                                     "): ", ran.status().message()));
                  }
                  ++migs;
                }
                continue;
              }
              hw::CudaValidationOptions one = options;
              one.pci_bus_id = gpu.pci_bus_id;
              absl::StatusOr<hw::CudaValidationResult> result = hw::ValidateCuda(one);
              if (!result.ok()) {
                return absl::Status(result.status().code(),
                                    absl::StrCat(what, ": ", result.status().message()));
              }
              version = result->driver_version;
              ++whole;
            }
            std::string ran = absl::StrCat("vector add on ", whole, " GPUs");
            if (migs > 0) absl::StrAppend(&ran, " and ", migs, " MIG devices");
            if (version > 0)
              absl::StrAppend(&ran, ", CUDA ", version / 1000, ".", version % 1000 / 10);
            return ran;
          }};
}

ValidationCheck DevicePluginCheck(std::vector<hw::Accelerator*> accelerators,
                                  AllocatableReader allocatable) {
  return {
      "device-plugin", [accelerators, allocatable]() -> absl::StatusOr<std::string> {
        GPUOP_ASSIGN_OR_RETURN(std::vector<hw::Inventory> inventories, DiscoverAll(accelerators));
        std::map<std::string, int> expected;  // by resource domain
        for (size_t i = 0; i < inventories.size(); ++i) {
          const std::string domain = ResourceDomain(accelerators[i]->vendor());
          if (domain.empty()) continue;
          for (const hw::Gpu& gpu : inventories[i].gpus) expected[domain] += DevicesOf(gpu);
        }
        GPUOP_ASSIGN_OR_RETURN(auto resources, allocatable());
        std::vector<std::string> proved;
        for (const auto& [domain, want] : expected) {
          if (want == 0) continue;
          int have = 0;
          std::vector<std::string> seen;
          for (const auto& [name, quantity] : resources) {
            if (!absl::StartsWith(name, domain)) continue;
            int n = 0;
            auto [end, ec] = std::from_chars(quantity.data(), quantity.data() + quantity.size(), n);
            if (ec != std::errc() || end != quantity.data() + quantity.size()) {
              return absl::FailedPreconditionError(
                  absl::StrCat("allocatable ", name, "=\"", quantity, "\" is not a device count"));
            }
            have += n;
            seen.push_back(absl::StrCat(name, "=", n));
          }
          if (have < want) {
            return absl::FailedPreconditionError(absl::StrCat(
                "the Node's allocatable has ",
                seen.empty() ? absl::StrCat("no ", domain, " resource") : absl::StrJoin(seen, ", "),
                " but the GPUs found yield ", want,
                " devices: is the device plugin running and are all GPUs healthy?"));
          }
          proved.push_back(absl::StrJoin(seen, ", "));
        }
        if (proved.empty()) return std::string("not applicable: no GPUs to advertise");
        return absl::StrCat("allocatable ", absl::StrJoin(proved, ", "));
      }};
}

AllocatableReader NodeAllocatable(kube::Client& client, std::string node_name) {
  return [&client, node_name]() -> absl::StatusOr<std::map<std::string, std::string>> {
    GPUOP_ASSIGN_OR_RETURN(kube::Json node, client.Get(kube::resources::kNodes, "", node_name));
    std::map<std::string, std::string> out;
    const kube::Json& status = node["status"];
    if (!status.is_object() || !status.contains("allocatable")) return out;
    for (const auto& [name, value] : status["allocatable"].items()) {
      if (value.is_string()) out[name] = value.get<std::string>();
    }
    return out;
  };
}

}  // namespace gpuop::agent
