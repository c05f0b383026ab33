#include "agent/deviceplugin/allocate_response.h"

#include <functional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/mps/root.h"

namespace gpuop::agent {
namespace {

// Control nodes a container with NVIDIA GPUs uses, passed when they exist (as NVIDIA's plugin).
constexpr const char* kControlNodes[] = {"/dev/nvidiactl", "/dev/nvidia-uvm",
                                         "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"};

std::string HostPath(const std::string& dev_root, const std::string& path) {
  if (dev_root.empty() || dev_root == "/") return path;
  return absl::StrCat(dev_root.back() == '/' ? dev_root.substr(0, dev_root.size() - 1) : dev_root,
                      path);
}

void AddDeviceSpec(v1beta1::ContainerAllocateResponse& out, const std::string& container_path,
                   const std::string& host_path) {
  auto* spec = out.add_devices();
  spec->set_container_path(container_path);
  spec->set_host_path(host_path);
  spec->set_permissions("rw");
}

std::string IdOf(const PluginDevice& d, DeviceIdStrategy strategy) {
  return strategy == DeviceIdStrategy::kIndex && d.vendor == hw::Vendor::kNvidia ? d.index_name
                                                                                 : d.physical_id;
}

// The device's CDI name under the id strategy: its kind with the id (gpuop's NVIDIA spec names
// every device by UUID and by index).
std::string CdiNameOf(const PluginDevice& d, DeviceIdStrategy strategy) {
  if (d.vendor != hw::Vendor::kNvidia) return d.cdi_name;
  const std::string kind = d.cdi_name.substr(0, d.cdi_name.find('='));
  return absl::StrCat(kind, "=", IdOf(d, strategy));
}

std::string ChannelPath(int channel) {
  return absl::StrCat("/dev/nvidia-caps-imex-channels/channel", channel);
}

}  // namespace

DeviceListStrategies EffectiveStrategies(const AllocateSettings& settings, bool spec_present) {
  const DeviceListStrategies& in = settings.strategies;
  const bool drop_cdi = !settings.cdi_enabled || (in.cdi_fallback && !spec_present);
  if (!drop_cdi || !in.AnyCdi()) return in;
  DeviceListStrategies out;
  for (DeviceListStrategy s : in.Strategies()) {
    if (s == DeviceListStrategy::kCdiCri || s == DeviceListStrategy::kCdiAnnotations) continue;
    out.list.push_back(s);
  }
  if (out.list.empty()) out.list.push_back(DeviceListStrategy::kEnvVar);
  return out;
}

v1beta1::ContainerAllocateResponse ContainerResponse(
    const std::vector<const PluginDevice*>& devices, const AllocateSettings& settings,
    const DeviceListStrategies& strategies, const std::string& response_id,
    const std::function<bool(const std::string&)>& node_exists) {
  v1beta1::ContainerAllocateResponse out;
  if (devices.empty()) return out;
  const bool nvidia = devices.front()->vendor == hw::Vendor::kNvidia;
  std::vector<std::string> ids, cdi_names;
  for (const PluginDevice* d : devices) {
    ids.push_back(IdOf(*d, settings.id_strategy));
    cdi_names.push_back(CdiNameOf(*d, settings.id_strategy));
  }
  if (strategies.Includes(DeviceListStrategy::kCdiCri)) {
    for (const auto& name : cdi_names) out.add_cdi_devices()->set_name(name);
  }
  if (strategies.Includes(DeviceListStrategy::kCdiAnnotations)) {
    (*out.mutable_annotations())[absl::StrCat(settings.cdi_annotation_prefix,
                                              "gpuop-device-plugin_", response_id)] =
        absl::StrJoin(cdi_names, ",");
  }
  if (nvidia) {
    auto& envs = *out.mutable_envs();
    if (settings.gds) envs["NVIDIA_GDS"] = "enabled";
    if (settings.mofed) envs["NVIDIA_MOFED"] = "enabled";
    if (settings.gdrcopy) envs["NVIDIA_GDRCOPY"] = "enabled";
    for (int channel : settings.imex_channels) {
      AddDeviceSpec(out, ChannelPath(channel), HostPath(settings.dev_root, ChannelPath(channel)));
    }
  }
  if (strategies.AllCdi()) return out;

  if (!nvidia) {
    // Other vendors: the device nodes themselves (shared ones such as /dev/kfd once).
    std::set<std::string> nodes;
    for (const PluginDevice* d : devices)
      nodes.insert(d->device_nodes.begin(), d->device_nodes.end());
    for (const auto& node : nodes) AddDeviceSpec(out, node, node);
    return out;
  }
  auto& envs = *out.mutable_envs();
  std::vector<std::string> channels;
  for (int channel : settings.imex_channels) channels.push_back(std::to_string(channel));
  if (strategies.Includes(DeviceListStrategy::kEnvVar)) {
    envs[kVisibleDevicesEnv] = absl::StrJoin(ids, ",");
    if (!channels.empty()) envs["NVIDIA_IMEX_CHANNELS"] = absl::StrJoin(channels, ",");
  }
  if (strategies.Includes(DeviceListStrategy::kVolumeMounts)) {
    envs[kVisibleDevicesEnv] = kVolumeMountsRoot;
    auto mount = [&](const std::string& path) {
      auto* m = out.add_mounts();
      m->set_host_path("/dev/null");
      m->set_container_path(absl::StrCat(kVolumeMountsRoot, "/", path));
    };
    for (const auto& id : ids) mount(id);
    for (const auto& channel : channels) mount(absl::StrCat("imex/", channel));
  }
  if (settings.pass_device_specs) {
    std::set<std::string> nodes;
    for (const PluginDevice* d : devices)
      nodes.insert(d->device_nodes.begin(), d->device_nodes.end());
    for (const auto& node : nodes) AddDeviceSpec(out, node, HostPath(settings.dev_root, node));
    for (const char* node : kControlNodes) {
      const std::string host = HostPath(settings.dev_root, node);
      if (node_exists(host)) AddDeviceSpec(out, node, host);
    }
  }
  return out;
}

void AddMpsClient(const std::string& resource, const std::string& mps_root,
                  v1beta1::ContainerAllocateResponse& out) {
  const mps::Root host(mps_root);
  const mps::Root container(mps::kContainerRoot);
  (*out.mutable_envs())[mps::kPipeDirEnv] = container.PipeDir(resource).string();
  auto mount = [&out](const std::filesystem::path& container_path,
                      const std::filesystem::path& host_path) {
    auto* m = out.add_mounts();
    m->set_container_path(container_path.string());
    m->set_host_path(host_path.string());
  };
  mount(container.PipeDir(resource), host.PipeDir(resource));
  mount(mps::kClientShmDir, host.ShmDir());
}

}  // namespace gpuop::agent
