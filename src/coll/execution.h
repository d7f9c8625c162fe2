// What runs one rank's schedule (schedule.h) on one kind of memory: the executor contract.
// A transport provides channels (channel.h) to peers; an Execution moves a schedule's spans
// over them.  The host executor (coll/host_execution.h) runs schedules on memory the CPU can
// reach; a GPU executor runs them in kernels over the same schedules.
//
// Nonblocking: progress() does what it can and returns, so one thread can drive several
// executions (several collectives of a team, or several teams) and a blocking call is
// progress() under a back-off.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "coll/channel.h"
#include "coll/schedule.h"
#include "core/status.h"

namespace cohort::coll {

// The memory a schedule's spans point into.
struct Buffers {
  const void *src = nullptr;
  void *dst = nullptr;
  void *scratch = nullptr;   // Algorithm::scratch_count() elements
  std::vector<void *> user;  // Buffer::kUser spans (send/recv groups)
};

// The channels to and from one team rank (null for this rank and for peers the schedule never
// talks to).
struct PeerChannels {
  SendChannel *to = nullptr;
  RecvChannel *from = nullptr;
};

// The channels to a team's ranks, as an execution asks for them: a transport may make a
// peer's only when an execution first names it.
class Peers {
 public:
  virtual ~Peers() = default;
  // The channels to `peer` (both null for this rank and peers out of range).
  virtual PeerChannels channels(int peer) = 0;
};

// Peers from a list made up front (by team rank).
class PeerList final : public Peers {
 public:
  explicit PeerList(std::vector<PeerChannels> list) : list_(std::move(list)) {}
  PeerChannels channels(int peer) override {
    return peer >= 0 && peer < static_cast<int>(list_.size()) ? list_[peer] : PeerChannels{};
  }

 private:
  std::vector<PeerChannels> list_;
};

class Execution {
 public:
  virtual ~Execution() = default;
  // Starts (over) on `algorithm` with `buffers`; both outlive the run.
  virtual void start(const Algorithm &algorithm, const Buffers &buffers, cohort_dtype_t dtype) = 0;
  // COHORT_SUCCESS when the schedule has run to its end, COHORT_IN_PROGRESS while waiting on
  // peers, or an error: a channel's failure (naming the peer), or a schedule naming a peer
  // without a channel.
  virtual Status progress() = 0;
  // True when the last progress() moved bytes or finished a step (a waiter resets its back-off).
  virtual bool moved() const = 0;
  // What an unfinished run waits for: "step 3 of 6: receive from rank 2 (0 of 4096 bytes)".
  virtual std::string waiting() const = 0;
  // The ranks it waits on now (sorted, unique).
  virtual std::vector<int> waiting_on() const = 0;
};

}  // namespace cohort::coll
