// The transports of one team (team/transport_table.h gives the list; the team never names one):
// their parts of the connect and ready records, the channel to each peer (through the first
// transport that reaches it), and what running collectives need of them all: a lock, progress,
// sends in flight, and team-wide notices.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "coll/execution.h"
#include "tl/transport.h"

namespace cohort {

class TransportSet final : public coll::Peers {
 public:
  // Instantiates the registered transports for `view` (kept: transports read it later).
  void create(tl::TeamView view);
  // Bytes of the transports' parts of a connect record (the same on every rank).
  size_t record_bytes() const { return record_bytes_; }
  // This rank's parts, at `record`; the first failure is returned.
  Status post(char *record);
  // Every rank's record (`stride` bytes each, the transports' parts from `offset`): opens the
  // channels to the plan's peers; fails naming a peer that no transport reaches.
  Status connect(const char *records, size_t stride, size_t offset);
  // "COHORT_X=1 COHORT_Y=2": the settings every rank must share.
  std::string settings() const;
  // The ready phase: a word per transport from this rank; then every rank's
  // (words[r][t]: rank r, transport t).
  std::vector<uint64_t> ready_words() const;
  size_t size() const { return transports_.size(); }
  void ready(const std::vector<std::vector<uint64_t>> &words);

  // The channels to each team rank, for executions (coll::Peers): through the first transport
  // that reaches it, made on first use where the transport did not make them at connect (call
  // under a Lock).  Stable until release().
  coll::PeerChannels channels(int peer) override;
  // "ucx 2, shm 3": the peers each transport made channels to so far.
  std::string connected() const;

  // Held around every use of the channels: the transports' locks, in list order (no
  // allocation: a poll takes it every time).
  class Lock {
   public:
    explicit Lock(const TransportSet &set);

   private:
    static constexpr size_t kMaxLocks = 4;
    std::array<std::unique_lock<std::mutex>, kMaxLocks> locks_;
  };
  // Under a Lock:
  void progress();
  std::vector<int> busy_sends() const;
  void announce(const tl::Notice &notice);
  bool poll_notice(tl::Notice *out);

  // Closes every channel and transport (the set is empty afterwards).
  void release();

 private:
  tl::TeamView view_;
  std::vector<std::unique_ptr<tl::Transport>> transports_;
  std::vector<size_t> offsets_;            // of each transport's part in a record
  size_t record_bytes_ = 0;                // all parts
  std::vector<coll::PeerChannels> peers_;  // filled as executions ask
  std::vector<signed char> via_;           // by rank: the transport that reaches it
};

}  // namespace cohort
