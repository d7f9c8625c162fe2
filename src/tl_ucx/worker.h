// UCX between hosts: one ucp worker per process, shared by every team that spans hosts.  It
// is created by the first such team and destroyed with the last.  Its address travels in the
// connect phase's exchange; endpoints to peers' workers are made once and reused by teams.
// It owns the wire's lanes (lane.h), which carry the direct messages: their addresses travel
// beside its own, and two processes use as many lanes as the one with fewer has.
//
// Tags: a message carries the receiving process's id for the team (sent in the connect phase)
// and the sender's team rank, so teams and senders never take each other's messages on the
// shared worker.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "tl_ucx/lane.h"

namespace cohort::tl_ucx {

constexpr int kTagRankBits = 24;  // up to 16M ranks per team
constexpr uint64_t kTagRankMask = (uint64_t{1} << kTagRankBits) - 1;
// One bit above the rank tells a channel's two streams apart: its byte stream (eager messages
// through staging slots) and its direct messages (large ones, fragments straight between the
// ranks' buffers), each matched in order on its own.
enum class Stream { kBytes = 0, kDirect = 1 };
constexpr int kTagStreamShift = kTagRankBits;
constexpr int kTagTeamShift = kTagRankBits + 1;
constexpr uint64_t kMaxTeamTagId = (uint64_t{1} << (64 - kTagTeamShift)) - 1;

inline ucp_tag_t make_tag(uint64_t team_id, int sender_rank, Stream stream = Stream::kBytes) {
  return (team_id << kTagTeamShift) | (static_cast<uint64_t>(stream) << kTagStreamShift) |
         (static_cast<uint64_t>(sender_rank) & kTagRankMask);
}

// A connection to a peer's worker, shared by every team that reaches that worker, and its
// health: UCX's error callback (peer failure detection) marks it failed, and every channel
// over it reports that as its failure.
struct Endpoint {
  ucp_ep_h ep = nullptr;
  std::string who;               // names the peer in messages: "rank 3 (host b, pid 42)"
  ucs_status_t status = UCS_OK;  // the failure UCX reported
  // COHORT_SUCCESS, or COHORT_ERR_SYSTEM: "UCX connection to <who> failed: <reason>".
  Status failure() const;
  // What UCX's error callback does (also how tests inject a failure): marks it failed, once.
  void fail(ucs_status_t reason);
};

// The most lanes a process makes (COHORT_UCX_LANES' bound; the connect record's room).
constexpr int kMaxLanes = 8;

class Worker {
 public:
  // The process's worker, made on first use, on the network devices nearest the GPU with PCI
  // bus id `gpu_bus` (net_devices.h; empty: no GPU), with COHORT_UCX_LANES lanes (0: as many
  // as the host's CPUs give each of its `ranks_on_host` ranks).
  static Status acquire(const std::string &gpu_bus, int ranks_on_host,
                        std::shared_ptr<Worker> *out);
  // A worker of its own (tests connect two in one process); `net_devices`: UCX_NET_DEVICES'
  // value for it, empty for UCX's choice.
  static Status create(std::shared_ptr<Worker> *out, const std::string &net_devices = "",
                       int lanes = 1);
  ~Worker();
  Worker(const Worker &) = delete;
  Worker &operator=(const Worker &) = delete;

  const std::string &address() const { return address_; }
  // The endpoint to the worker at `address` (made on first use, and made again once it failed);
  // `who` names it in errors.  It lives as long as the worker.
  Status endpoint(const std::string &address, const std::string &who, Endpoint **out);
  void progress() { ucp_worker_progress(worker_); }
  ucp_worker_h handle() const { return worker_; }
  // Serialises every use of the worker (it is created in serialized thread mode).
  std::mutex &mutex() { return mutex_; }

  // A tag id for a team's receives on this process, never handed out twice: a sender to
  // this process tags with the receiver's id, so ids need no agreement across processes.
  uint64_t new_team_id();

  // The lanes' addresses, in lane order.
  std::vector<std::string> lane_addresses() const;
  // Links on the first min(lanes, peer's lanes) lanes to the peer whose lanes are at
  // `addresses` (`who` names it in errors).
  Status lane_links(const std::vector<std::string> &addresses, const std::string &who,
                    std::vector<LaneLink> *out);
  // The first `n` lanes (at most all of them): where the receives from a peer are posted.
  std::vector<Lane *> lanes(size_t n) const;

 private:
  Worker() = default;
  Status init(const std::string &net_devices, int lanes);

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::string address_;
  std::map<std::string, Endpoint *> endpoints_;           // the live one per address
  std::vector<std::unique_ptr<Endpoint>> all_endpoints_;  // failed ones too: channels hold them
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::mutex mutex_;
  std::mutex ids_mutex_;
  uint64_t next_team_id_ = 1;
};

}  // namespace cohort::tl_ucx
