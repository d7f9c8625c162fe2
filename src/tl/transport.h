// A transport: how this rank reaches some of its peers.  A team holds the list the registry
// (registry.h) gives it and never names one: each transport contributes a record to the
// connect phase's exchange, opens channels (coll/channel.h) to the peers it reaches, reports
// its failures through those channels (naming the peer), and carries team-wide notices (a
// rank aborted the team, or a collective failed on it) to the peers it reaches.
//
// Lifecycle, driven by the team:
//   record_bytes + post   connect phase, before the exchange: this rank's record
//   connect               after the exchange, with every rank's record: open channels
//   ready_word + ready    the ready phase: a word per rank (e.g. "single copy works here")
//   channels, progress, busy_sends, announce, poll_notice   while collectives run (channels to
//                         a peer the plan does not link to are made when first asked for)
// Errors from post() are this rank's status in the connect exchange; errors from connect()
// its status in the ready exchange: every rank of the team ends creation alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "coll/execution.h"
#include "core/status.h"

namespace cohort::tl {

// What a transport sees of its team (filled by the team before the connect phase).
struct TeamView {
  std::string name;  // the team's label, for logs
  int rank = 0;
  int size = 0;
  int node_count = 1;
  std::vector<int> node_of_rank;    // host index of each rank
  std::vector<int> local_rank;      // index among its host's ranks
  std::vector<int> pid;             // process id of each rank
  std::vector<int> cuda_device;     // each rank's CUDA device ordinal in its process, -1: none
  std::vector<uint64_t> gpu;        // each rank's GPU (gpu_of_uuid), 0: none
  std::vector<std::string> bus_id;  // each rank's GPU's PCI bus id, "0000:41:00.0"; "": none
  uint64_t host_id = 0;             // this rank's host identity
  // The ranks this rank's rings and trees link to (topo::linked_ranks): a transport connects
  // to these when the team is made, and to the others when a collective first names them.
  std::vector<int> plan_peers;
  // Names a rank in messages: "rank 3 (host node7, pid 4242)".
  std::function<std::string(int)> describe;

  // The `gpu` of the GPU with this UUID: a hash, never 0.
  static uint64_t gpu_of_uuid(const uint8_t uuid[16]);

  bool same_host(int r) const { return node_of_rank[r] == node_of_rank[rank]; }
  int local_size() const;
  // Team rank of each local rank of this host, in local-rank order.
  std::vector<int> local_ranks() const;
};

// Every rank's connect record; a transport reads its own part of each.
struct RecordTable {
  const char *base = nullptr;
  size_t stride = 0;  // bytes per rank
  size_t offset = 0;  // of this transport's part
  const void *of(int rank) const { return base + stride * rank + offset; }
};

// A team-wide notice (trivially copyable: it travels as bytes).
struct Notice {
  int32_t rank = -1;   // who sends it
  int32_t status = 0;  // COHORT_ERR_ABORTED for an abort, else the failure's status
  char detail[496] = {};

  static Notice make(int rank, Status status, const std::string &detail);
  std::string text() const;  // detail, terminated
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char *name() const = 0;

  // Bytes of this transport's part of every rank's connect record: the same on every rank
  // (a function of the view alone).
  virtual size_t record_bytes(const TeamView &team) const = 0;
  virtual Status post(const TeamView &team, void *record) = 0;
  virtual Status connect(const TeamView &team, const RecordTable &records) = 0;
  // Settings every rank must share because they decide what goes on the wire, as
  // "COHORT_NAME=value" text; the team compares their hash across ranks.
  virtual std::string settings() const { return ""; }

  // Whether this transport reaches `peer` (known after connect(), without making anything).
  virtual bool reaches(int peer) const = 0;
  // The channels to `peer`, made on first use where they were not made at connect(); both
  // null where this transport does not reach it.  Valid until the transport is destroyed.
  // Called with serial() held.
  virtual coll::PeerChannels channels(int peer) = 0;
  // How many peers this transport made channels to so far (for the log and tests).
  virtual int peers_connected() const = 0;

  virtual uint64_t ready_word() const { return 0; }
  virtual void ready(const TeamView &team, const std::vector<uint64_t> &words) {
    (void)team, (void)words;
  }

  // A lock to hold around every use of this transport's channels (UCX's worker is serialised);
  // null when none is needed.
  virtual std::mutex *serial() { return nullptr; }
  // Called on every poll of a running collective (UCX moves bytes only inside progress).
  virtual void progress() {}
  // Appends the ranks this rank's sends still wait on: a collective completes only when none.
  virtual void busy_sends(std::vector<int> *ranks) const { (void)ranks; }

  // Tells every peer this transport reaches (best effort, bounded in time); callers hold
  // serial().  poll_notice takes one notice from a peer if one arrived.
  virtual void announce(const Notice &notice) { (void)notice; }
  virtual bool poll_notice(Notice *out) {
    (void)out;
    return false;
  }
};

}  // namespace cohort::tl
