// A one-way byte stream between two ranks, as a transport provides it to an execution (see
// execution.h): the sender writes into space the channel lends it, the receiver reads (or
// reduces) straight out of what has arrived.  Shared-memory mailboxes implement it within a
// host (tl_host), UCX tag messages between hosts (tl_ucx).
//
// Contract: one writer and one reader per channel; bytes arrive in order; the executor pads
// every message to a multiple of kChannelAlign bytes, so every message starts aligned and no
// element (at most 8 bytes) is ever split by the end of a lent region.
//
// Two ways around the stream for large messages, each used when both ends say so for the
// message's size (both ends of a message see the same size and the same threshold, so they
// agree without asking): single copy within a host (the stream carries a Reference, the
// receiver reads the sender's memory), and direct messages between hosts (the transport moves
// the sender's span into the receiver's span, or its own buffers for a reduction, in
// fragments, many in flight: no copy on either side).  Direct messages of a channel keep their
// order among themselves; the executor runs one at a time per channel and direction.  A channel
// that broke (its peer unreachable, a transfer failed) says so through failure(): an execution asks
// when a transfer cannot move, so a broken peer ends the collective with the transport's reason at
// once instead of a timeout.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace cohort::coll {

constexpr size_t kChannelAlign = 8;

class SendChannel {
 public:
  virtual ~SendChannel() = default;
  // Contiguous space to write now: sets *bytes (0 when full: try again later).
  virtual void *reserve(size_t *bytes) = 0;
  // Publishes `bytes` of the reserved space (a multiple of kChannelAlign).
  virtual void commit(size_t bytes) = 0;

  // Single copy (ranks of one host): a message of at least reference_min() bytes (0: never)
  // goes as a reference to the sender's memory, which the receiver reads directly; the sender
  // keeps its bytes unchanged until acks() reaches the count of references sent (in order).
  virtual size_t reference_min() const { return 0; }
  virtual uint64_t acks() const { return 0; }
  // Counts a reference just sent; returns the acks() value at which it has been read.
  virtual uint64_t note_reference() { return 0; }

  // Direct messages: one of at least direct_min() bytes (0: never) goes by start_direct(),
  // which hands the transport `bytes` at `data` (unchanged until direct_sent() says it left).
  virtual size_t direct_min() const { return 0; }
  virtual Status start_direct(const void *data, size_t bytes) {
    (void)data, (void)bytes;
    return fail(COHORT_ERR_INTERNAL, "this channel sends no direct messages");
  }
  // Moves the direct message on; true once all of it left (then the next may start).
  virtual bool direct_sent() { return true; }

  // COHORT_SUCCESS while the channel works; once broken, its failure (the detail names the
  // transport, the peer and the reason).
  virtual Status failure() const { return COHORT_SUCCESS; }
};

class RecvChannel {
 public:
  virtual ~RecvChannel() = default;
  // Contiguous bytes that have arrived: sets *bytes (0 when none yet).
  virtual const void *peek(size_t *bytes) = 0;
  // Frees `bytes` read from the front (a multiple of kChannelAlign).
  virtual void consume(size_t bytes) = 0;

  // The receiving end of single copy: the same reference_min() as the sender's end; copies
  // `bytes` from `remote` (the sender's address) to `local`; ack() says one reference is read.
  virtual size_t reference_min() const { return 0; }
  virtual Status read_remote(const void *remote, void *local, size_t bytes) {
    (void)remote, (void)local, (void)bytes;
    return fail(COHORT_ERR_INTERNAL, "this channel reads no references");
  }
  virtual void ack() {}

  // The receiving end of a direct message, of the same direct_min() as the sender's end:
  // start_direct() expects `bytes`, landing in `landing` where given (a plain receive's
  // destination: nothing to copy), else in the channel's own buffers (a reduction reads its
  // destination while the message arrives).  peek_direct() lends the next piece that has
  // landed, in order (inside `landing` when given; 0 bytes: none yet); consume_direct() gives
  // it back, whole.
  virtual size_t direct_min() const { return 0; }
  virtual Status start_direct(void *landing, size_t bytes) {
    (void)landing, (void)bytes;
    return fail(COHORT_ERR_INTERNAL, "this channel receives no direct messages");
  }
  virtual const void *peek_direct(size_t *bytes) {
    *bytes = 0;
    return nullptr;
  }
  virtual void consume_direct(size_t bytes) { (void)bytes; }

  // As SendChannel::failure().
  virtual Status failure() const { return COHORT_SUCCESS; }
};

// What a reference message carries (its wire size is a multiple of kChannelAlign).
struct Reference {
  uint64_t address;
  uint64_t bytes;
};

}  // namespace cohort::coll
