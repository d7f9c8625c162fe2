// Team creation, connect phase: each host's leader creates the shared-memory mailboxes of its
// ranks and sends the segment's name in the phase record; the others attach after the
// exchange.  An attach that fails is this rank's status in the ready phase, so every rank
// still ends alike; the leader unlinks the name once ready succeeded.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "core/log.h"
#include "core/params.h"
#include "team/team.h"

namespace cohort {

Status TeamImpl::step_connect() {
  const int local_size = layout_.local_size[rank_];
  if (!exchange_.request) {
    tl_host::SegmentInfo info;
    std::memset(&info, 0, sizeof(info));
    Status s = local_phase_status(Phase::kConnect);
    if (!is_error(s) && is_host_leader(rank_) && local_size > 1) {
      int64_t capacity = 0;
      s = param_int("SHM_MAILBOX_BYTES", &capacity);
      if (!is_error(s)) {
        s = tl_host::HostChannels::create(peers_[rank_].host_id, local_size,
                                          static_cast<size_t>(capacity), &info, &host_channels_);
      }
    }
    return post_exchange(*oob_, Phase::kConnect, "connect", phase_channel(Phase::kConnect), s,
                         &info, sizeof(info));
  }
  Status s = poll_exchange();
  if (s != COHORT_SUCCESS) return s;
  if (is_error(param_double("COLL_TIMEOUT", &coll_timeout_s_))) coll_timeout_s_ = 600;
  // A message from a peer of this host takes well under a microsecond: poll that long before
  // yielding, unless ranks share cores (then spinning only delays the peer that must run).
  cpu_set_t cpus;
  int cores = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  int online = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  spins_ = local_size <= std::max(cores, online > 0 ? online : 1) ? 64 : 0;
  std::vector<int> local_ranks;  // team rank of each local rank of this host
  for (int r = 0; r < size_; ++r) {
    if (layout_.node_of_rank[r] == layout_.node_of_rank[rank_]) local_ranks.push_back(r);
  }
  if (local_size > 1 && !is_host_leader(rank_)) {
    tl_host::SegmentInfo info;
    std::memcpy(&info, payload_of(local_ranks[0]), sizeof(info));
    connect_status_ = tl_host::HostChannels::attach(info, &host_channels_);
    if (is_error(connect_status_)) connect_error_ = last_error();
  }
  if (host_channels_) {
    peer_channels_ = host_channels_->bind(layout_.local_rank[rank_], local_ranks, size_);
  } else {
    peer_channels_.assign(size_, tl_host::PeerChannels{});
  }
  exchange_.request.reset();
  end_phase(Phase::kConnect);
  stage_ = Stage::kReady;
  return COHORT_IN_PROGRESS;
}

}  // namespace cohort
