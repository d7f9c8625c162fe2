// The host executor: runs one rank's schedule (coll::Algorithm) on memory the CPU can reach,
// over byte channels to its peers: sends stream spans into the peers' channels, receives copy
// or reduce straight out of the channels, local actions use the CPU reductions.
#pragma once

#include <string>
#include <vector>

#include "coll/execution.h"

namespace cohort::coll {

// Runs over `peers` (by team rank), which outlive it; start() may be called again (a blocking
// call reuses its execution and the memory it grew).
class HostExecution final : public Execution {
 public:
  explicit HostExecution(Peers &peers) : peers_(peers) {}
  void start(const coll::Algorithm &algorithm, const Buffers &buffers,
             cohort_dtype_t dtype) override;
  Status progress() override;
  bool moved() const override { return moved_; }
  std::string waiting() const override;
  std::vector<int> waiting_on() const override;

 private:
  struct Pending {
    coll::Action action;
    size_t done = 0;   // bytes sent or received on the channel so far
    size_t total = 0;  // payload bytes
    size_t wire = 0;   // bytes on the channel, padded (a Reference's when by reference)
    // Single copy: the channel carries a Reference to the sender's span, which the receiver
    // reads directly; the send is complete once the receiver acknowledged it.
    bool by_reference = false;
    coll::Reference reference{};
    size_t read = 0;          // receiver: payload bytes read through the reference
    uint64_t ack_target = 0;  // sender: the channel's acks() that frees the span (0: not yet)
    // Direct (between hosts): the span goes as a message of its own around the stream.
    bool direct = false;
    bool started = false;  // start_direct() was called
    bool complete = false;
  };

  void start_step();
  struct Thresholds {
    size_t reference = 0;
    size_t direct = 0;
  };
  Thresholds thresholds(int peer, bool sending) const;
  Status advance_send(Pending *p);
  Status advance_recv(Pending *p);
  Status read_reference(Pending *p, RecvChannel *from, char *dst, const char *operand);
  Status send_direct(Pending *p, SendChannel *to);
  Status receive_direct(Pending *p, RecvChannel *from, char *dst, const char *operand);
  void receive_bytes(Pending *p, char *dst, const char *operand, const char *bytes, size_t n);
  void run_local_actions();
  char *address(const coll::Span &span) const;

  Status broken(const Pending &p, Status channel_failure) const;

  const coll::Algorithm *algorithm_ = nullptr;
  Buffers buffers_;
  cohort_dtype_t dtype_ = COHORT_UINT8;
  size_t elem_ = 1;
  Peers &peers_;
  int step_ = -1;
  std::vector<coll::Action> actions_;
  std::vector<Pending> transfers_;
  std::vector<int> busy_to_, busy_from_;  // peers whose first unfinished transfer ran
  std::vector<char> bounce_;              // single-copy reductions read a piece here first
  bool moved_ = false;
};

// Bytes a message of `payload` bytes takes on a channel: padded to coll::kChannelAlign, and
// never zero, so that an empty message (a barrier's signal) still arrives.
size_t wire_bytes(size_t payload);

}  // namespace cohort::coll
