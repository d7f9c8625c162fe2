// Runs one rank's schedule (coll::Algorithm) over byte channels to its peers, on host memory:
// sends stream spans into the peers' channels, receives copy or reduce straight out of the
// channels, local actions use the CPU reductions.  Nonblocking: progress() does what it can
// and returns, so one thread can drive several executions (channels of a collective, or
// several collectives) and a blocking call is progress() under a back-off.
#pragma once

#include <string>
#include <vector>

#include "coll/schedule.h"
#include "core/status.h"
#include "tl_host/channel.h"

namespace cohort::tl_host {

struct HostBuffers {
  const void *src = nullptr;
  void *dst = nullptr;
  void *scratch = nullptr;   // Algorithm::scratch_count() elements
  std::vector<void *> user;  // coll::Buffer::kUser spans (send/recv groups)
};

// The channels to and from each team rank (null for this rank and for peers the schedule
// never talks to).
struct PeerChannels {
  SendChannel *to = nullptr;
  RecvChannel *from = nullptr;
};

class Execution {
 public:
  Execution(const coll::Algorithm &algorithm, const HostBuffers &buffers, cohort_dtype_t dtype,
            const std::vector<PeerChannels> &peers);
  // Starts over on another schedule over the same peers, keeping the memory it grew.
  void restart(const coll::Algorithm &algorithm, const HostBuffers &buffers, cohort_dtype_t dtype);

  // COHORT_SUCCESS when the schedule has run to its end, COHORT_IN_PROGRESS while waiting on
  // peers, or an error (a schedule naming a peer without a channel).
  Status progress();
  // True when the last progress() moved bytes or finished a step (a waiter resets its back-off).
  bool moved() const { return moved_; }
  // What an unfinished execution waits for: "step 3 of 6: receive from rank 2 (0 of 4096
  // bytes)", for timeout messages.
  std::string waiting() const;
  // The ranks it waits on now (sorted, unique).
  std::vector<int> waiting_on() const;

 private:
  struct Pending {
    coll::Action action;
    size_t done = 0;   // bytes sent or received on the channel so far
    size_t total = 0;  // payload bytes
    size_t wire = 0;   // bytes on the channel, padded (a Reference's when by reference)
    // Single copy: the channel carries a Reference to the sender's span, which the receiver
    // reads directly; the send is complete once the receiver acknowledged it.
    bool by_reference = false;
    Reference reference{};
    size_t read = 0;          // receiver: payload bytes read through the reference
    uint64_t ack_target = 0;  // sender: the channel's acks() that frees the span (0: not yet)
    bool complete = false;
  };

  void start_step();
  size_t reference_min(int peer, bool sending) const;
  Status advance_send(Pending *p);
  Status advance_recv(Pending *p);
  Status read_reference(Pending *p, RecvChannel *from, char *dst, const char *operand);
  void receive_bytes(Pending *p, char *dst, const char *operand, const char *bytes, size_t n);
  void run_local_actions();
  char *address(const coll::Span &span) const;

  const coll::Algorithm *algorithm_;
  HostBuffers buffers_;
  cohort_dtype_t dtype_;
  size_t elem_;
  const std::vector<PeerChannels> &peers_;
  int step_ = -1;
  std::vector<coll::Action> actions_;
  std::vector<Pending> transfers_;
  std::vector<int> busy_to_, busy_from_;  // peers whose first unfinished transfer ran
  std::vector<char> bounce_;              // single-copy reductions read a piece here first
  bool moved_ = false;
};

// Bytes a message of `payload` bytes takes on a channel: padded to kChannelAlign, and never
// zero, so that an empty message (a barrier's signal) still arrives.
size_t wire_bytes(size_t payload);

}  // namespace cohort::tl_host
