// The network devices UCX may use, from the rank's GPU: on a host with several NICs, only the
// NIC its GPU sends through (topo/nic_affinity.h), as NCCL picks its network device per GPU.
// UCX names a device by its verbs port ("mlx5_0:1") or its network interface ("ib0", "eth2");
// the NIC's names are read from sysfs, so that both the verbs and the TCP transports find it.
// COHORT_NIC_AFFINITY=OFF, or UCX_NET_DEVICES set by the user, leaves UCX's own choice.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace cohort::tl_ucx {

// UCX's names of the NIC called `name` (the model's: a verbs device or an interface) on this
// host, from sysfs under `sys_root`: a verbs device's ports and its interfaces, or the
// interface itself; empty when the host has no such device.
std::vector<std::string> ucx_device_names(const std::string &name,
                                          const std::string &sys_root = "/sys");

// Physical NICs of this host per sysfs under `sys_root`: verbs devices, and interfaces that
// have a device (not lo, bridges or veths) and no verbs device of their own counted already.
int physical_nic_count(const std::string &sys_root = "/sys");

// UCX_NET_DEVICES for a rank whose GPU has PCI bus id `gpu_bus` (empty: no GPU), or "" to
// leave UCX's choice; *why says which NIC and why, or why none (for the log).
Status nearest_net_devices(const std::string &gpu_bus, std::string *devices, std::string *why);

}  // namespace cohort::tl_ucx
