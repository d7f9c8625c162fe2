// What a team knows of its ranks once creation has gathered it: identities, hosts, the plan,
// the init report.  Written by the creation phases in order, read-only once the team is ready.
#pragma once

#include <string>
#include <vector>

#include "cohort.h"
#include "team/node_layout.h"
#include "team/peer.h"
#include "tl/transport.h"
#include "topo/plan.h"

namespace cohort {

struct TeamInfo {
  std::string name = "team";  // the config's label, for logs and messages
  int rank = 0;
  int size = 0;
  std::vector<ArrivalRecord> arrivals;  // from check-in: names ranks before peer-info
  std::vector<PeerRecord> peers;        // from peer-info
  NodeLayout layout;                    // from local-ranks
  topo::Plan plan;                      // from align
  cohort_init_report_t report{};        // from ready

  bool is_host_leader(int r) const { return layout.local_rank[r] == 0; }
  // "rank 3 (host node7, pid 4242)", as far as creation got to know it.
  std::string describe(int r) const;
  // What transports see of the team (after local-ranks).
  tl::TeamView view() const;
};

}  // namespace cohort
