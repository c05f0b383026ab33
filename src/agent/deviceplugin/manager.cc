#include "agent/deviceplugin/manager.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace gpuop::agent {

DevicePluginManager::DevicePluginManager(DevicePluginManagerOptions options)
    : options_(std::move(options)) {}

DevicePluginManager::~DevicePluginManager() { Stop(); }

absl::Status DevicePluginManager::Start() {
  std::error_code ec;
  std::filesystem::create_directories(options_.plugin_dir, ec);
  inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) return absl::ErrnoToStatus(errno, "device plugins: inotify_init1");
  if (inotify_add_watch(inotify_fd_, options_.plugin_dir.c_str(),
                        IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM) < 0) {
    const int err = errno;
    close(inotify_fd_);
    inotify_fd_ = -1;
    return absl::FailedPreconditionError(absl::StrCat(
        "device plugins: cannot watch ", options_.plugin_dir.string(), ": ", strerror(err)));
  }
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
  return absl::OkStatus();
}

void DevicePluginManager::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  std::map<std::string, Entry> entries;
  {
    absl::MutexLock lock(&mu_);
    entries.swap(entries_);
  }
  for (auto& [resource, entry] : entries) entry.server->Stop();
  if (inotify_fd_ >= 0) close(inotify_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
  inotify_fd_ = wake_fd_ = -1;
}

std::vector<AdvertisedDevice> DevicePluginManager::Advertise(
    const std::vector<PluginDevice>& devices, const HealthTracker* health) const {
  std::vector<AdvertisedDevice> out;
  out.reserve(devices.size());
  for (const auto& d : devices) {
    const bool healthy =
        health == nullptr || !health->Check(d.gpu_id, d.gpu_instance_id).has_value();
    out.push_back({.device = d, .healthy = healthy});
  }
  return out;
}

absl::Status DevicePluginManager::Apply(const ResourcePlan& plan, const AllocateSettings& settings,
                                        const Topology& topology, const HealthTracker* health) {
  std::vector<std::shared_ptr<ResourceServer>> stopped;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    topology_ = topology;
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (!plan.resources.contains(it->first)) {
        stopped.push_back(it->second.server);
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
    for (const auto& [resource, devices] : plan.resources) {
      Entry& entry = entries_[resource];
      if (entry.server == nullptr) {
        entry.server = std::make_shared<ResourceServer>(ResourceServerOptions{
            .resource = resource, .plugin_dir = options_.plugin_dir, .on_stream_end = [this] {
              Wake();
            }});
        status.Update(entry.server->Start());
      }
      entry.server->SetSettings(settings);
      entry.devices = devices;
      entry.server->SetDevices(Advertise(devices, health), topology);
    }
  }
  for (auto& server : stopped) server->Stop();
  Wake();  // Register the new ones now.
  return status;
}

void DevicePluginManager::Wake() {
  uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!write(wake_fd_, &one, sizeof(one));
}

void DevicePluginManager::RefreshHealth(const HealthTracker& health) {
  absl::MutexLock lock(&mu_);
  for (auto& [resource, entry] : entries_) {
    entry.server->SetDevices(Advertise(entry.devices, &health), topology_);
  }
}

std::vector<std::string> DevicePluginManager::resources() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [resource, entry] : entries_) out.push_back(resource);
  return out;
}

absl::Duration DevicePluginManager::Reconcile() {
  const std::filesystem::path kubelet = options_.plugin_dir / options_.kubelet_socket_name;
  const absl::Time now = absl::Now();
  absl::Duration next = absl::InfiniteDuration();
  std::vector<std::pair<std::string, std::shared_ptr<ResourceServer>>> todo;
  int64_t generation = 0;
  {
    absl::MutexLock lock(&mu_);
    generation = kubelet_generation_;
    for (auto& [resource, entry] : entries_) {
      ResourceServer& server = *entry.server;
      const int64_t ended = server.streams_ended_by_kubelet();
      int64_t new_ends = ended - entry.seen_stream_ends;
      entry.seen_stream_ends = ended;
      const int64_t stale = std::min(new_ends, entry.stale_streams);
      entry.stale_streams -= stale;
      new_ends -= stale;
      const bool kubelet_ended = new_ends > 0;
      // The kubelet deleted our socket (a restart does; so may a person on a live kubelet) or
      // ended a stream. Serve anew when the socket is gone or other streams are still open, so
      // that every old stream ends now, and give the same kubelet reregister_delay to see the
      // ends; a kubelet that has restarted since took its streams with it.
      const bool socket_gone = !std::filesystem::exists(server.socket_path());
      if (socket_gone || kubelet_ended) {
        const bool had_streams = kubelet_ended || server.open_streams() > 0;
        if (socket_gone || server.open_streams() > 0) server.Stop();
        entry.registered = false;
        if (had_streams && entry.kubelet_generation == kubelet_generation_) {
          entry.not_before = now + options_.reregister_delay;
        }
        if (!server.serving() && !server.Start().ok()) continue;
      }
      if (entry.registered) continue;
      if (entry.not_before > now) {
        next = std::min(next, entry.not_before - now);
        continue;
      }
      todo.emplace_back(resource, entry.server);
    }
  }
  if (todo.empty() || !std::filesystem::exists(kubelet)) return next;
  for (auto& [resource, server] : todo) {
    // Outside the lock: the kubelet calls back into the server before Register returns.
    if (!server->Register(kubelet).ok()) continue;
    registrations_.fetch_add(1);
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(resource);
    if (it != entries_.end() && it->second.server == server) {
      it->second.registered = true;
      it->second.kubelet_generation = generation;
    }
  }
  return next;
}

void DevicePluginManager::Run(std::stop_token stop) {
  alignas(inotify_event) char buffer[4096];
  while (!stop.stop_requested()) {
    const absl::Duration wait = std::min(Reconcile(), options_.retry_interval);
    bool kubelet_restarted = false;
    pollfd fds[2] = {{.fd = inotify_fd_, .events = POLLIN, .revents = 0},
                     {.fd = wake_fd_, .events = POLLIN, .revents = 0}};
    if (poll(fds, 2, static_cast<int>(absl::ToInt64Milliseconds(wait)) + 1) <= 0) continue;
    if (fds[1].revents & POLLIN) {
      uint64_t n;
      (void)!read(wake_fd_, &n, sizeof(n));
    }
    if (fds[0].revents & POLLIN) {
      ssize_t len;
      while ((len = read(inotify_fd_, buffer, sizeof(buffer))) > 0) {
        for (char* p = buffer; p < buffer + len;) {
          auto* event = reinterpret_cast<inotify_event*>(p);
          const std::string name = event->len > 0 ? event->name : "";
          if ((event->mask & (IN_CREATE | IN_MOVED_TO)) && name == options_.kubelet_socket_name) {
            kubelet_restarted = true;
          }
          p += sizeof(inotify_event) + event->len;
        }
      }
    }
    if (kubelet_restarted) {
      // A new kubelet knows nothing of us, and the old one's streams died with it.
      absl::MutexLock lock(&mu_);
      ++kubelet_generation_;
      for (auto& [resource, entry] : entries_) {
        entry.registered = false;
        entry.not_before = absl::InfinitePast();
        entry.stale_streams = entry.server->open_streams();
      }
    }
  }
}

}  // namespace gpuop::agent
