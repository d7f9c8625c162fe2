#include "team/team_info.h"

#include <cstring>

namespace cohort {

std::string TeamInfo::describe(int r) const {
  if (r >= 0 && r < static_cast<int>(peers.size())) {
    return describe_rank(peers[r].host_label, peers[r].pid, r);
  }
  if (r >= 0 && r < static_cast<int>(arrivals.size())) {
    return describe_rank(arrivals[r].host_label, arrivals[r].pid, r);
  }
  return "rank " + std::to_string(r);
}

tl::TeamView TeamInfo::view() const {
  tl::TeamView view;
  view.name = name;
  view.rank = rank;
  view.size = size;
  view.node_count = layout.node_count;
  view.node_of_rank = layout.node_of_rank;
  view.local_rank = layout.local_rank;
  for (const PeerRecord &peer : peers) {
    view.pid.push_back(peer.pid);
    view.cuda_device.push_back(peer.cuda_device);
    view.gpu.push_back(peer.cuda_device >= 0 ? tl::TeamView::gpu_of_uuid(peer.uuid) : 0);
    view.bus_id.push_back(peer.cuda_device >= 0
                              ? std::string(peer.bus_id, strnlen(peer.bus_id, sizeof(peer.bus_id)))
                              : "");
  }
  view.host_id = peers[rank].host_id;
  view.plan_peers = topo::linked_ranks(plan, rank);
  view.describe = [this](int r) { return describe(r); };
  return view;
}

}  // namespace cohort
