// The channels between the ranks of one host for one team: a shared-memory segment holding a
// notice slot (a team-wide notice: a rank aborted, or a collective failed) and a mailbox for
// every ordered pair of local ranks.  The host's leader creates it in the connect phase and
// sends its name through the phase exchange; the others attach; once every rank has reported
// (the ready phase), the leader unlinks the name, so nothing outlives the job.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tl/transport.h"
#include "coll/execution.h"
#include "tl_host/mailbox.h"
#include "tl_host/shm_segment.h"

namespace cohort::tl_host {

// What the leader tells its host's ranks (trivially copyable: it travels in the exchange).
struct SegmentInfo {
  char name[64];
  uint64_t capacity;  // bytes per mailbox
  int32_t local_size;
  int32_t reserved;
};

class HostChannels {
 public:
  // Leader: removes stale segments of this host, creates and lays out a new one.
  static Status create(uint64_t host_id, int local_size, size_t capacity, SegmentInfo *info,
                       std::unique_ptr<HostChannels> *out);
  // Every other rank of the host: maps the leader's segment and checks its mailboxes.
  static Status attach(const SegmentInfo &info, std::unique_ptr<HostChannels> *out);

  // The channels of local rank `local_rank`, by team rank: `team_rank_of_local[i]` is the team
  // rank of local rank i.  Entries of ranks on other hosts (and this rank) stay null.
  std::vector<coll::PeerChannels> bind(int local_rank, const std::vector<int> &team_rank_of_local,
                                       int team_size);

  void unlink() { segment_->unlink(); }

  // The segment's notice slot: the first notice posted stays (later ones are its
  // consequences); every rank of the host reads it.
  void post_notice(const tl::Notice &notice);
  bool read_notice(tl::Notice *out) const;

  // Single copy from now on for messages of at least `min_bytes`, between the ends bind()
  // made (every local rank must do the same, with the same size): readers read straight from
  // the writer process (pid_of_local[local rank]).
  void enable_references(size_t min_bytes, const std::vector<int> &pid_of_local);

 private:
  HostChannels(std::unique_ptr<ShmSegment> segment, int local_size, size_t capacity);
  void *mailbox(int from, int to) const;

  std::unique_ptr<ShmSegment> segment_;
  int local_size_;
  size_t capacity_;
  size_t stride_;
  std::vector<std::unique_ptr<MailboxWriter>> writers_;
  std::vector<std::unique_ptr<MailboxReader>> readers_;
  std::vector<int> others_;  // the local rank of writers_[k] / readers_[k]'s peer
};

}  // namespace cohort::tl_host
