// What a team is made of: its settings, what it knows of its ranks, its OOB, its transports
// and its collective front end.  Creation (creation.h) fills them phase by phase; the team
// (team.h) uses them once ready.
#pragma once

#include <memory>

#include "core/oob.h"
#include "team/coll_front.h"
#include "team/config.h"
#include "team/team_info.h"
#include "team/transport_set.h"
#include "tl/device_transport.h"

namespace cohort {

struct TeamParts {
  TeamConfig config;
  TeamInfo info;
  std::unique_ptr<Oob> oob;  // the private duplicate (MPI) or the caller's OOB
  TransportSet transports;
  std::unique_ptr<tl::DeviceTransport> device;  // from device-setup; null without CUDA
  CollFront colls{info, transports, device};
};

}  // namespace cohort
