#ifndef GPUOP_AGENT_CDI_DRIVER_WATCH_H_
#define GPUOP_AGENT_CDI_DRIVER_WATCH_H_

#include <string>

#include "agent/cdi/driver_files.h"
#include "agent/cdi/host_files.h"

namespace gpuop::agent::cdi {

// A cheap fingerprint of what an NVIDIA spec's content depends on in the host's files, so that
// a poll of a few stat() calls can tell when to regenerate: the identity (device, inode,
// modification and change times) of the driver root, of each library, binary and firmware
// directory and IPC path inside it (resolved inside the root), and of the device directory.
// It changes when a driver container restarts (a new mount: new device and inode), when
// libraries are replaced or added, when nvidia-persistenced or the fabric manager starts (its
// socket appears) and when a device node is created (nvidia-uvm's appears on first use).
// What does not exist is part of the fingerprint too ("-"). Never fails: an unreadable path is
// recorded as such.
std::string DriverFingerprint(const HostFiles& files, const DriverFilesOptions& driver,
                              const std::string& dev_root);

}  // namespace gpuop::agent::cdi

#endif  // GPUOP_AGENT_CDI_DRIVER_WATCH_H_
