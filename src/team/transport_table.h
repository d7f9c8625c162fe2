// The transports a team connects with, in order of preference: each peer is reached through
// the first transport whose channels reach it.  The one place that names the transports
// (their interfaces are tl/; each is a folder of its own below the team): adding one is that
// folder and one line in transport_table.cc (tests add theirs with register_transport).
#pragma once

#include <memory>
#include <vector>

#include "tl/device_transport.h"
#include "tl/transport.h"

namespace cohort {

struct TransportInfo {
  const char *name;
  const char *description;
  std::unique_ptr<tl::Transport> (*make)();
};

// The built-in transports after those tests registered (a copy: registration may change it).
std::vector<TransportInfo> transport_table();

// Puts `info` in front of the others for teams created from now on (tests; a later
// registration of the same name replaces it).  unregister_transport removes it again.
void register_transport(const TransportInfo &info);
void unregister_transport(const char *name);

// The transport of collectives on device memory; null in a build without CUDA.
std::unique_ptr<tl::DeviceTransport> make_device_transport();
// Its name and what it does, for cohort_info ("" without CUDA).
TransportInfo device_transport_info();

}  // namespace cohort
